"""Whether a harness will run the hooks ``claim hooks install`` wrote, and the trust that makes it.

Three harnesses skip installed hooks without a word unless something outside the hooks file
says they may run (seen with the releases docs/integrations.md names):

- Codex loads a project's ``.codex/`` only for a project trusted in ``$CODEX_HOME/config.toml``
  (``[projects."<dir>"] trust_level = "trusted"``), and runs any hook (user or project) only
  when ``[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash`` is the hash of that
  hook as it is now; ``codex exec`` skips the others silently.
- Copilot CLI loads a repository's ``.github/hooks`` in ``-p`` mode only for a folder in
  ``trustedFolders`` of ``$COPILOT_HOME/config.json`` (or with ``--trust-folder`` /
  ``COPILOT_ALLOW_ALL=true``); user-scope hooks always load.
- Gemini CLI refuses ``-p`` in an untrusted folder (``~/.gemini/trustedFolders.json``), and with
  ``--skip-trust`` starts but skips the project's hooks.

And OpenHands reads only the first of ``<workdir>/.openhands/hooks.json`` and
``~/.openhands/hooks.json``, so a repository's own file hides user-scope hooks.

These files are the operator's (outside the work tree): ``trust`` writes the entries there;
``check`` reads them and says, one line per missing step, what keeps the hooks from running.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._files import write_atomic
from ..errors import UsageError
from .install import HOOK_TIMEOUT_S, Target, is_ours

INTERACTIVE = "interactive"
HEADLESS = "non-interactive"


@dataclass
class Readiness:
    """What keeps the gate's hooks from running, per mode (empty: they run)."""

    interactive: list[str] = field(default_factory=list)
    headless: list[str] = field(default_factory=list)

    def both(self, line: str) -> None:
        self.interactive.append(line)
        self.headless.append(line)

    @property
    def lines(self) -> list[str]:
        """Each problem once, naming the modes it holds for."""
        lines = []
        for line in dict.fromkeys(self.interactive + self.headless):
            modes = [m for m, found in ((INTERACTIVE, self.interactive), (HEADLESS, self.headless))
                     if line in found]  # fmt: skip
            lines.append(f"{' and '.join(modes)}: {line}")
        return lines


@dataclass(frozen=True)
class Place:
    """One installation: the harness, the scope, the hooks file and the project it gates."""

    spec: Target
    scope: str
    settings: Path
    repo: Path
    home: Path
    env: Mapping[str, str]

    def harness_home(self, variable: str, default: str) -> Path:
        configured = self.env.get(variable)
        return Path(configured) if configured else self.home / default


def trust(place: Place) -> list[str]:
    """Write the trust the harness needs for the installed hooks to run; say what was written."""
    harness = place.spec.harness
    if harness == "codex":
        return _trust_codex(place)
    if harness == "copilot" and place.scope == "project":
        return _trust_folder_list(place, _copilot_config(place))
    if harness == "gemini" and place.scope == "project":
        return _trust_folder_map(place, _gemini_trusted_folders(place))
    return []


def check(place: Place) -> Readiness:
    found = Readiness()
    installed = installed_hooks(place)
    if not installed:
        found.both(f"the gate's hooks are not in {place.settings} (run `claim hooks install`)")
        return found
    harness = place.spec.harness
    if harness == "codex":
        _check_codex(place, found)
    elif harness == "copilot" and place.scope == "project":
        config = _copilot_config(place)
        if not _listed(place.repo, _read_json(config).get("trustedFolders")):
            found.headless.append(
                f"`copilot -p` skips this repository's hooks, silently: {place.repo} is not in "
                f"trustedFolders of {config} (run `claim hooks install` again, or pass "
                "--trust-folder, or install with --scope user)"
            )
    elif harness == "gemini" and place.scope == "project":
        folders = _gemini_trusted_folders(place)
        if not _trusted_in_map(place.repo, _read_json(folders)):
            found.interactive.append(
                f"gemini asks whether to trust {place.repo} and runs the project's hooks only "
                "if it is trusted"
            )
            found.headless.append(
                f"`gemini -p` refuses to start in {place.repo}, not trusted in {folders}, and "
                "with --skip-trust skips the project's hooks (run `claim hooks install` again, "
                "or install with --scope user)"
            )
    elif harness == "openhands" and place.scope == "user":
        project_hooks = place.repo / place.spec.project_file
        if project_hooks.exists():
            found.both(
                f"OpenHands reads only the first of {project_hooks} and {place.settings}: the "
                "repository's file hides the gate's hooks (install with --scope project)"
            )
    return found


def installed_hooks(place: Place) -> list[tuple[str, int, int, str]]:
    """Our entries in the hooks file: (event, group index, handler index, command)."""
    try:
        document = json.loads(place.settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    hooks = document.get("hooks") if isinstance(document, dict) else None
    if not isinstance(hooks, dict):
        return []
    spec, found = place.spec, []
    for kind, event in (("stop", spec.stop_event), ("start", spec.start_event)):
        entries = hooks.get(event)
        if not isinstance(entries, list):
            continue
        for g, group in enumerate(entries):
            inner = group.get("hooks") if spec.grouped and isinstance(group, dict) else [group]
            for h, entry in enumerate(inner if isinstance(inner, list) else []):
                key = "bash" if spec.harness == "copilot" else "command"
                command = entry.get(key) if isinstance(entry, dict) else None
                if isinstance(command, str) and is_ours(command, spec.harness, kind):
                    found.append((event, g, h if spec.grouped else 0, command))
    return found if any(event == spec.stop_event for event, *_ in found) else []


# ---- Codex


_CODEX_EVENT_LABELS = {"Stop": "stop", "SessionStart": "session_start"}


def codex_hook_hash(event: str, command: str) -> str:
    """Codex's trust identity of one command hook (hooks/src/engine/discovery.rs): the event's
    label and the normalised handler, keys sorted, compact JSON, SHA-256. Our groups have no
    matcher and no status message, so neither is part of it."""
    identity = {
        "event_name": _CODEX_EVENT_LABELS[event],
        "hooks": [{"async": False, "command": command, "timeout": HOOK_TIMEOUT_S,
                   "type": "command"}],
    }  # fmt: skip
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _codex_config(place: Place) -> Path:
    return place.harness_home("CODEX_HOME", ".codex") / "config.toml"


def _codex_wanted(place: Place) -> list[tuple[tuple[str, ...], str, str]]:
    """(table, key, value) entries config.toml needs for the installed hooks to run."""
    wanted: list[tuple[tuple[str, ...], str, str]] = []
    if place.scope == "project":
        wanted.append((("projects", str(place.repo)), "trust_level", "trusted"))
    for event, g, h, command in installed_hooks(place):
        state = f"{place.settings}:{_CODEX_EVENT_LABELS[event]}:{g}:{h}"
        wanted.append((("hooks", "state", state), "trusted_hash", codex_hook_hash(event, command)))
    return wanted


def _trust_codex(place: Place) -> list[str]:
    config = _codex_config(place)
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    document = _read_toml(config, text)
    done = []
    for table, key, value in _codex_wanted(place):
        current = _toml_get(document, table, key)
        if current == value or (table[0] == "projects" and current is not None):
            continue  # a project the operator marked otherwise stays so (check says it)
        text = _toml_set(text, table, key, value)
        done.append(f"{_toml_header(table)} {key} = {json.dumps(value)}")
    if not done:
        return []
    try:
        written: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        written = {}
    for line in done:
        table_and_key, _, value = line.partition(" = ")
        header, _, key = table_and_key.rpartition(" ")
        table = next(t for t, k, _v in _codex_wanted(place) if _toml_header(t) == header)
        if _toml_get(written, table, key) != json.loads(value):
            raise UsageError(
                f"{config}: cannot set {header} {key} by itself (the table is written another "
                f"way there); add `{key} = {value}` under {header} by hand; not changed"
            )
    config.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(config, text.encode("utf-8"))
    return [f"trusted in {config}: {line}" for line in done]


def _check_codex(place: Place, found: Readiness) -> None:
    config = _codex_config(place)
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    try:
        document = _read_toml(config, text)
    except UsageError as problem:
        found.both(str(problem))
        return
    for table, key, value in _codex_wanted(place):
        current = _toml_get(document, table, key)
        if current == value:
            continue
        if table[0] == "projects":
            has = "lacks" if current is None else f"has trust_level = {json.dumps(current)} in"
            found.both(
                f"Codex loads {place.settings} only in a trusted project: {config} {has} "
                f'{_toml_header(table)}, not trust_level = "trusted"'
            )
        else:
            what = "is not trusted" if current is None else "changed since it was trusted"
            found.interactive.append(
                f"the hook {table[-1]} {what}: codex lists it under /hooks and does not run it "
                "until it is trusted there"
            )
            found.headless.append(
                f"`codex exec` skips the hook {table[-1]} silently: it {what} in {config} (run "
                "`claim hooks install` again, or pass --dangerously-bypass-hook-trust)"
            )
        if _toml_get(document, table, "enabled") is False:
            found.both(f"{_toml_header(table)} has enabled = false in {config}")


def _read_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc}); not changed") from None


def _toml_get(document: Mapping[str, Any], table: tuple[str, ...], key: str) -> object:
    node: object = document
    for name in table:
        node = node.get(name) if isinstance(node, dict) else None
    return node.get(key) if isinstance(node, dict) else None


def _toml_header(table: tuple[str, ...]) -> str:
    return "[" + ".".join(n if re.fullmatch(r"[A-Za-z0-9_-]+", n) else json.dumps(n)
                          for n in table) + "]"  # fmt: skip


def _toml_set(text: str, table: tuple[str, ...], key: str, value: str) -> str:
    """``key = value`` under ``[table]``: replaced in that table where it is, else added to it,
    else the table is added at the end. The caller reads the result back to check it."""
    header, line = _toml_header(table), f"{key} = {json.dumps(value)}"
    lines = text.splitlines()
    if header in (existing.strip() for existing in lines):
        start = next(i for i, existing in enumerate(lines) if existing.strip() == header)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
                   len(lines))  # fmt: skip
        for i in range(start + 1, end):
            if re.match(rf"\s*{re.escape(key)}\s*=", lines[i]):
                lines[i] = line
                break
        else:
            lines.insert(start + 1, line)
        return "\n".join(lines) + "\n"
    separator = (
        "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    )
    return f"{text}{separator}{header}\n{line}\n"


# ---- Copilot and Gemini: the trusted folders


def _copilot_config(place: Place) -> Path:
    return place.harness_home("COPILOT_HOME", ".copilot") / "config.json"


def _gemini_trusted_folders(place: Place) -> Path:
    return place.home / ".gemini" / "trustedFolders.json"


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object, ``{}`` when absent; Copilot's config.json opens with ``//`` comment lines."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    try:
        document = json.loads(body) if body.strip() else {}
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); not changed") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path}: not a JSON object; not changed")
    return document


def _listed(repo: Path, folders: object) -> bool:
    if not isinstance(folders, list):
        return False
    return any(isinstance(f, str) and (repo == Path(f) or Path(f) in repo.parents)
               for f in folders)  # fmt: skip


def _trusted_in_map(repo: Path, folders: Mapping[str, Any]) -> bool:
    return any(
        value == "TRUST_FOLDER" and (repo == Path(path) or Path(path) in repo.parents)
        for path, value in folders.items()
    )


def _trust_folder_list(place: Place, config: Path) -> list[str]:
    document = _read_json(config)
    folders = document.get("trustedFolders")
    if _listed(place.repo, folders):
        return []
    if folders is not None and not isinstance(folders, list):
        raise UsageError(f"{config}: 'trustedFolders' is not a list; not changed")
    document["trustedFolders"] = [*(folders or []), str(place.repo)]
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    comments = [line for line in text.splitlines() if line.lstrip().startswith("//")]
    body = "\n".join([*comments, json.dumps(document, indent=2)]) + "\n"
    config.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(config, body.encode("utf-8"))
    return [f"trusted {place.repo} in {config} (trustedFolders)"]


def _trust_folder_map(place: Place, path: Path) -> list[str]:
    folders = _read_json(path)
    if _trusted_in_map(place.repo, folders):
        return []
    folders[str(place.repo)] = "TRUST_FOLDER"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(folders, indent=2) + "\n").encode("utf-8"))
    return [f"trusted {place.repo} in {path}"]
