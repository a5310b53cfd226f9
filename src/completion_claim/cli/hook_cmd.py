"""``claim hook start|stop --harness H`` (run by the harness) and
``claim hooks install|uninstall|check``.

A hook answers in its harness's contract, so its exit code is the harness's (0, or 2 where the
harness blocks by exit code), not the verdict's: the verdict is in the answer and in the runs
directory. A payload the hook cannot read is judged all the same (``hooks.read_stop``); a hook
that cannot judge (no work tree, no config, the gate could not run) lets the stop through and
says so.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from .._state import default_runs_dir
from ..errors import ClaimError, UsageError
from ..gate import hooks
from ..gate.config import (
    DEFAULT_MAX_BLOCKS,
    GateConfig,
    find_config,
    load_config,
)
from ..gate.install import SCOPES, TARGETS, Server, install, target, uninstall
from ..gate.loading import Place, check, trust
from ..gate.run import record_gate_outputs, run_gate, start_gate
from ..observe.git_capture import repository_root
from . import app
from ._output import emit_json, json_option, say
from ._server import (
    SERVER_OPTION,
    TOKEN_FILE_OPTION,
    StartNotAllowed,
    WorkTreeRefused,
    ask_gate,
    ask_start,
    refuse_config_with_server,
)

_HARNESS = click.Choice(sorted([*hooks.HARNESSES, *hooks.ALIASES]))
_REPO = click.option(
    "--repo",
    type=click.Path(file_okay=False),
    help="The work tree to judge (written by `claim hooks install`); else the payload's cwd.",
)


@app.group("hook")
def hook_group() -> None:
    """Run by an agent harness: judge a stop, or take baselines at session start."""


@hook_group.command("stop")
@click.option("--harness", required=True, type=_HARNESS, help="Whose stdin JSON and answer.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path))
@_REPO
@SERVER_OPTION
@TOKEN_FILE_OPTION
def hook_stop(
    harness: str,
    config_path: Path | None,
    repo: str | None,
    server: str | None,
    token_file: Path | None,
) -> int:
    """Read the harness's stop payload on stdin; allow the stop when the gate verifies the work,
    else send the agent back with the reason (at most the config's max_blocks times in a row).
    With --server, the service runs the gate under its operator's config."""
    adapter = hooks.harness(harness)
    hooks.note_stop(adapter.name, os.environ)
    data = sys.stdin.buffer.read(hooks.MAX_INPUT_BYTES + 1)
    request = hooks.read_stop(adapter, data, _absolute(repo))
    if isinstance(request, hooks.HookAnswer):
        return _emit(request)
    if server is not None:
        return _emit(_stop_by_service(adapter, request, server, token_file, config_path))
    try:
        config = _config(config_path, request.repo)
    except ClaimError as problem:
        return _emit(hooks.input_problem(adapter, f"cannot load the gate's config: {problem}"))

    def decide(stop: hooks.StopRequest) -> hooks.GateOutcome:
        return run_gate(config, stop.repo, outcome=stop.outcome, session=stop.session)

    try:
        answer = hooks.judge_stop(
            adapter,
            request,
            decide,
            sessions_dir=config.runs_dir / "sessions",
            max_blocks=config.max_blocks,
        )
    except ClaimError as problem:
        answer = hooks.input_problem(adapter, f"the gate could not run: {problem}")
    return _emit(answer)


@hook_group.command("start")
@click.option("--harness", required=True, type=_HARNESS, help="Whose stdin JSON and answer.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path))
@_REPO
@SERVER_OPTION
@TOKEN_FILE_OPTION
def hook_start(
    harness: str,
    config_path: Path | None,
    repo: str | None,
    server: str | None,
    token_file: Path | None,
) -> int:
    """Read the harness's session-start payload on stdin and take the gate's baselines (the
    service takes them, with --server)."""
    adapter = hooks.harness(harness)
    data = sys.stdin.buffer.read(hooks.MAX_INPUT_BYTES + 1)
    request = hooks.read_start(adapter, data, _absolute(repo))
    if isinstance(request, hooks.HookAnswer):
        return _emit(request)
    answer = adapter.started()
    if request.resumed:
        return _emit(answer)
    try:
        if server is not None:
            refuse_config_with_server(config_path)
            ask_start(server, token_file, request.repo, request.session)
        else:
            start_gate(_config(config_path, request.repo), request.repo, session=request.session)
    except StartNotAllowed as problem:
        # The expected case with the hook's own (gate-only) token: the session goes on, and
        # its gates measure from the start the operator's side took.
        return _emit(hooks.HookAnswer(answer.stdout, f"claim hook start: {problem}", 0))
    except ClaimError as problem:
        line = f"claim hook start --harness {harness}: {problem}; no baselines were taken"
        return _emit(hooks.HookAnswer(answer.stdout, line, 0))
    return _emit(answer)


def _stop_by_service(
    adapter: hooks.Harness,
    request: hooks.StopRequest,
    server: str,
    token_file: Path | None,
    config_path: Path | None,
) -> hooks.HookAnswer:
    """The service decides; this hook only counts its blocks in a row for the session (in the
    user's state folder: the operator's config, and so its runs folder, are the service's)."""
    decided: hooks.GateOutcome
    try:
        refuse_config_with_server(config_path)
        answer = ask_gate(server, token_file, request.repo, request.outcome, request.session,
                          None)  # fmt: skip
        decided, max_blocks = answer, answer.max_blocks
    except WorkTreeRefused as refused:
        # The work tree is the agent's: one the service cannot judge is unverified, as a local
        # gate's uncaptured change is, and goes back to the agent (within the usual bound).
        decided, max_blocks = _Unjudged(refused.reason, server), DEFAULT_MAX_BLOCKS
    except ClaimError as problem:
        # As when the gate cannot run here: an unreachable judge must not trap the agent.
        return hooks.input_problem(adapter, f"the gate service could not judge: {problem}")
    return hooks.judge_stop(
        adapter,
        request,
        lambda _: decided,
        sessions_dir=default_runs_dir(os.environ) / "sessions",
        max_blocks=max_blocks,
    )


@dataclass(frozen=True)
class _Unjudged:
    """A stop the service refused to judge, in the shape ``hooks.judge_stop`` reads."""

    reason: str
    claim_path: str  # nothing was recorded: where the agent's stop was sent

    @property
    def state(self) -> str:
        return "unverified"

    @property
    def verdict(self) -> _Unjudged:
        return self

    @property
    def agent_reason(self) -> str:
        return (
            f"the gate service could not judge your work tree ({self.reason}); "
            "leave it a git repository under the observed folder, with its .git in place"
        )


def _absolute(path: str | None) -> Path | None:
    if path == "":
        # An installed hook names the repository by the harness's variable ("$CLAUDE_PROJECT_DIR"):
        # empty, it would be the current folder, wherever the hook was started.
        raise UsageError("--repo is empty: the harness did not set the project folder it names")
    return None if path is None else Path(path).absolute()


def _config(path: Path | None, repo: Path) -> GateConfig:
    found = path if path is not None else find_config(repo)
    if found is None:
        raise UsageError(f"no claim.toml in {repo} or its parents (give --config)")
    return load_config(found, os.environ)


def _emit(answer: hooks.HookAnswer) -> int:
    if answer.stdout:
        click.echo(answer.stdout)
    if answer.stderr:
        click.echo(" ".join(answer.stderr.split()), err=True)
    return answer.exit_code


@app.group("hooks")
def hooks_group() -> None:
    """Install or remove the gate's hooks in a harness's settings file, or check it runs them."""


_SCOPE = click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="project",
    show_default=True,
    help="The repository's settings file, or the user's.",
)
_INSTALL_HARNESS = click.option(
    "--harness", required=True, type=click.Choice(sorted([*TARGETS, *hooks.ALIASES]))
)


@hooks_group.command("install")
@_INSTALL_HARNESS
@_SCOPE
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="claim.toml for the hooks to use (best kept outside the work tree); else found from cwd.",
)
@click.option(
    "--server",
    metavar="URL",
    help="The hooks ask this claim serve (running as its own user) to decide, instead of "
    "running the gate as the agent's user.",
)
@TOKEN_FILE_OPTION
@click.option(
    "--no-trust",
    is_flag=True,
    help="Do not write the harness's trust for the hooks (Codex's config.toml, Copilot's and "
    "Gemini's trusted folders); only say what is missing.",
)
@click.option(
    "--strict", is_flag=True, help="Exit 1 when the harness will not run the hooks in some mode."
)
@json_option(
    "Print {path, harness, installed, trusted, missing} as JSON (installed: false when already "
    "there; trusted: what was written; missing: what keeps the hooks from running)."
)
def hooks_install(
    harness: str,
    scope: str,
    config_path: Path | None,
    server: str | None,
    token_file: Path | None,
    no_trust: bool,
    strict: bool,
    as_json: bool,
) -> int:
    """Add the stop and session-start hooks; other keys and hooks are kept; twice adds nothing.
    At project scope the hooks judge this repository, whatever directory the agent is in.
    Then make the harness run them where a file outside the work tree says so (Codex's project
    and hook trust, Copilot's and Gemini's trusted folders), and say, one line each, what else
    keeps them from running."""
    harness = target(harness).harness
    path = _settings(harness, scope)
    config = config_path.resolve() if config_path is not None else None
    repo = _project_root(Path.cwd()) if scope == "project" else None
    asked = None
    if server is not None:
        refuse_config_with_server(config_path)
        asked = Server(server, None if token_file is None else token_file.resolve())
    elif token_file is not None:
        raise UsageError("--token-file is for --server")
    installed = install(path, harness, _claim_executable(), config, repo, asked)
    if repo is not None:
        _record_installed(path, repo, config)
    place = _place(harness, scope, path)
    trusted = [] if no_trust else trust(place)
    missing = check(place).lines
    if as_json:
        emit_json({"path": str(path), "harness": harness, "installed": installed,
                   "trusted": trusted, "missing": missing})  # fmt: skip
    else:
        # Success reads as a sentence; "claim:" marks an error or a warning (below).
        say(f"The {harness} hooks are {'' if installed else 'already '}installed in {path}.")
        for line in trusted:
            say(f"{line[:1].upper()}{line[1:]}.")
    if server is not None and not as_json:
        # The hook's token has no start scope: its start attempt is refused, in one line.
        say(
            "The service takes a session's start only from a token with the start scope: start "
            "each session from the operator's side (docs/integrations.md)."
        )
    for line in missing:  # a warning, whatever the output format
        click.echo(f"claim: the hooks will not run ({line})", err=True)
    return 1 if strict and missing else 0


@hooks_group.command("check")
@_INSTALL_HARNESS
@_SCOPE
@json_option("Print {path, harness, interactive, non_interactive} as JSON (lists of problems).")
def hooks_check(harness: str, scope: str, as_json: bool) -> int:
    """Read the harness's configuration and say whether it will run the gate's hooks here, in
    interactive and in non-interactive mode, and why not; exit 1 when it will not in either."""
    harness = target(harness).harness
    path = _settings(harness, scope)
    found = check(_place(harness, scope, path))
    if as_json:
        emit_json({"path": str(path), "harness": harness, "interactive": found.interactive,
                   "non_interactive": found.headless})  # fmt: skip
    else:
        for mode, problems in (("interactive", found.interactive),
                               ("non-interactive", found.headless)):  # fmt: skip
            verdict = "the hooks run" if not problems else "the hooks will NOT run"
            say(f"claim: {harness} {mode}: {verdict}")
            for problem in problems:
                say(f"  - {problem}")
    return 1 if found.interactive or found.headless else 0


def _place(harness: str, scope: str, path: Path) -> Place:
    return Place(target(harness), scope, path, _project_root(Path.cwd()), Path.home(), os.environ)


@hooks_group.command("uninstall")
@_INSTALL_HARNESS
@_SCOPE
@json_option("Print {path, harness, removed} as JSON.")
def hooks_uninstall(harness: str, scope: str, as_json: bool) -> int:
    """Remove the hooks ``claim hooks install`` added, and nothing else."""
    harness = target(harness).harness
    path = _settings(harness, scope)
    removed = uninstall(path, harness)
    if as_json:
        emit_json({"path": str(path), "harness": harness, "removed": removed})
    else:
        say(f"claim: removed {removed} {harness} hook(s) from {path}")
    return 0


def _settings(harness: str, scope: str) -> Path:
    return target(harness).settings_path(scope, _project_root(Path.cwd()), Path.home(), os.environ)


def _record_installed(path: Path, repo: Path, config_path: Path | None) -> None:
    """The project file just written is the gate's own writing, not the agent's change: until
    it is committed, the gate ignores it while it holds these bytes (spec 9.2, step 3). Without
    a loadable claim.toml there is no runs folder to record it in, and nothing to ignore it."""
    found = config_path if config_path is not None else find_config(repo)
    if found is None or not path.exists():
        return
    try:
        record_gate_outputs(load_config(found, os.environ), repository_root(repo), [path])
    except ClaimError:
        return


def _project_root(start: Path) -> Path:
    """The work tree's top (where harnesses look for project settings), else ``start``."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _claim_executable() -> Path:
    """This ``claim``, by absolute path: the harness may run hooks with another PATH."""
    running = Path(sys.argv[0])
    if running.name == "claim" and running.is_file():
        return running.resolve()
    found = shutil.which("claim")
    if found is None:
        raise UsageError("cannot find the claim executable to write into the hook")
    return Path(found).resolve()
