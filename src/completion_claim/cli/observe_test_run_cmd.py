"""``claim observe test-run``: run the tests and record what the run showed as test_run evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..observe import test_run
from ..observe._common import observer_options, settings_from
from .observe_cmd import observe_group, record_and_report

DEFAULT_TIMEOUT_S = 600.0


@observe_group.command("test-run")
@click.argument("path")
@click.argument(
    "command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS]..."
)
@click.option(
    "--junit",
    metavar="FILE",
    help="JUnit XML report the command writes (relative to --cwd); not for pytest, which the "
    "observer asks for its own report.",
)
@click.option(
    "--require-test",
    "require_tests",
    multiple=True,
    metavar="NAME",
    help="A test that must have passed: pytest node id (tests/test_x.py::test_a) or the "
    "report's classname::name. Repeatable.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    metavar="S",
    help="Seconds before the run (and everything it started) is killed.",
)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False),
    default=".",
    show_default=True,
    metavar="DIR",
    help="Folder to run the command in.",
)
@observer_options
def test_run_command(
    path: str,
    command: tuple[str, ...],
    junit: str | None,
    require_tests: tuple[str, ...],
    timeout_s: float,
    cwd: str,
    **options: Any,
) -> int:
    """Run CMD (no shell) after `--` and record test_run evidence in the claim in PATH.

    \b
    Observed: the exit code, and from the JUnit report the counts and each test's outcome.
    Expected: exit code 0, and `passed` for each --require-test.
    The evidence is refused (exit 5) when the command is not found, times out, writes no
    fresh report, or when the workspace changed during the run.

    \b
    Example: claim observe test-run claim.json -- python -m pytest -q
    """
    settings = settings_from(path, options)
    request = test_run.prepare(
        command, Path(cwd), junit, require_tests, timeout_s, excluded=[Path(path)]
    )
    return record_and_report(
        settings, test_run.CHECK_TYPE, lambda: test_run.observe(request), request.target,
        request.expected, describe=_summary,
    )  # fmt: skip


def _summary(item: dict[str, Any]) -> str:
    observed = item["observed_value"]
    counts = ", ".join(
        f"{observed[key]} {key}" for key in test_run.COUNT_KEYS.values() if key in observed
    )
    summary = f"{test_run.CHECK_TYPE} exit code {observed['exit_code']}"
    return summary + (f", {counts}" if counts else "")
