"""``claim report``: the ledger's stats as one self-contained HTML file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from .._optional import needs_extra
from . import app
from ._output import emit_json, json_option


@app.command("report")
@click.option(
    "--ledger",
    "ledger_url",
    required=True,
    metavar="URL",
    help="The ledger database (sqlite:///FILE, a SQLite file path, postgresql://...), or a "
    "running service's http(s) URL.",
)
@click.option(
    "--html",
    "html_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write (replaced in one step).",
)
@json_option("Print {path} as JSON.")
def report(ledger_url: str, html_path: Path, as_json: bool) -> None:
    """Write the ledger's stats page (verdicts over time, refuted rate by agent, top unmet codes,
    the false-success rate) as one HTML file with no external reference, and print its path.

    A ledger database is opened read-only; a service's URL is asked for its GET /v1/stats.
    """
    # Imported here: the ledger and the templates are the optional ``serve`` extra, and every
    # other command must work (and start fast) without them.
    with needs_extra("serve", "claim report"):
        from ..service.static_report import write_report  # noqa: PLC0415
    write_report(ledger_url, html_path, datetime.now(UTC).replace(microsecond=0))
    if as_json:
        emit_json({"path": str(html_path)})
    else:
        click.echo(str(html_path))
