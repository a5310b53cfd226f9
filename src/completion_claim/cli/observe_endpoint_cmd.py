"""``claim observe endpoint``: one live request against the deployed thing."""

from __future__ import annotations

from functools import partial
from typing import Any

import click

from ..observe._common import observer_options, settings_from
from ..observe.values import assignments
from .observe_cmd import TIMEOUT, observe_group, record_and_report


@observe_group.command("endpoint")
@click.argument("path")
@click.argument("url")
@click.option("--method", default="GET", show_default=True, help="HTTP method.")
@click.option(
    "--expect-status",
    type=click.IntRange(100, 599),
    default=200,
    show_default=True,
    help="Expected status code (never enough on its own).",
)
@click.option(
    "--expect-json",
    multiple=True,
    metavar="POINTER=VALUE",
    help="Expected value at an RFC 6901 pointer of the JSON body, e.g. /build=4f2c1e. "
    "An unquoted VALUE takes the type of the value found; '\"...\"' is a string. Repeatable.",
)
@click.option(
    "--expect-header",
    multiple=True,
    metavar="NAME=VALUE",
    help="Expected response header value (exact text). Repeatable.",
)
@click.option("--timeout", type=TIMEOUT, default=10.0, show_default=True, help="Seconds to wait.")
@click.option(
    "--follow-redirects", is_flag=True, help="Follow redirects (default: observe the 3xx)."
)
@observer_options
def endpoint_command(
    path: str,
    url: str,
    method: str,
    expect_status: int,
    expect_json: tuple[str, ...],
    expect_header: tuple[str, ...],
    timeout: float,
    follow_redirects: bool,
    **shared: Any,
) -> int:
    """Request URL once and record its status, the asserted headers and JSON values, and the
    body's digest, as endpoint_health evidence in the claim in PATH.

    Assert something the deploy changes (a build id, a commit): a check that asserts only the
    status is refused, since it would pass before the deploy too.
    """
    # Imported here: httpx is the optional ``observe`` extra, and every other command must work
    # (and start fast) without it.
    from ..observe.endpoint import CHECK_TYPE, endpoint_check, observe_endpoint  # noqa: PLC0415

    settings = settings_from(path, shared)
    check = endpoint_check(
        url,
        method,
        expect_status,
        assignments(expect_json, "--expect-json"),
        assignments(expect_header, "--expect-header"),
        timeout,
        follow_redirects,
    )
    return record_and_report(
        settings, CHECK_TYPE, partial(observe_endpoint, check), check.target,
        check.failed_expected(),
    )  # fmt: skip
