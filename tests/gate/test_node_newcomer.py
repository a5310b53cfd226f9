"""Node projects as a newcomer sets them up (``claim init``, commit claim.toml, ``claim gate
--start``, ``claim gate``), locked as real projects are: by pnpm, by yarn, by an older mocha's
npm, or not at all. Real node and npm, packages from the registry through the dependency cache
(the machine's shared one for tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from completion_claim.cli import run
from tests.fixtures.node_projects import (
    LOCKFILES,
    PROJECTS,
    node_project,
    shared_dependency_cache,
)
from tests.fixtures.projects import git, make_repo, write_files


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    shared_dependency_cache(state / "completion-claim" / "runs")


def init_and_commit(repo: Path) -> None:
    assert run(["init", "--repo", str(repo)]) == 0
    git(repo, "add", "claim.toml")
    git(repo, "commit", "-qm", "claim init")


def attempt(repo: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> int:
    write_files(repo, files)
    capsys.readouterr()
    return run(["gate", "--repo", str(repo), "--outcome", "Fixed add()."])


@pytest.mark.parametrize("locked", ["mocha-pnpm", "mocha-yarn", "mocha-9"])
def test_a_project_locked_by_pnpm_yarn_or_an_older_mocha_is_refuted_then_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], locked: str
) -> None:
    repo = node_project(tmp_path / "repo", "mocha", locked=locked)
    init_and_commit(repo)
    assert run(["gate", "--repo", str(repo), "--start"]) == 0
    code, right, _, _, _ = PROJECTS["mocha"]

    wrong = attempt(repo, {code: right.replace("a + b", "a * b")}, capsys)
    said = capsys.readouterr().out
    honest = attempt(repo, {code: right}, capsys)

    assert (wrong, honest) == (2, 0), said + capsys.readouterr().out
    assert "adds failed: Expected values to be strictly equal" in said


def test_a_start_without_a_lockfile_says_so_and_exits_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No lockfile pins the dependencies: no run could ever be verified, so the start refuses
    (on stderr, exit 4: the project's set-up), rather than record an error nobody reads."""
    package = (LOCKFILES / "mocha" / "package.json").read_text()
    code, _, wrong, test, text = PROJECTS["mocha"]
    repo = make_repo(tmp_path / "repo", {code: wrong, test: text, "package.json": package})
    init_and_commit(repo)
    assert "note: claim.toml:" in capsys.readouterr().out  # init said it first

    assert run(["gate", "--repo", str(repo), "--start"]) == 4

    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "claim.toml:" in err
    assert "no lockfile" in err
    assert "npm install --package-lock-only" in err
    assert not list((tmp_path / "state").rglob("start/repo.json"))

    lock = json.dumps({"name": "x", "lockfileVersion": 3, "packages": {}})
    write_files(repo, {"package-lock.json": lock})
    git(repo, "add", "package-lock.json")
    git(repo, "commit", "-qm", "lock")
    assert run(["gate", "--repo", str(repo), "--start"]) == 0  # the refusal was the lockfile's


def test_a_failed_install_shows_npms_error_and_its_code_not_its_last_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = node_project(tmp_path / "repo", "mocha")
    lock = json.loads((repo / "package-lock.json").read_text())
    package = json.loads((repo / "package.json").read_text())
    missing = "claim-no-such-package-q7"
    package["devDependencies"][missing] = "1.0.0"
    lock["packages"][""]["devDependencies"][missing] = "1.0.0"
    lock["packages"][f"node_modules/{missing}"] = {
        "version": "1.0.0", "dev": True,
        "resolved": f"https://registry.npmjs.org/{missing}/-/{missing}-1.0.0.tgz",
    }  # fmt: skip
    write_files(repo, {"package.json": json.dumps(package), "package-lock.json": json.dumps(lock)})
    git(repo, "commit", "-qam", "a package the registry does not have")
    init_and_commit(repo)
    assert run(["gate", "--repo", str(repo), "--start"]) == 0

    code, right, _, _, _ = PROJECTS["mocha"]
    assert attempt(repo, {code: right}, capsys) == 1

    said = capsys.readouterr().out
    assert "npm error code E404" in said
    assert f"404 Not Found - GET https://registry.npmjs.org/{missing}" in said
    assert "npm notice" not in said
    assert "A complete log of this run" not in said


def test_mochas_own_error_is_shown_when_it_runs_no_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test file mocha cannot load: mocha ends before any test with its own error, which is
    what the agent must read (not that a report is missing)."""
    repo = node_project(tmp_path / "repo", "mocha")
    init_and_commit(repo)
    assert run(["gate", "--repo", str(repo), "--start"]) == 0
    code, right, _, _, _ = PROJECTS["mocha"]

    broken = attempt(
        repo, {code: right + "\nmodule.exports.add = (a, b) => { return a +;\n"}, capsys
    )

    said = capsys.readouterr().out
    assert broken != 0
    assert "SyntaxError" in said, said


def test_a_start_on_a_yarn_2_lockfile_says_what_to_commit_and_exits_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Yarn 2 and later install differently (Plug'n'Play): refused in one line that says what
    to commit, not left to fail at every run."""
    package = (LOCKFILES / "mocha" / "package.json").read_text()
    berry = '# This file is generated by running "yarn install"\n\n__metadata:\n  version: 8\n'
    code, _, wrong, test, text = PROJECTS["mocha"]
    files = {code: wrong, test: text, "package.json": package, "yarn.lock": berry}
    repo = make_repo(tmp_path / "repo", files)
    init_and_commit(repo)
    capsys.readouterr()

    assert run(["gate", "--repo", str(repo), "--start"]) == 4

    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "yarn.lock is Yarn 2 or later's" in err
    assert "commit a package-lock.json beside it" in err
