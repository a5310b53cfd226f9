"""``claim init`` and ``claim gate``: set a repository up, and gate one change."""

from __future__ import annotations

import os
import shlex
import socket
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._files import read_limited, write_atomic
from .._json import dumps
from .._optional import needs_extra
from ..errors import UsageError
from ..gate.config import (
    CONFIG_NAME,
    ConfigError,
    GateConfig,
    find_config,
    interpreter_advice,
    load_config,
    look_at,
    pytest_interpreter,
    require_lockfiles,
    starter_config,
)
from ..gate.run import NO_OUTCOME, record_gate_outputs, run_gate, start_gate
from ..model import parse_claim
from ..observe.git_capture import repository_root
from ..observe.repository import git_process
from . import EXIT_VERIFIED, app
from ._output import emit_json, json_option, output, quoting_agent_text, say
from ._server import SERVER_OPTION, TOKEN_FILE_OPTION, ask_gate, ask_start

if TYPE_CHECKING:
    from ..service.ledger import Ledger

MAX_OUTCOME_BYTES = 64 * 1024
PROGRESS_EVERY_S = 1.0


class _StderrEvents:
    """One line per step on stderr; on a terminal, while a step runs (a test suite can take
    minutes), the time since it began, rewritten in place each second."""

    def __init__(self) -> None:
        self.quiet = output().quiet
        self.terminal = not self.quiet and sys.stderr.isatty()
        self.ticking: tuple[threading.Thread, threading.Event] | None = None

    def step(self, name: str, detail: str) -> None:
        self.stop()
        if self.quiet:
            return
        click.echo(f"gate: {name}: {' '.join(detail.split())}", err=True)
        if self.terminal and name != "verdict":
            done = threading.Event()
            ticker = threading.Thread(target=_tick, args=(name, done), daemon=True)
            ticker.start()
            self.ticking = (ticker, done)

    def stop(self) -> None:
        if self.ticking is not None:
            ticker, done = self.ticking
            done.set()
            ticker.join()
            self.ticking = None


def _tick(name: str, done: threading.Event) -> None:
    started = time.monotonic()
    shown = False
    while not done.wait(PROGRESS_EVERY_S):
        elapsed = int(time.monotonic() - started)
        sys.stderr.write(f"\r\x1b[K  {name}: {elapsed} s")
        sys.stderr.flush()
        shown = True
    if shown:  # the next line starts where the elapsed time was
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


@app.command("init")
@click.option("--repo", default=".", show_default=True, metavar="DIR", help="The repository.")
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="Write it here, outside the work tree (then claim gate --config FILE); default: "
    "claim.toml at the repository's root.",
)
@click.option("--force", is_flag=True, help="Replace an existing claim.toml.")
@json_option("Print {path, found} as JSON.")
def init_command(repo: str, config_path: str | None, force: bool, as_json: bool) -> int:
    """Write a commented starter claim.toml at the repository's root, from what is there:
    each test runner found (a test_run check per ecosystem: pytest or unittest, node --test,
    vitest, jest, mocha, go test, cargo test, ...; its tests taken from the default branch, which
    each claim gate --start pins to its commit; for Python, what the test interpreter must
    import and where the project declares it), a
    Dockerfile (an endpoint_health example), a database URL in the environment (a
    state_readback example).
    """
    root = repository_root(Path(repo))
    path = root / CONFIG_NAME if config_path is None else Path(config_path).absolute()
    if path.exists() and not force:
        raise UsageError(f"{path} already exists: review it, or replace it with claim init --force")
    if not path.parent.is_dir():
        raise UsageError(f"--config {config_path}: its folder does not exist")
    inside_tree = path.parent.resolve().is_relative_to(root.resolve())
    branch = _default_branch(root)
    facts = look_at(root, os.environ, branch)
    python = None
    if facts.pytest:
        python = pytest_interpreter(sys.executable, root, os.environ.get("PATH", os.defpath))
        facts = replace(facts, python=None if python == sys.executable else python)
    write_atomic(path, starter_config(facts).encode(), exclusive=not force)
    found = [name for name, _, _, _ in facts.runners]
    found += [name for name, on in (("Dockerfile", facts.dockerfile),
                                    ("a database URL", facts.database)) if on]  # fmt: skip
    if as_json:
        emit_json({"path": str(path), "found": found})
        return EXIT_VERIFIED
    say(f"wrote {path} ({'found ' + ', '.join(found) if found else 'nothing detected'})")
    if facts.pytest and python is None:
        say(
            f"note: no interpreter here can import pytest ({sys.executable} cannot): install it "
            f"({sys.executable} -m pip install pytest), or set python = in {path.name} to one "
            "outside the work tree that has the project's test dependencies"
        )
    for number, line in enumerate(interpreter_advice(facts)):
        say(("note: " if number == 0 else "      ") + line)
    try:
        require_lockfiles(load_config(path, os.environ), root)
    except ConfigError as error:  # what claim gate --start will refuse, said now
        say(f"note: {error}")
    if not inside_tree:
        # Outside the work tree the agent cannot change it, and nothing is committed.
        say(f"next: review it, then: claim gate --config {path} --start before the agent works,")
        say(f"      claim gate --config {path} after (or the hooks, with --config {path})")
        return EXIT_VERIFIED
    # Until it is committed, the gate sees claim.toml as a change to its own configuration and
    # refuses every verdict: the operator's file must be part of the base the agent starts from.
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    say(f"next: review it, commit it ({_commit_command(root, rel)}), then:")
    say("      claim hooks install --harness claude-code")
    say("      (or, by hand: claim gate --start before the agent works, claim gate after)")
    return EXIT_VERIFIED


@app.command("gate")
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="The operator's claim.toml (default: the first found from --repo up to the root).",
)
@click.option(
    "--repo", default=".", show_default=True, metavar="DIR", help="The work tree to judge."
)
@click.option(
    "--base",
    metavar="COMMIT",
    help="Measure changes against COMMIT, a full commit id (default: [gate].base of a claim.toml "
    "outside the work tree, else the session's start record; with neither, nothing is trusted "
    "to measure from and the run is unverified).",
)
@click.option("--outcome", help="What the agent says it achieved.")
@click.option("--outcome-file", metavar="FILE", help="Read the outcome from FILE.")
@click.option("--task-id", help="The claim's task id (default: repo name, base and time).")
@click.option("--session", metavar="ID", help="The agent session (its start record and baselines).")
@click.option(
    "--trusted-ref",
    metavar="COMMIT",
    help="Run every test_run's protected tests as in COMMIT, a full commit id (with --start: "
    "the baseline is taken on COMMIT; judge with the same --trusted-ref).",
)
@click.option("--json", "as_json", is_flag=True, help="Print {verdict, claim_path, agent_reason}.")
@click.option(
    "--summary-md",
    metavar="FILE",
    help="Append a Markdown summary (default: $GITHUB_STEP_SUMMARY).",
)
@click.option("--junit", "junit_path", metavar="FILE", help="Write a JUnit XML report.")
@click.option("--dotenv", "dotenv_path", metavar="FILE", help="Write CLAIM_STATE=... lines.")
@click.option(
    "--sarif",
    "sarif_path",
    metavar="FILE",
    help="Write a SARIF 2.1.0 log: one result per unmet requirement (GitHub code scanning).",
)
@click.option(
    "--start", is_flag=True, help="Record the base commit and baselines (once), and stop."
)
@click.option(
    "--restart",
    is_flag=True,
    help="With --start: replace the session's start record (the operator's say only).",
)
@SERVER_OPTION
@TOKEN_FILE_OPTION
@click.option(
    "--ledger",
    "ledger_url",
    metavar="URL",
    help="Also append the decision (with --start: the start) to this ledger (sqlite:///FILE, "
    "FILE or postgresql://...).",
)
@click.option(
    "--ledger-key",
    metavar="FILE",
    help="The key that signs the ledger's tree heads (default: [gate].sign_key).",
)
def gate_command(
    config_path: str | None,
    repo: str,
    base: str | None,
    outcome: str | None,
    outcome_file: str | None,
    task_id: str | None,
    session: str | None,
    trusted_ref: str | None,
    as_json: bool,
    summary_md: str | None,
    junit_path: str | None,
    dotenv_path: str | None,
    sarif_path: str | None,
    start: bool,
    restart: bool,
    server: str | None,
    token_file: Path | None,
    ledger_url: str | None,
    ledger_key: str | None,
) -> int:
    """Build a fresh claim for the change in the work tree, run every configured check, decide
    under the operator's policy, record it in the runs directory, and exit with the verdict.
    With --server, a claim serve does all of that under its own config and key, and records
    the decision in its ledger.

    A start is taken once per session (per repository without --session): a second --start is
    refused (exit 4) unless --restart says to replace it. Where the agent runs as the same user,
    it can pass --restart too; through --server, only a token with the start scope may start,
    and the service never replaces a start.

    \b
    Exit codes: 0 verified, 1 unverified, 2 refuted, 3 invalid policy, 4 usage or claim.toml
    error (one line naming the file and line), or a start the session already has. An
    observer that cannot observe is recorded and the change stays unverified (exit 1).
    """
    if restart and not start:
        raise UsageError("--restart is for --start")
    if server is not None:
        if restart:
            raise UsageError(
                "--restart and --server: the service never replaces a start; start a new session"
            )
        given = {"--config": config_path, "--base": base, "--trusted-ref": trusted_ref,
                 "--summary-md": summary_md, "--junit": junit_path, "--dotenv": dotenv_path,
                 "--sarif": sarif_path, "--ledger": ledger_url,
                 "--ledger-key": ledger_key}  # fmt: skip
        refused = [name for name, value in given.items() if value is not None]
        if refused:
            raise UsageError(
                f"{refused[0]} and --server: the service decides under its operator's config "
                "and records in its own ledger"
            )
        return _gate_by_service(server, token_file, Path(repo), outcome, outcome_file, task_id,
                                session, start, as_json)  # fmt: skip
    if token_file is not None:
        raise UsageError("--token-file is for --server")
    config = _config(config_path, Path(repo))
    if ledger_key is not None and ledger_url is None:
        raise UsageError("--ledger-key is for --ledger")
    # Opened first: a ledger that cannot be reached fails before the checks run for minutes.
    ledger = None if ledger_url is None else _open_ledger(ledger_url, ledger_key, config)
    by = f"gate@{socket.gethostname()}"
    if start:
        try:
            path = start_gate(config, Path(repo), session, restart=restart, trusted_ref=trusted_ref)
            if ledger is not None:
                from ..service.gate_service import new_start  # noqa: PLC0415

                root = repository_root(Path(repo))
                logged = ledger.append_start(new_start(path, root, session, by, datetime.now(UTC)))
        finally:
            if ledger is not None:
                ledger.close()
        say(f"recorded the start: {path}")
        if ledger is not None:
            click.echo(f"ledger index {logged.index}")
        return EXIT_VERIFIED
    events = _StderrEvents()
    try:
        try:
            result = run_gate(
                config, Path(repo), outcome=_outcome(outcome, outcome_file), session=session,
                base=base, events=events, task_id=task_id, trusted_ref=trusted_ref,
            )  # fmt: skip
        finally:
            events.stop()
        index = None
        if ledger is not None:
            from ..service.gate_service import gate_entry, logged_start  # noqa: PLC0415

            started = logged_start(ledger, config, repository_root(Path(repo)), session)
            index = ledger.append(gate_entry(result, by, datetime.now(UTC), started)).index
    finally:
        if ledger is not None:
            ledger.close()
    from ..gate import outputs  # noqa: PLC0415

    claim = parse_claim(result.document)
    summary = summary_md or os.environ.get("GITHUB_STEP_SUMMARY") or None
    if summary is not None:
        outputs.write_summary(Path(summary), outputs.summary_markdown(result, claim))
    if junit_path is not None:
        outputs.write_junit(Path(junit_path), result, claim)
    if dotenv_path is not None:
        outputs.write_dotenv(Path(dotenv_path), result)
    root = repository_root(Path(repo))
    if sarif_path is not None:
        outputs.write_sarif(Path(sarif_path), result, claim, root, config.path)
    written = [Path(p) for p in (summary, junit_path, dotenv_path, sarif_path) if p is not None]
    # Written into the work tree, they would be the agent's changes at the next run.
    record_gate_outputs(config, root, written)
    if as_json:
        click.echo(dumps({
            "verdict": result.verdict.state,
            "claim_path": str(result.claim_path),
            "agent_reason": result.agent_reason,
            **({} if index is None else {"ledger_index": index}),
        }, indent=2))  # fmt: skip
    else:
        _show(
            result.report, result.agent_reason, None if index is None else f"ledger index {index}"
        )
    return result.exit_code


def _show(report: str, agent_reason: str, ledger_line: str | None) -> None:
    """The report, the reason for the agent and the ledger entry; -q: the verdict line alone."""
    with quoting_agent_text():
        if output().quiet:
            click.echo(report.partition("\n")[0])
            return
        click.echo(report, nl=False)
        if agent_reason:
            click.echo("\nFor the agent:\n" + agent_reason)
        if ledger_line is not None:
            click.echo(ledger_line)


def _open_ledger(url: str, key_path: str | None, config: GateConfig) -> Ledger:
    """The ledger at ``url``, its tree heads signed with ``--ledger-key``, else the gate's key."""
    chosen = key_path if key_path is not None else config.sign_key
    if chosen is None:
        raise UsageError(
            "--ledger: the ledger's tree heads must be signed: give --ledger-key FILE or set "
            f"[gate].sign_key in {config.path.name}"
        )
    with needs_extra("serve", "--ledger"):
        from ..service.ledger import Ledger  # noqa: PLC0415
    from ..trust.keys import load_signing_key  # noqa: PLC0415

    return Ledger.open(url, load_signing_key(str(chosen)))


def _gate_by_service(
    server: str,
    token_file: Path | None,
    repo: Path,
    outcome: str | None,
    outcome_file: str | None,
    task_id: str | None,
    session: str | None,
    start: bool,
    as_json: bool,
) -> int:
    if start:
        if outcome is not None or outcome_file is not None or task_id is not None:
            raise UsageError("--start takes no --outcome, --outcome-file or --task-id")
        root, index = ask_start(server, token_file, repo, session)
        say(f"the service recorded the start for {root}: ledger index {index}")
        return EXIT_VERIFIED
    answer = ask_gate(server, token_file, repo, _outcome(outcome, outcome_file), session, task_id)
    if as_json:
        click.echo(dumps({
            "verdict": answer.verdict.state,
            "ledger_index": answer.index,
            "url": answer.claim_path,
            "agent_reason": answer.agent_reason,
        }, indent=2))  # fmt: skip
    else:
        _show(
            answer.report, answer.agent_reason, f"ledger index {answer.index}: {answer.claim_path}"
        )
    return answer.exit_code


def _config(config_path: str | None, repo: Path) -> GateConfig:
    if config_path is not None:
        return load_config(Path(config_path), os.environ)
    found = find_config(repo)
    if found is None:
        raise UsageError(f"no {CONFIG_NAME} in {repo} or above: run claim init, or pass --config")
    return load_config(found, os.environ)


def _outcome(outcome: str | None, outcome_file: str | None) -> str:
    if outcome is not None and outcome_file is not None:
        raise UsageError("--outcome and --outcome-file: give one")
    if outcome_file is not None:
        text = read_limited(outcome_file, MAX_OUTCOME_BYTES).decode("utf-8", "replace").strip()
        return text or NO_OUTCOME
    return outcome.strip() if outcome and outcome.strip() else NO_OUTCOME


def _commit_command(root: Path, name: str) -> str:
    """The commit of ``name`` as the user can run it. In a clone another user owns, git
    refuses to work for this one (dubious ownership) unless told the folder is safe: on the
    command line, for that command alone (claim never writes anyone's git configuration)."""
    owners = {os.stat(folder).st_uid for folder in (root, root / ".git") if folder.exists()}
    if owners <= {os.geteuid()}:
        return f"git add {name} && git commit"
    safe = f"git -c safe.directory={shlex.quote(str(root))}"
    return f"{safe} add {name} && {safe} commit"


def _default_branch(root: Path) -> str | None:
    """origin's HEAD branch, else main, else master: the ref the tests are trusted from."""
    done = git_process(root, ("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"),
                       UsageError)  # fmt: skip
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.decode().strip()
    for branch in ("main", "master"):
        found = git_process(root, ("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"),
                            UsageError)  # fmt: skip
        if found.returncode == 0:
            return branch
    return None
