"""``claim observe dom`` (experimental): a rendered page, read in a browser the agent does not
own."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import click

from .._optional import require
from ..observe._common import observer_options, settings_from
from .observe_cmd import TIMEOUT, observe_group, record_and_report


@observe_group.command("dom")
@click.argument("path")
@click.argument("url")
@click.option(
    "--locator",
    required=True,
    metavar="SELECTOR",
    help="Playwright selector of the element(s) to read: css=..., text=... or role=... only.",
)
@click.option(
    "--expect-text",
    metavar="T",
    help="The whole text a person sees of the element (whitespace collapsed).",
)
@click.option(
    "--expect-includes",
    multiple=True,
    metavar="T",
    help="A string the element's text must include (must-include). Repeatable.",
)
@click.option("--expect-attr", metavar="NAME=VALUE", help="The element's attribute value.")
@click.option(
    "--expect-count",
    type=click.IntRange(min=0),
    help="How many elements the locator matches that a person can see.",
)
@click.option(
    "--expect-url-path",
    metavar="P",
    help="The path (and query) the page must end up at; default: the path of URL.",
)
@click.option("--wait-for", metavar="SELECTOR", help="Wait for this element before reading.")
@click.option(
    "--prep",
    multiple=True,
    metavar="click:SELECTOR",
    help="An action before reading (click:SELECTOR only). Repeatable, in order.",
)
@click.option(
    "--storage-state",
    metavar="FILE",
    help="A Playwright storage state (cookies) to log in with; never the agent's browser.",
)
@click.option(
    "--allow-host",
    multiple=True,
    metavar="H",
    help="Another host the page may load from or go to. Repeatable.",
)
@click.option("--timeout", type=TIMEOUT, default=10.0, show_default=True, help="Seconds to wait.")
@click.option(
    "--chromium",
    metavar="FILE",
    help="The Chromium to drive (default: $CLAIM_CHROMIUM, else /usr/bin/chromium).",
)
@observer_options
def dom_command(
    path: str,
    url: str,
    locator: str,
    expect_text: str | None,
    expect_includes: tuple[str, ...],
    expect_attr: str | None,
    expect_count: int | None,
    expect_url_path: str | None,
    wait_for: str | None,
    prep: tuple[str, ...],
    storage_state: str | None,
    allow_host: tuple[str, ...],
    timeout: float,
    chromium: str | None,
    **shared: Any,
) -> int:
    """Load URL in a fresh browser context, wait for the expectations, and record what a person
    can see of the located element (whether it is visible, its text, attribute, the count of
    visible elements, the page's final address, a digest of the element's HTML and a screenshot
    saved beside the claim) as dom_assertion evidence in the claim in PATH. An element no person
    can see does not count. Experimental: a policy may switch it off (experimental_checks:
    false).

    Where the state lives in a database or an API, a readback of it is stronger proof.
    """
    require("playwright.sync_api", extra="browser", for_what="claim observe dom")
    from ..observe.dom import CHECK_TYPE, dom_check, observe_dom  # noqa: PLC0415

    settings = settings_from(path, shared)
    check = dom_check(
        url,
        locator,
        expect_text=expect_text,
        expect_includes=expect_includes,
        expect_attr=expect_attr,
        expect_count=expect_count,
        expect_address=expect_url_path,
        wait_for=wait_for,
        prep=prep,
        storage_state=storage_state,
        allow_hosts=allow_host,
        timeout=timeout,
        chromium=chromium,
    )
    folder = Path(path).resolve().parent
    return record_and_report(
        settings, CHECK_TYPE, partial(observe_dom, check, folder), check.target, check.expected()
    )
