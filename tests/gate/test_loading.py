"""Whether a harness will run the installed hooks, and the trust ``claim hooks install`` writes
for them, on real settings files (the end-to-end tests run the harnesses on what is written)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from completion_claim.errors import UsageError
from completion_claim.gate.install import install, target
from completion_claim.gate.loading import Place, check, codex_hook_hash, trust

CLAIM = Path("/opt/venv/bin/claim")


def installed(tmp_path: Path, harness: str, scope: str = "project") -> Place:
    repo, home = tmp_path / "repo", tmp_path / "home"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    spec = target(harness)
    settings = spec.settings_path(scope, repo, home, {})
    install(settings, harness, CLAIM, None, repo if scope == "project" else None)
    return Place(spec, scope, settings, repo, home, {})


def test_codex_needs_the_project_and_each_hook_trusted_then_runs_them(tmp_path: Path) -> None:
    place = installed(tmp_path, "codex")
    before = check(place)
    assert any("only in a trusted project" in line for line in before.headless)
    assert any("`codex exec` skips the hook" in line for line in before.headless)
    assert any("/hooks" in line for line in before.interactive)

    done = trust(place)
    assert len(done) == 3  # the project, the stop hook, the start hook
    assert check(place).interactive == check(place).headless == []
    config = tomllib.loads((tmp_path / "home/.codex/config.toml").read_text())
    assert config["projects"][str(place.repo)] == {"trust_level": "trusted"}
    command = f"{CLAIM} hook stop --harness codex"  # its payload names the project
    state = config["hooks"]["state"][f"{place.settings}:stop:0:0"]
    assert state == {"trusted_hash": codex_hook_hash("Stop", command)}
    assert trust(place) == []


def test_codex_hash_is_the_one_codex_0_171_accepted() -> None:
    """Seen with the real CLI: this trusted_hash made `codex exec` run the hook without the
    bypass (the end-to-end tests check it against the installed hooks each run)."""
    assert codex_hook_hash("Stop", "/tmp/h8/x/dump_hook.py stop") == (
        "sha256:1aa49fd1c62a952966ff6d5c1a1cf2245e0f4b5233e4a91e0802180d4f9d6580"
    )


def test_codex_trust_keeps_the_config_and_replaces_a_stale_hash(tmp_path: Path) -> None:
    place = installed(tmp_path, "codex", scope="user")
    config = tmp_path / "home/.codex/config.toml"
    key = f"{place.settings}:stop:0:0"
    config.write_text(
        'model = "o3"  # mine\n\n[hooks.state."' + key + '"]\ntrusted_hash = "sha256:old"\n'
    )
    trust(place)
    text = config.read_text()
    assert text.startswith('model = "o3"  # mine\n')
    assert "sha256:old" not in text
    assert check(place).headless == []
    assert "projects" not in tomllib.loads(text)  # user scope: no project to trust


def test_a_modified_hook_is_named_as_changed(tmp_path: Path) -> None:
    place = installed(tmp_path, "codex", scope="user")
    trust(place)
    install(place.settings, "codex", Path("/elsewhere/claim"), None)
    assert any("changed since it was trusted" in line for line in check(place).headless)


def test_codex_config_written_another_way_is_refused_unchanged(tmp_path: Path) -> None:
    place = installed(tmp_path, "codex")
    config = tmp_path / "home/.codex/config.toml"
    config.parent.mkdir(parents=True)
    key = f"{place.settings}:stop:0:0"
    original = f'hooks = {{ state = {{ "{key}" = {{ trusted_hash = "sha256:old" }} }} }}\n'
    config.write_text(original)
    with pytest.raises(UsageError, match=r"cannot set .* by itself"):
        trust(place)
    assert config.read_text() == original


def test_a_project_the_operator_marked_untrusted_stays_so_and_is_named(tmp_path: Path) -> None:
    place = installed(tmp_path, "codex")
    config = tmp_path / "home/.codex/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[projects."{place.repo}"]\ntrust_level = "untrusted"\n')
    trust(place)
    assert 'trust_level = "untrusted"' in config.read_text()
    assert any('has trust_level = "untrusted" in' in line
               for line in check(place).headless)  # fmt: skip


def test_copilot_project_hooks_need_the_folder_trusted_for_prompt_mode(tmp_path: Path) -> None:
    place = installed(tmp_path, "copilot")
    (before,) = check(place).headless
    assert "`copilot -p` skips this repository's hooks, silently" in before
    assert check(place).interactive == []
    config = tmp_path / "home/.copilot/config.json"
    config.parent.mkdir(parents=True)
    config.write_text('// This file is managed automatically.\n{"trustedFolders": ["/a"], "x": 1}')
    assert trust(place) == [f"trusted {place.repo} in {config} (trustedFolders)"]
    assert config.read_text().startswith("// This file is managed automatically.\n")
    body = json.loads(config.read_text().split("\n", 1)[1])
    assert body == {"trustedFolders": ["/a", str(place.repo)], "x": 1}
    assert check(place).headless == []


def test_a_trusted_parent_folder_counts(tmp_path: Path) -> None:
    place = installed(tmp_path, "copilot")
    config = tmp_path / "home/.copilot/config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"trustedFolders": [str(tmp_path)]}))
    assert check(place).headless == []
    assert trust(place) == []


def test_user_scope_copilot_hooks_need_no_trust(tmp_path: Path) -> None:
    place = installed(tmp_path, "copilot", scope="user")
    assert trust(place) == []
    assert check(place).headless == []


def test_gemini_project_hooks_need_the_folder_trusted(tmp_path: Path) -> None:
    place = installed(tmp_path, "gemini")
    assert any("refuses to start" in line for line in check(place).headless)
    trust(place)
    folders = json.loads((tmp_path / "home/.gemini/trustedFolders.json").read_text())
    assert folders == {str(place.repo): "TRUST_FOLDER"}
    assert check(place).interactive == check(place).headless == []


def test_an_openhands_project_file_hides_user_scope_hooks(tmp_path: Path) -> None:
    place = installed(tmp_path, "openhands", scope="user")
    assert check(place).headless == []
    (place.repo / ".openhands").mkdir()
    (place.repo / ".openhands/hooks.json").write_text("{}")
    (problem,) = check(place).headless
    assert "hides the gate's hooks" in problem


def test_hooks_not_installed_are_said_to_be_missing(tmp_path: Path) -> None:
    spec = target("claude-code")
    place = Place(spec, "project", tmp_path / "settings.json", tmp_path, tmp_path, {})
    found = check(place)
    assert found.interactive == found.headless
    assert "are not in" in found.headless[0]
    assert found.lines == [f"interactive and non-interactive: {found.headless[0]}"]
