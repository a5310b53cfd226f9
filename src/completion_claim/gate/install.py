"""Merge the gate's hook entries into a harness's settings file, and take exactly them out again.

What is ours is recognised by its command alone: ``<.../claim> hook stop|start --harness H ...``.
Everything else in the file (other keys, other hooks, their order) is kept as it was. A file
that is not a JSON object of the documented shape is refused, never rewritten.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files import write_atomic
from ..errors import UsageError
from .hooks import canonical

HOOK_TIMEOUT_S = 600
"""The gate runs the project's tests, on stop and once at session start (the test baseline); the
harnesses' defaults (30-60 s) would cut it off."""

SCOPES = ("project", "user")


@dataclass(frozen=True)
class Target:
    """Where one harness reads hooks and the shape of an entry there."""

    harness: str
    project_file: str
    user_home_env: str | None
    user_home_default: str
    user_file: str
    stop_event: str
    start_event: str
    grouped: bool
    """Claude's shape: event -> [{matcher, hooks: [entry]}]; else event -> [entry]."""
    matcher: str | None
    version: int | None
    project_dir_env: str | None = None
    """The variable the harness sets to the project's root when it runs a hook through its
    shell: a project file naming the repository by it holds no absolute path of this checkout,
    and can be committed."""
    names_project: bool = False
    """The harness itself tells the hook the project's root, where the agent cannot move it
    (hooks.py reads it): the command carries no ``--repo`` at all (docs/integrations.md)."""

    def entry(self, command: str) -> dict[str, Any]:
        if self.harness == "copilot":
            return {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_S}
        if self.harness == "cursor":
            return {"command": command, "timeout": HOOK_TIMEOUT_S}
        if self.harness == "gemini":  # milliseconds
            return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S * 1000}
        return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}

    def group(self, command: str) -> dict[str, Any]:
        group: dict[str, Any] = {} if self.matcher is None else {"matcher": self.matcher}
        group["hooks"] = [self.entry(command)]
        return group

    def settings_path(self, scope: str, repo: Path, home: Path, env: Mapping[str, str]) -> Path:
        if scope == "project":
            return repo / self.project_file
        if scope != "user":
            raise UsageError(f"unknown scope {scope!r}; one of: {', '.join(SCOPES)}")
        configured = env.get(self.user_home_env) if self.user_home_env else None
        base = Path(configured) if configured else home / self.user_home_default
        return base / self.user_file


TARGETS: dict[str, Target] = {
    t.harness: t
    for t in (
        Target(
            "claude-code", ".claude/settings.json", "CLAUDE_CONFIG_DIR", ".claude",
            "settings.json", "Stop", "SessionStart", grouped=True, matcher="", version=None,
            project_dir_env="CLAUDE_PROJECT_DIR",
        ),
        Target(
            "codex", ".codex/hooks.json", "CODEX_HOME", ".codex", "hooks.json",
            "Stop", "SessionStart", grouped=True, matcher=None, version=None,
            names_project=True,
        ),
        Target(
            "openhands", ".openhands/hooks.json", None, ".openhands", "hooks.json",
            "Stop", "SessionStart", grouped=True, matcher="*", version=None,
            project_dir_env="OPENHANDS_PROJECT_DIR",
        ),
        Target(
            "cursor", ".cursor/hooks.json", None, ".cursor", "hooks.json",
            "stop", "sessionStart", grouped=False, matcher=None, version=1,
        ),
        Target(
            "copilot", ".github/hooks/completion-claim.json", "COPILOT_HOME", ".copilot",
            "hooks/completion-claim.json", "agentStop", "sessionStart",
            grouped=False, matcher=None, version=1, project_dir_env="COPILOT_PROJECT_DIR",
        ),
        Target(
            "gemini", ".gemini/settings.json", None, ".gemini", "settings.json",
            "AfterAgent", "SessionStart", grouped=True, matcher=None, version=None,
            names_project=True,
        ),
    )
}  # fmt: skip


def target(harness: str) -> Target:
    try:
        return TARGETS[canonical(harness)]
    except KeyError:
        raise UsageError(f"unknown harness {harness!r}; one of: {', '.join(TARGETS)}") from None


@dataclass(frozen=True)
class Server:
    """A ``claim serve`` that decides instead of the local gate, and the token file to send."""

    url: str
    token_file: Path | None = None


def hook_command(
    claim: Path,
    kind: str,
    harness: str,
    config: Path | None,
    repo: Path | None,
    server: Server | None = None,
    repo_variable: str | None = None,
) -> str:
    """The command a harness runs (through its shell, so quoted). ``repo`` pins the tree the
    gate judges, which the payload's ``cwd`` would otherwise name (and the agent can move);
    ``repo_variable`` names it by the harness's own variable instead (``"$CLAUDE_PROJECT_DIR"``,
    set by the harness, not by the agent's processes), so the file is the same in any checkout."""
    words = [shlex.quote(str(claim)), "hook", kind, "--harness", shlex.quote(harness)]
    if config is not None:
        words += ["--config", shlex.quote(str(config))]
    if repo is not None:
        words += ["--repo", f'"${repo_variable}"' if repo_variable else shlex.quote(str(repo))]
    if server is not None:
        words += ["--server", shlex.quote(server.url)]
        if server.token_file is not None:
            words += ["--token-file", shlex.quote(str(server.token_file))]
    return " ".join(words)


def is_ours(command: object, harness: str, kind: str) -> bool:
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    return (
        len(argv) >= 5
        and Path(argv[0]).name == "claim"
        and argv[1:5] == ["hook", kind, "--harness", harness]
    )


def install(
    path: Path,
    harness: str,
    claim: Path,
    config: Path | None,
    repo: Path | None = None,
    server: Server | None = None,
) -> bool:
    """Add the stop and start hooks for ``harness`` to ``path``; False when already there."""
    spec = target(harness)
    document = _load(path, spec)
    before = json.dumps(document, sort_keys=True)
    hooks = _hooks_table(document, path, create=True)
    assert hooks is not None
    pinned = None if spec.names_project else repo
    for kind, event in (("stop", spec.stop_event), ("start", spec.start_event)):
        command = hook_command(claim, kind, spec.harness, config, pinned, server,
                               spec.project_dir_env if pinned is not None else None)  # fmt: skip
        entries = _event_list(hooks, event, path, create=True)
        assert entries is not None
        if any(_command_of(spec, entry) == command for entry in _entries(spec, entries)):
            continue
        _remove_ours(spec, entries, kind)
        entries.append(spec.group(command) if spec.grouped else spec.entry(command))
    if json.dumps(document, sort_keys=True) == before:
        return False
    _save(path, document)
    return True


def uninstall(path: Path, harness: str) -> int:
    """Remove the entries ``install`` wrote for ``harness``; returns how many went."""
    spec = target(harness)
    if not path.exists():
        return 0
    document = _load(path, spec)
    hooks = _hooks_table(document, path, create=False)
    if hooks is None:
        return 0
    removed = 0
    for kind, event in (("stop", spec.stop_event), ("start", spec.start_event)):
        entries = _event_list(hooks, event, path, create=False)
        if entries is None:
            continue
        count = _remove_ours(spec, entries, kind)
        removed += count
        if count and not entries:
            del hooks[event]
    if not removed:
        return 0
    if not hooks:
        del document["hooks"]
    if not document or (spec.version is not None and document == {"version": spec.version}):
        path.unlink()
    else:
        _save(path, document)
    return removed


def _load(path: Path, spec: Target) -> dict[str, Any]:
    if not path.exists():
        return {} if spec.version is None else {"version": spec.version}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); not changed") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path}: not a JSON object; not changed")
    return document


def _hooks_table(document: dict[str, Any], path: Path, *, create: bool) -> dict[str, Any] | None:
    if "hooks" not in document and create:
        document["hooks"] = {}
    hooks = document.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise UsageError(f"{path}: 'hooks' is not an object; not changed")
    return hooks


def _event_list(hooks: dict[str, Any], event: str, path: Path, *, create: bool) -> list[Any] | None:
    if event not in hooks and create:
        hooks[event] = []
    entries = hooks.get(event)
    if entries is not None and not isinstance(entries, list):
        raise UsageError(f"{path}: 'hooks.{event}' is not a list; not changed")
    return entries


def _entries(spec: Target, entries: list[Any]) -> list[Any]:
    """The hook entries of an event's list (inside the groups, for Claude's shape)."""
    if not spec.grouped:
        return entries
    return [
        entry
        for group in entries
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for entry in group["hooks"]
    ]


def _command_of(spec: Target, entry: object) -> object:
    if not isinstance(entry, dict):
        return None
    return entry.get("bash" if spec.harness == "copilot" else "command")


def _remove_ours(spec: Target, entries: list[Any], kind: str) -> int:
    """Drop our entries from an event's list (and a group only when we emptied it)."""

    def ours(entry: object) -> bool:
        return is_ours(_command_of(spec, entry), spec.harness, kind)

    removed = 0
    if not spec.grouped:
        keep = [entry for entry in entries if not ours(entry)]
        removed = len(entries) - len(keep)
    else:
        keep = []
        for group in entries:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                keep.append(group)
                continue
            kept = [entry for entry in inner if not ours(entry)]
            removed += len(inner) - len(kept)
            if kept or len(kept) == len(inner):
                group["hooks"] = kept
                keep.append(group)
    entries[:] = keep
    return removed


def _save(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(document, indent=2) + "\n").encode("utf-8"))
