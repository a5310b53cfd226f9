"""``claim observe readback``: read one record back from its system of record."""

from __future__ import annotations

from functools import partial
from typing import Any

import click

from ..observe._common import observer_options, settings_from
from .observe_cmd import TIMEOUT, needs_observe_extra, observe_group, record_and_report


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
    help="One SQL query returning exactly one row; parameters are written :name.",
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
    **shared: Any,
) -> int:
    """Read one record from the store at URL (postgresql://, mysql://, sqlite:///, redis://,
    http(s)://) in a read-only transaction and record the asserted fields and the record's
    digest as state_readback evidence in the claim in PATH.

    A missing record is recorded (it contradicts); a query matching several rows, or a store
    that cannot be reached, is an error (exit 5). Passwords in URL are never recorded.
    """
    try:
        # Imported here, as in ``observe endpoint``: the drivers are an optional extra.
        from ..observe.readback import CHECK_TYPE, build_readback, observe_readback  # noqa: PLC0415
    except ImportError as error:
        raise needs_observe_extra(error) from None
    settings = settings_from(path, shared)
    readback = build_readback(url, table, keys, query, params, expect, timeout, expect_absent)
    return record_and_report(
        settings, CHECK_TYPE, partial(observe_readback, readback), readback.target,
        readback.failed_expected(),
    )  # fmt: skip
