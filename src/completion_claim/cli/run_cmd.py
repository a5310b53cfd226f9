"""``claim run -- AGENT COMMAND...``: gate any command-line agent, for headless and CI use.

Baselines first, then the agent (no shell: its argv as given; its output passed through), then
the gate over what it left, exit code = the verdict's. With ``--retries N`` the agent is run
again, at most N times, while the verdict is not verified; it learns why from the environment
variable ``CLAIM_FEEDBACK`` (and, with ``--feedback-arg``, from one extra final argument, for
agents that only read their command line, e.g. ``aider --message``).

When AGENT is a harness whose hooks are installed for this repository (or its user), and no stop
hook reached the gate while it ran, that is said: its hooks did not load (the gate still judges
what it left, here).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

import click

from .._files import read_limited
from ..errors import UsageError
from ..gate.config import find_config, load_config
from ..gate.hooks import EXECUTABLES, STOPS_ENV
from ..gate.install import SCOPES, target
from ..gate.loading import Place, installed_hooks
from ..gate.run import GateResult, run_gate, start_gate
from . import app
from ._output import quoting_agent_text

KEPT_OUTPUT_BYTES = 256 * 1024
"""Only the end of the agent's stdout is kept: its final message is the last block."""

MAX_OUTCOME_FILE_BYTES = 64 * 1024

FEEDBACK_ENV = "CLAIM_FEEDBACK"
ATTEMPT_ENV = "CLAIM_ATTEMPT"


@app.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="The operator's claim.toml (default: the first found from the current folder, the "
    "work tree, up to the root).",
)
@click.option(
    "--retries",
    type=click.IntRange(0, 20),
    default=0,
    show_default=True,
    help="Run the agent again, with the gate's reason, while the verdict is not verified.",
)
@click.option(
    "--outcome-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read the agent's final message here instead of the last block of its stdout.",
)
@click.option(
    "--feedback-arg",
    is_flag=True,
    help=f"On a retry, also append the gate's reason as the agent's last argument "
    f"(it is always in ${FEEDBACK_ENV}).",
)
@click.argument("agent", nargs=-1, required=True, type=click.UNPROCESSED)
def run_command(
    config_path: Path | None,
    retries: int,
    outcome_file: Path | None,
    feedback_arg: bool,
    agent: tuple[str, ...],
) -> int:
    """Take baselines, run AGENT, gate what it did; exit 0 verified, 1 unverified, 2 refuted."""
    repo = Path.cwd()
    found = config_path if config_path is not None else find_config(repo)
    if found is None:
        raise UsageError(f"no claim.toml in {repo} or its parents (give --config)")
    config = load_config(found, os.environ)
    session = f"run-{uuid.uuid4().hex}"
    start_gate(config, repo, session=session)
    feedback = ""
    attempts = retries + 1
    gated = _gated_harness(agent[0], repo)
    with tempfile.TemporaryDirectory(prefix="claim-run-") as scratch:
        stops = Path(scratch) / "stops"
        for attempt in range(1, attempts + 1):
            argv = list(agent) + ([feedback] if feedback and feedback_arg else [])
            env = {**os.environ, ATTEMPT_ENV: str(attempt), FEEDBACK_ENV: feedback,
                   STOPS_ENV: str(stops)}  # fmt: skip
            stops.unlink(missing_ok=True)
            status, output = run_agent(argv, env)
            if status != 0:
                _say(f"the agent exited with status {status}; judging what it left")
            if gated is not None and not stops.exists():
                _say(
                    f"{Path(agent[0]).name} stopped and no stop hook reached the gate: its "
                    f"{gated} hooks did not run (`claim hooks check --harness {gated}` says "
                    "why); the gate judges what it left here"
                )
            outcome = _outcome(outcome_file, output)
            result = run_gate(config, repo, outcome=outcome, session=session)
            if result.verdict.state == "verified" or attempt == attempts:
                break
            feedback = result.agent_reason or result.verdict.reason
            _say(
                f"attempt {attempt} of {attempts}: {result.verdict.state}; running the agent again"
            )
            _say(feedback)
    _report(result, attempt)
    return result.exit_code


def _gated_harness(executable: str, repo: Path) -> str | None:
    """The harness ``executable`` is, when the gate's hooks are installed for it here."""
    harness = EXECUTABLES.get(Path(executable).name)
    if harness is None:
        return None
    spec = target(harness)
    for scope in SCOPES:
        settings = spec.settings_path(scope, repo, Path.home(), os.environ)
        if installed_hooks(Place(spec, scope, settings, repo, Path.home(), os.environ)):
            return harness
    return None


def run_agent(argv: Sequence[str], env: dict[str, str]) -> tuple[int, str]:
    """Run the agent with its stdout passed through and its tail kept; stderr and stdin are
    its own."""
    try:
        process = subprocess.Popen(list(argv), stdout=subprocess.PIPE, env=env)
    except OSError as exc:
        raise UsageError(f"cannot run the agent {argv[0]!r}: {exc.strerror or exc}") from None
    assert process.stdout is not None
    sink = sys.stdout.buffer
    kept = bytearray()
    while chunk := os.read(process.stdout.fileno(), 65536):
        sink.write(chunk)
        sink.flush()
        kept += chunk
        del kept[:-KEPT_OUTPUT_BYTES]
    return process.wait(), kept.decode("utf-8", errors="replace")


def final_message(output: str) -> str:
    """The last block of non-blank lines: where agents put their closing summary."""
    blocks = [block.strip() for block in re.split(r"\n[ \t]*\n", output)]
    return next((block for block in reversed(blocks) if block), "")


def _outcome(outcome_file: Path | None, output: str) -> str:
    if outcome_file is None:
        return final_message(output)
    if not outcome_file.is_file():
        _say(f"the agent left no {outcome_file}; judging with an empty final message")
        return ""
    return read_limited(str(outcome_file), MAX_OUTCOME_FILE_BYTES).decode("utf-8", "replace")


def _report(result: GateResult, attempts: int) -> None:
    with quoting_agent_text(err=True):
        if result.report:
            click.echo(result.report, err=True)
        tries = f"after {attempts} attempt{'s' if attempts > 1 else ''}"
        _say(f"{result.verdict.state} {tries}; recorded at {result.claim_path}")
        if result.verdict.state != "verified":
            _say(result.agent_reason or result.verdict.reason)


def _say(line: str) -> None:
    click.echo(f"claim run: {' '.join(line.split())}", err=True)
