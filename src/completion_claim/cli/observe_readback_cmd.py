"""``claim observe readback``: read one record back from its system of record."""

from __future__ import annotations

from functools import partial
from typing import Any

import click

from ..observe._common import observer_options, settings_from
from .observe_cmd import TIMEOUT, observe_group, record_and_report


@observe_group.command("readback")
@click.argument("path")
@click.argument("url")
@click.option("--table", help="SQL table (NAME or SCHEMA.NAME); goes with --key COL=VALUE.")
@click.option(
    "--key",
    "keys",
    multiple=True,
    metavar="COL=VALUE|REDIS_KEY",
    help="SQL: the key column and its value (repeat for a composite key); Redis: the key.",
)
@click.option(
    "--query",
    metavar="SQL",
    help="One plain SELECT returning exactly one row; parameters are written :name. No "
    "comments, INTO, locking clause or writing CTE; functions only from the store's allow-list "
    "(docs/spec.md, section 7.3).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="Value of the query's :NAME parameter (bound, never formatted in). Repeatable.",
)
@click.option(
    "--expect",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Expected value of a field of the record. An unquoted VALUE takes the field's type; "
    "'\"...\"' is a string. Repeatable; at least one.",
)
@click.option(
    "--expect-absent",
    is_flag=True,
    help="Assert that the record does not exist (after a deletion) instead of --expect.",
)
@click.option("--timeout", type=TIMEOUT, default=10.0, show_default=True, help="Seconds to wait.")
@click.option(
    "--allow-privileged-role",
    is_flag=True,
    help="Read as a role that can do more than read (a superuser, or one that can write to the "
    "table); recorded as details.privileged_role. Without it such a role is refused.",
)
@click.option(
    "--allow-view",
    "allow_views",
    multiple=True,
    metavar="NAME",
    help="Let the table NAME (as --table or the query writes it) be a view, or a MariaDB table "
    "with columns computed when read: without it a readback refuses any relation but a table "
    "that holds its values. Recorded as details.views. Repeatable.",
)
@observer_options
def readback_command(
    path: str,
    url: str,
    table: str | None,
    keys: tuple[str, ...],
    query: str | None,
    params: tuple[str, ...],
    expect: tuple[str, ...],
    expect_absent: bool,
    timeout: float,
    allow_privileged_role: bool,
    allow_views: tuple[str, ...],
    **shared: Any,
) -> int:
    """Read one record from the store at URL (postgresql://, mysql://, sqlite:///, redis://,
    http(s)://) in a read-only transaction and record the asserted fields and the record's
    digest as state_readback evidence in the claim in PATH.

    A missing record is recorded (it contradicts); a query matching several rows, a field the
    record does not have, a relation read that is not a table (a view, a foreign table...) or
    whose rows depend on who reads it (row-level security), or a store that cannot be reached,
    is an error (exit 5). A query that is not a plain SELECT, or a SQL role that can do more than
    read, is refused (exit 4).
    Passwords and secret options in URL are never recorded or printed.
    """
    # Imported here: only the store's own driver is needed, and build_readback names it.
    from ..observe.readback import CHECK_TYPE, build_readback, observe_readback  # noqa: PLC0415

    settings = settings_from(path, shared)
    readback = build_readback(
        url, table, keys, query, params, expect, timeout, expect_absent, allow_privileged_role,
        allow_views,
    )  # fmt: skip
    return record_and_report(
        settings, CHECK_TYPE, partial(observe_readback, readback), readback.target,
        readback.failed_expected(),
    )  # fmt: skip
