"""``claim capture-git``: mutations captured from real git repositories."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run
from completion_claim.timefmt import parse_time
from tests.fixtures.projects import git, make_repo, write_files

# 2026-03-01T12:00:00.123456789Z as nanoseconds since the epoch.
KNOWN_MTIME_NS = 1_772_366_400_123_456_789


@pytest.fixture
def claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "claim.json"
    assert run(["new", str(path), "--task-id", "t-1", "--outcome", "done"]) == 0
    capsys.readouterr()
    return path


def capture(claim: Path, repo: Path, *args: str) -> int:
    return run(["capture-git", str(claim), "--repo", str(repo), *args])


def mutations(claim: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(claim.read_text())["mutations"]
    return items


def by_target(claim: Path) -> dict[str, str]:
    return {m["target"]: m["digest"] for m in mutations(claim)}


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_modified_added_untracked_and_deleted_files_are_captured(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"keep.txt": "same\n", "edit.txt": "old\n", "gone.txt": "bye\n", ".gitignore": "*.log\n"},
    )
    write_files(repo, {"edit.txt": "new\n", "staged.txt": "staged\n", "loose.txt": "loose\n"})
    git(repo, "add", "staged.txt")
    (repo / "gone.txt").unlink()
    write_files(repo, {"debug.log": "ignored\n", "pkg/__pycache__/m.cpython-311.pyc": "bytes"})
    os.utime(repo / "edit.txt", ns=(KNOWN_MTIME_NS, KNOWN_MTIME_NS))
    before = datetime.now(UTC)

    assert capture(claim, repo) == 0

    after = datetime.now(UTC)
    recorded = {m["target"]: m for m in mutations(claim)}
    assert sorted(recorded) == ["edit.txt", "gone.txt", "loose.txt", "staged.txt"]
    assert {m["kind"] for m in recorded.values()} == {"file_write"}
    assert [m["id"] for m in mutations(claim)] == ["m1", "m2", "m3", "m4"]
    assert recorded["edit.txt"]["digest"] == sha256("new\n")
    assert recorded["staged.txt"]["digest"] == sha256("staged\n")
    assert recorded["loose.txt"]["digest"] == sha256("loose\n")
    assert recorded["gone.txt"]["digest"] == "deleted"
    # the file's own modification time, rounded up to the microsecond
    assert recorded["edit.txt"]["at"] == "2026-03-01T12:00:00.123457Z"
    assert before <= parse_time(recorded["gone.txt"]["at"], "") <= after
    out = capsys.readouterr().out
    assert f"recorded m1: file_write edit.txt {sha256('new' + chr(10))}" in out
    assert "recorded m2: file_write gone.txt deleted" in out


def test_odd_file_names_come_through_intact(tmp_path: Path, claim: Path) -> None:
    names = [
        "with space.txt",
        "ünïcödé ✓.txt",
        "dir with space/nested file.py",
        "tab\there.txt",
        "new\nline.txt",
        'quote"and\\backslash.txt',
        "-starts-with-dash.txt",
    ]
    repo = make_repo(tmp_path / "repo", {"base.txt": "base\n"})
    write_files(repo, {name: f"content of {name}\n" for name in names})

    assert capture(claim, repo) == 0

    assert by_target(claim) == {name: sha256(f"content of {name}\n") for name in names}


def test_running_again_records_only_what_moved_on(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a0\n", "b.txt": "b0\n"})
    write_files(repo, {"a.txt": "a1\n", "b.txt": "b1\n", "c.txt": "c1\n"})
    assert capture(claim, repo) == 0
    assert len(mutations(claim)) == 3
    capsys.readouterr()

    assert capture(claim, repo) == 0

    assert len(mutations(claim)) == 3
    assert "nothing to record" in capsys.readouterr().out

    write_files(repo, {"a.txt": "a2\n"})
    git(repo, "checkout", "--", "b.txt")  # back to the base: still a change to what was recorded
    (repo / "c.txt").unlink()

    assert capture(claim, repo) == 0

    later = {m["target"]: m["digest"] for m in mutations(claim)[3:]}
    assert later == {"a.txt": sha256("a2\n"), "b.txt": sha256("b0\n"), "c.txt": "deleted"}
    assert [m["id"] for m in mutations(claim)[3:]] == ["m4", "m5", "m6"]

    assert capture(claim, repo) == 0

    assert len(mutations(claim)) == 6


def test_the_claim_file_inside_the_repository_is_not_a_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a0\n"})
    claim = repo / "claim.json"
    assert run(["new", str(claim), "--task-id", "t", "--outcome", "done"]) == 0
    write_files(repo, {"a.txt": "a1\n"})

    assert capture(claim, repo) == 0
    assert capture(claim, repo) == 0

    assert by_target(claim) == {"a.txt": sha256("a1\n")}


def test_base_selects_the_revision_changes_are_measured_against(
    tmp_path: Path, claim: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a0\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    write_files(repo, {"b.txt": "committed later\n"})
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "agent work")

    assert capture(claim, repo, "--base", base) == 0

    assert by_target(claim) == {"b.txt": sha256("committed later\n")}


def test_a_repository_without_commits_records_every_file(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "sub/b.txt": "b\n"}, commit=False)

    assert capture(claim, repo) == 0

    assert sorted(by_target(claim)) == ["a.txt", "sub/b.txt"]


def test_a_subfolder_of_the_repository_works_and_targets_stay_root_relative(
    tmp_path: Path, claim: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"src/a.txt": "a0\n"})
    write_files(repo, {"src/a.txt": "a1\n"})

    assert capture(claim, repo / "src") == 0

    assert list(by_target(claim)) == ["src/a.txt"]


@pytest.mark.parametrize(
    ("base", "problem"),
    [("no-such-branch", "--base: no commit 'no-such-branch'"), ("--output=x", "not a revision")],
)
def test_a_bad_base_is_a_usage_error(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], base: str, problem: str
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})

    assert capture(claim, repo, "--base", base) == 4

    assert problem in capsys.readouterr().err
    assert mutations(claim) == []


def test_a_folder_outside_git_is_a_usage_error(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # wherever the temp folder is

    assert capture(claim, plain) == 4

    assert "is not inside a git repository" in capsys.readouterr().err
    assert mutations(claim) == []
