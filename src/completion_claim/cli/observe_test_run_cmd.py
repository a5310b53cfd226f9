"""``claim observe test-run``: run the tests and record what the run showed as test_run evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..claimfile import read_claim
from ..errors import UsageError
from ..observe import test_run
from ..observe._common import Observation, observer_options, settings_from
from ..observe.runners.pytest import report_name
from ..observe.runners.results import COUNT_KEYS
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
    help="JUnit XML report the command writes (relative to --cwd); not for pytest, which "
    "reports to the observer through its own plugin.",
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
@click.option(
    "--python",
    metavar="PATH",
    help="Interpreter that runs `python ...` and `pytest ...` (default: the observer's own); "
    "never one inside the workspace.",
)
@click.option(
    "--toolchain",
    metavar="PATH",
    help="The toolchain another runner runs with (node, go, cargo, java: the program or its "
    "folder; default: found on PATH); never one inside the workspace.",
)
@click.option(
    "--env",
    "env_names",
    multiple=True,
    metavar="NAME",
    help="Pass this variable of the observer's environment to the run (redacted from the "
    "output). Repeatable.",
)
@click.option(
    "--trusted-ref",
    metavar="COMMIT",
    help="The full id of a commit the operator trusts (e.g. the base branch's, resolved by CI): "
    "protected test paths are run exactly as in it. A branch name is refused: the agent moves it.",
)
@click.option(
    "--protect",
    multiple=True,
    metavar="GLOB",
    help="Further protected paths (relative to the repository root). Repeatable.",
)
@click.option(
    "--repeat-test",
    "repeat_tests",
    multiple=True,
    metavar="NAME",
    help="A test run a second time, in reverse order, after the others (pytest, unittest): "
    "a result that depends on how often or in what order the code ran fails once. Repeatable.",
)
@click.option(
    "--hidden-tests",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="A folder of the operator's, outside the workspace, whose files are laid into the "
    "run's copy at the same paths (tests the agent never sees).",
)
@click.option("--network", is_flag=True, help="Let the run use the network.")
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run without bubblewrap (recorded as details.sandbox: none): the tests can then read "
    "what the observer can.",
)
@observer_options
def test_run_command(
    path: str,
    command: tuple[str, ...],
    junit: str | None,
    require_tests: tuple[str, ...],
    timeout_s: float,
    cwd: str,
    python: str | None,
    toolchain: str | None,
    env_names: tuple[str, ...],
    trusted_ref: str | None,
    protect: tuple[str, ...],
    repeat_tests: tuple[str, ...],
    hidden_tests: Path | None,
    network: bool,
    no_sandbox: bool,
    **options: Any,
) -> int:
    """Run CMD (no shell) after `--` and record test_run evidence in the claim in PATH.

    \b
    The run gets a fresh copy of the workspace's listed files, which must be as the claim
    records them (run `claim capture-git` first), in a bubblewrap sandbox: no network, no
    access to the workspace or the signing key, every process killed when it ends.
    Observed: the exit code, and the counts and each test's outcome from the runner's own
    report, requested by the observer (pytest's through the observer's plugin; node --test,
    vitest, jest, mocha, go test, cargo test and others: see docs/spec.md), or the --junit
    report; exit code only when the run reported none, or ended before its session did.
    Expected: exit code 0, no failed or errored test when the runner reported counts, and
    `passed` for each --require-test.
    The evidence is refused (exit 5) when the sandbox is missing, the files are not as the
    claim records them, the command is not found, times out, or writes an unreadable report.

    \b
    Example: claim observe test-run claim.json --trusted-ref "$BASE_SHA" -- python -m pytest -q
    """
    settings = settings_from(path, options)
    if python is not None and toolchain is not None:
        raise UsageError("--python and --toolchain: give one (--python for Python runners)")
    request = test_run.prepare(
        command, Path(cwd), junit, require_tests, timeout_s, excluded=[Path(path)],
        python=python or toolchain, env_names=env_names, sandboxed=not no_sandbox, network=network,
        trusted_ref=trusted_ref, protect=protect, hidden_tests=hidden_tests,
        repeat=tuple(report_name(name) for name in repeat_tests),
        secret_files=() if settings.sign_key_path is None else (settings.sign_key_path,),
    )  # fmt: skip

    def observe() -> Observation:
        _, claim = read_claim(path)
        return test_run.observe(request, claim.mutations)

    return record_and_report(
        settings, test_run.CHECK_TYPE, observe, request.target, request.expected,
        describe=_summary,
    )  # fmt: skip


def _summary(item: dict[str, Any]) -> str:
    observed = item["observed_value"]
    counts = ", ".join(f"{observed[key]} {key}" for key in COUNT_KEYS.values() if key in observed)
    summary = f"{test_run.CHECK_TYPE} exit code {observed['exit_code']}"
    return summary + (f", {counts}" if counts else "")
