"""Merging the gate's hooks into each harness's real settings file, and taking exactly them out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from completion_claim.errors import UsageError
from completion_claim.gate.install import TARGETS, Server, install, target, uninstall

CLAIM = Path("/opt/venv/bin/claim")
HARNESSES = sorted(TARGETS)


def other_hooks(harness: str) -> dict[str, Any]:
    """A settings file someone already has: other keys, another stop hook, another event."""
    spec = target(harness)
    if spec.grouped:
        stop_entry: Any = {"hooks": [{"type": "command", "command": "npm run lint", "timeout": 30}]}
        if spec.matcher is not None:
            stop_entry["matcher"] = spec.matcher
        other_event = {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}
            ]
        }
    elif harness == "copilot":
        stop_entry = {"type": "command", "bash": "./notify.sh", "timeoutSec": 5}
        other_event = {"preToolUse": [{"type": "command", "bash": "./guard.sh"}]}
    else:
        stop_entry = {"command": "./notify.sh"}
        other_event = {"beforeShellExecution": [{"command": "./guard.sh"}]}
    document: dict[str, Any] = {
        "model": "x",
        "hooks": {spec.stop_event: [stop_entry], **other_event},
    }
    if spec.version is not None:
        document["version"] = spec.version
    return document


def commands(harness: str, document: dict[str, Any], event: str) -> list[str]:
    spec = target(harness)
    entries = document["hooks"][event]
    if spec.grouped:
        entries = [entry for group in entries for entry in group["hooks"]]
    key = "bash" if harness == "copilot" else "command"
    return [entry[key] for entry in entries]


def read(path: Path) -> dict[str, Any]:
    document = json.loads(path.read_text())
    assert isinstance(document, dict)
    return document


@pytest.mark.parametrize("harness", HARNESSES)
def test_install_creates_the_file_with_stop_and_start_hooks(harness: str, tmp_path: Path) -> None:
    spec = target(harness)
    path = spec.settings_path("project", tmp_path, tmp_path / "home", {})
    assert install(path, harness, CLAIM, None)
    document = read(path)
    assert commands(harness, document, spec.stop_event) == [
        f"{CLAIM} hook stop --harness {harness}"
    ]
    assert commands(harness, document, spec.start_event) == [
        f"{CLAIM} hook start --harness {harness}"
    ]
    if spec.version is not None:
        assert document["version"] == 1


def test_claude_code_entries_have_the_documented_shape(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    config = tmp_path / "claim.toml"
    install(path, "claude-code", CLAIM, config)
    stop = read(path)["hooks"]["Stop"]
    assert stop == [
        {
            "matcher": "",
            "hooks": [
                {
                    "type": "command",
                    "command": f"{CLAIM} hook stop --harness claude-code --config {config}",
                    "timeout": 600,
                }
            ],
        }
    ]


def test_a_server_replaces_the_local_gate_in_both_hooks(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    install(path, "codex", CLAIM, None)
    server = Server("unix:///run/claim/gate.sock", tmp_path / "token")
    assert install(path, "codex", CLAIM, None, None, server)
    document = read(path)
    for kind, event in (("stop", "Stop"), ("start", "SessionStart")):
        assert commands("codex", document, event) == [
            f"{CLAIM} hook {kind} --harness codex --server unix:///run/claim/gate.sock "
            f"--token-file {tmp_path / 'token'}"
        ]
    assert not install(path, "codex", CLAIM, None, None, server)
    assert uninstall(path, "codex") == 2


def test_a_pinned_repository_is_written_into_the_command(tmp_path: Path) -> None:
    """Cursor sets no variable for it and its payload was not seen from a real CLI here."""
    path = tmp_path / "hooks.json"
    install(path, "cursor", CLAIM, None, tmp_path / "my repo")
    stop = read(path)["hooks"]["stop"][0]["command"]
    assert stop == f"{CLAIM} hook stop --harness cursor --repo '{tmp_path / 'my repo'}'"
    assert uninstall(path, "cursor") == 2


@pytest.mark.parametrize(
    ("harness", "repo_words"),
    [
        ("claude-code", ' --repo "$CLAUDE_PROJECT_DIR"'),
        ("copilot", ' --repo "$COPILOT_PROJECT_DIR"'),
        ("openhands", ' --repo "$OPENHANDS_PROJECT_DIR"'),
        ("codex", ""),  # its payload's cwd: the session's folder, which no tool call moves
        ("gemini", ""),  # GEMINI_PROJECT_DIR, read from the hook's environment
    ],
)
def test_a_project_file_names_no_path_of_the_checkout(
    harness: str, repo_words: str, tmp_path: Path
) -> None:
    """Issue 21: committed, the file is right in any clone. Gemini's carries no ``$`` at all:
    Gemini CLI replaces ``$VAR`` in its settings from its own environment when it loads them,
    and replaces ``$GEMINI_PROJECT_DIR`` in a hook command with a shell-quoted path."""
    path = tmp_path / "settings.json"
    install(path, harness, CLAIM, None, tmp_path / "my repo")
    spec = target(harness)
    for kind, event in (("stop", spec.stop_event), ("start", spec.start_event)):
        assert commands(harness, read(path), event) == [
            f"{CLAIM} hook {kind} --harness {spec.harness}{repo_words}"
        ]
    assert str(tmp_path / "my repo") not in path.read_text()


def test_copilot_entries_use_bash_and_timeout_sec(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    install(path, "copilot", CLAIM, None)
    assert read(path)["hooks"]["agentStop"] == [
        {"type": "command", "bash": f"{CLAIM} hook stop --harness copilot", "timeoutSec": 600}
    ]


@pytest.mark.parametrize("harness", HARNESSES)
def test_install_keeps_every_other_key_and_hook(harness: str, tmp_path: Path) -> None:
    spec = target(harness)
    path = tmp_path / "settings.json"
    before = other_hooks(harness)
    path.write_text(json.dumps(before))
    install(path, harness, CLAIM, None)
    after = read(path)
    assert after["model"] == "x"
    for event, entries in before["hooks"].items():
        assert after["hooks"][event][: len(entries)] == entries
    assert commands(harness, after, spec.stop_event)[-1] == f"{CLAIM} hook stop --harness {harness}"


@pytest.mark.parametrize("harness", HARNESSES)
def test_installing_twice_adds_nothing(harness: str, tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(other_hooks(harness)))
    assert install(path, harness, CLAIM, None)
    once = path.read_text()
    assert not install(path, harness, CLAIM, None)
    assert path.read_text() == once


def test_installing_with_another_config_replaces_ours_only(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(other_hooks("claude-code")))
    install(path, "claude-code", CLAIM, None)
    install(path, "claude-code", Path("/elsewhere/claim"), tmp_path / "c.toml")
    assert commands("claude-code", read(path), "Stop") == [
        "npm run lint",
        f"/elsewhere/claim hook stop --harness claude-code --config {tmp_path / 'c.toml'}",
    ]


@pytest.mark.parametrize("harness", HARNESSES)
def test_uninstall_removes_exactly_what_install_added(harness: str, tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(other_hooks(harness), indent=2))
    before = read(path)
    install(path, harness, CLAIM, tmp_path / "claim.toml")
    assert uninstall(path, harness) == 2
    assert read(path) == before
    assert uninstall(path, harness) == 0


@pytest.mark.parametrize("harness", HARNESSES)
def test_uninstall_deletes_a_file_install_created(harness: str, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "settings.json"
    install(path, harness, CLAIM, None)
    assert uninstall(path, harness) == 2
    assert not path.exists()


def test_uninstall_leaves_other_harnesses_and_lookalikes(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    install(path, "claude-code", CLAIM, None)
    document = read(path)
    document["hooks"]["Stop"].append(
        {"hooks": [{"type": "command", "command": f"{CLAIM} hook stop --harness codex"}]}
    )
    document["hooks"]["Stop"].append(
        {
            "hooks": [
                {"type": "command", "command": "my-claim-wrapper hook stop --harness claude-code"}
            ]
        }
    )
    path.write_text(json.dumps(document))
    assert uninstall(path, "claude-code") == 2
    assert commands("claude-code", read(path), "Stop") == [
        f"{CLAIM} hook stop --harness codex",
        "my-claim-wrapper hook stop --harness claude-code",
    ]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a JSON object"),
        ('{"hooks": []}', "'hooks' is not an object"),
        ('{"hooks": {"Stop": {}}}', "'hooks.Stop' is not a list"),
    ],
)
def test_a_settings_file_of_another_shape_is_refused_not_clobbered(
    content: str, problem: str, tmp_path: Path
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=problem):
        install(path, "claude-code", CLAIM, None)
    with pytest.raises(UsageError, match=problem):
        uninstall(path, "claude-code")
    assert path.read_text() == content


@pytest.mark.parametrize(
    ("harness", "scope", "env", "expected"),
    [
        ("claude-code", "project", {}, "repo/.claude/settings.json"),
        ("claude-code", "user", {}, "home/.claude/settings.json"),
        ("claude-code", "user", {"CLAUDE_CONFIG_DIR": "/cfg"}, "/cfg/settings.json"),
        ("codex", "project", {}, "repo/.codex/hooks.json"),
        ("codex", "user", {"CODEX_HOME": "/cx"}, "/cx/hooks.json"),
        ("openhands", "project", {}, "repo/.openhands/hooks.json"),
        ("openhands", "user", {}, "home/.openhands/hooks.json"),
        ("cursor", "project", {}, "repo/.cursor/hooks.json"),
        ("cursor", "user", {}, "home/.cursor/hooks.json"),
        ("copilot", "project", {}, "repo/.github/hooks/completion-claim.json"),
        ("copilot", "user", {}, "home/.copilot/hooks/completion-claim.json"),
        ("gemini", "project", {}, "repo/.gemini/settings.json"),
        ("gemini", "user", {}, "home/.gemini/settings.json"),
    ],
)
def test_where_each_harness_reads_its_hooks(
    harness: str, scope: str, env: dict[str, str], expected: str, tmp_path: Path
) -> None:
    path = target(harness).settings_path(scope, tmp_path / "repo", tmp_path / "home", env)
    assert path == tmp_path / expected


def test_unknown_harness_and_scope_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown harness 'aider'"):
        target("aider")
    with pytest.raises(UsageError, match="unknown scope 'global'"):
        target("codex").settings_path("global", tmp_path, tmp_path, {})


def test_gemini_entries_are_claudes_shape_with_the_timeout_in_milliseconds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "settings.json"
    install(path, "gemini", CLAIM, None)
    document = read(path)
    assert sorted(document["hooks"]) == ["AfterAgent", "SessionStart"]
    (group,) = document["hooks"]["AfterAgent"]
    assert group == {
        "hooks": [{"type": "command", "command": f"{CLAIM} hook stop --harness gemini",
                   "timeout": 600_000}]
    }  # fmt: skip


def test_claude_installs_and_uninstalls_as_claude_code(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert target("claude") is target("claude-code")
    install(path, "claude", CLAIM, None)
    assert commands("claude-code", read(path), "Stop") == [
        f"{CLAIM} hook stop --harness claude-code"
    ]
    assert not install(path, "claude-code", CLAIM, None)
    assert uninstall(path, "claude") == 2
