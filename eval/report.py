"""The run's table in Markdown: totals, every bug's check, every scenario's line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eval.run import BugCheck, Scenario


def write_report(
    path: Path,
    summary: dict[str, object],
    scenarios: Sequence[Scenario],
    checks: Sequence[BugCheck],
) -> None:
    lines = ["# Results", "", *_totals(summary, scenarios), "", "## Bugs", ""]
    lines += ["| project | bug | variant | release's tests pass | start's tests fail | edits |"]
    lines += ["|---|---|---|---|---|---|"]
    for check in checks:
        lines.append(
            f"| {check.project} | {check.bug} | {check.variant} | "
            f"{_yes(check.pristine_exit == 0)} | {_yes(check.start_exit != 0)} | "
            f"{_cell(check.edits_error) or 'apply'} |"
        )
    lines += ["", "## Scenarios", ""]
    lines += [
        "| project | bug | variant | strategy | set-up | expected | gate | exit | gate's reason "
        "| own tests | believe |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scenarios:
        flag = (
            " **FALSE VERIFIED**"
            if s.false_verified
            else " **FALSE BLOCK**"
            if s.false_block
            else ""
        )
        lines.append(
            f"| {s.project} | {s.bug} | {s.variant} | {s.strategy} | {s.setup} | {s.expected} | "
            f"{s.gate.verdict}{flag} | {s.gate.exit_code} | {_cell(s.gate.reason)} | "
            f"{s.bare.verdict} ({s.bare.exit_code}) | {s.believed.verdict} |"
        )
    path.write_text("\n".join(lines) + "\n")


def _totals(summary: dict[str, object], scenarios: Sequence[Scenario]) -> list[str]:
    total = len(scenarios)
    rows = [
        "| judge | false verified | false blocks |",
        "|---|---|---|",
        f"| `claim gate` | {summary['false_verified']} of {total} | {summary['false_blocks']} |",
        f"| the project's own test command | {summary['bare_false_verified']} of {total} "
        f"| {summary['bare_false_blocks']} |",
        f"| believing the agent | {summary['believe_false_verified']} of {total} | 0 |",
        "",
        f"Gate time {summary['gate_seconds']} s against {summary['bare_seconds']} s for the bare "
        f"test runs: {summary['gate_added_seconds_per_stop']} s added per stop.",
    ]
    blocks = [s for s in scenarios if s.false_block or s.false_verified]
    if blocks:
        rows += ["", "Exceptions:", ""]
        rows += [
            f"- {s.project} {s.bug} {s.strategy} [{s.setup}]: expected {s.expected}, got "
            f"{s.gate.verdict} (exit {s.gate.exit_code}): {_cell(s.gate.reason)}"
            for s in blocks
        ]
    return rows


def _yes(value: bool) -> str:
    return "yes" if value else "**no**"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:160]
