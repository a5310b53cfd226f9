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
from completion_claim.observe import repository
from completion_claim.timefmt import parse_time
from tests.fixtures.projects import CALC, CALC_BUGGY, git, make_repo, write_files

# 2026-03-01T12:00:00.123456789Z as nanoseconds since the epoch.
KNOWN_MTIME_NS = 1_772_366_400_123_456_789


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


# --- no agent code runs, nothing hides an edit ----------------------------------------------------

# Each variant leaves calc.py looking unchanged to git commands that filter content, and runs a
# program that leaves MARKER behind when git runs it.
PLANTS = {
    "clean filter in info/attributes": (
        {".git/info/attributes": "* filter=x\n"},
        {"filter.x.clean": "sh -c 'touch {marker}; git show HEAD:%f'"},
    ),
    "process filter": (
        {".git/info/attributes": "* filter=x\n"},
        {"filter.x.process": "sh -c 'touch {marker}'", "filter.x.required": "true"},
    ),
    "textconv in .gitattributes": (
        {".gitattributes": "* diff=x\n"},
        {"diff.x.textconv": "sh -c 'touch {marker}; cat'", "diff.external": "touch {marker}"},
    ),
    "fsmonitor hook": ({}, {"core.fsmonitor": "{hook}"}),
    "attributes file": (
        {".git/agent-attributes": "* filter=x\n"},
        {"core.attributesFile": ".git/agent-attributes", "filter.x.clean": "touch {marker}"},
    ),
}


@pytest.mark.parametrize("included", [False, True], ids=["config", "included config"])
@pytest.mark.parametrize("plant", list(PLANTS))
def test_attack_03_clean_filter_runs_no_agent_code(
    tmp_path: Path, claim: Path, plant: str, included: bool
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    marker = tmp_path / "MARKER"
    hook = tmp_path / "fsmonitor-hook"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    files, settings = PLANTS[plant]
    write_files(repo, files)
    config = repo / ".git" / "agent.cfg" if included else None
    if config is not None:
        git(repo, "config", "include.path", "agent.cfg")
    for key, value in settings.items():
        where = ["--file", str(config)] if config is not None else []
        git(repo, "config", *where, key, value.format(marker=marker, hook=hook))
    write_files(repo, {"calc.py": CALC_BUGGY})

    assert capture(claim, repo) == 0

    assert not marker.exists()
    assert by_target(claim)["calc.py"] == sha256(CALC_BUGGY)


def test_a_harmless_gitattributes_still_records_edits(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {
            ".gitattributes": "*.txt text\n*.py text eol=lf\n",
            "notes.txt": "a\n",
            "kept.txt": "unchanged\n",
            "calc.py": CALC,
        },
    )
    write_files(repo, {"notes.txt": "b\n", "calc.py": CALC_BUGGY, "same.txt": "new\n"})

    assert capture(claim, repo) == 0

    assert by_target(claim) == {
        "calc.py": sha256(CALC_BUGGY),
        "notes.txt": sha256("b\n"),
        "same.txt": sha256("new\n"),
    }


@pytest.mark.parametrize(
    "hide",
    [
        ("update-index", "--assume-unchanged", "calc.py"),
        ("update-index", "--skip-worktree", "calc.py"),
        ("rm", "-q", "--cached", "calc.py"),
    ],
    ids=["assume-unchanged", "skip-worktree", "untracked and excluded"],
)
def test_index_flags_and_ignore_rules_cannot_hide_an_edit(
    tmp_path: Path, claim: Path, hide: tuple[str, ...]
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    git(repo, *hide)
    write_files(repo, {".git/info/exclude": "calc.py\n", "calc.py": CALC_BUGGY})

    assert capture(claim, repo) == 0

    assert by_target(claim) == {"calc.py": sha256(CALC_BUGGY)}


def test_a_file_turned_into_a_folder_is_deleted_and_a_nested_repository_is_no_file(
    tmp_path: Path, claim: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"tool": "#!/bin/sh\n"})
    (repo / "tool").unlink()
    write_files(repo, {"tool/main.py": "print()\n"})
    make_repo(repo / "vendor" / "lib", {"lib.py": "X = 1\n"})

    assert capture(claim, repo) == 0

    assert by_target(claim) == {"tool": "deleted", "tool/main.py": sha256("print()\n")}


def test_a_sha256_repository_records_only_what_changed(tmp_path: Path, claim: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256")
    write_files(repo, {"keep.py": "same\n", "calc.py": CALC})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    write_files(repo, {"calc.py": CALC_BUGGY})

    assert capture(claim, repo) == 0

    assert by_target(claim) == {"calc.py": sha256(CALC_BUGGY)}


def test_core_worktree_cannot_move_the_capture(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "outer" / "repo", {"calc.py": CALC})
    git(repo, "config", "core.worktree", "../..")  # relative to .git: the folder above the repo
    write_files(repo, {"calc.py": CALC_BUGGY})

    assert capture(claim, repo) == 5

    err = capsys.readouterr().err
    assert "core.worktree" in err
    assert err.count("\n") == 1
    assert mutations(claim) == []


def test_git_variables_of_the_caller_do_not_redirect_the_capture(
    tmp_path: Path, claim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = make_repo(tmp_path / "decoy", {"calc.py": CALC_BUGGY})
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    write_files(repo, {"calc.py": CALC_BUGGY})
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))

    assert capture(claim, repo) == 0

    assert by_target(claim) == {"calc.py": sha256(CALC_BUGGY)}


def test_a_linked_work_tree_whose_git_is_a_file_is_captured(tmp_path: Path, claim: Path) -> None:
    main = make_repo(tmp_path / "main", {"calc.py": CALC})
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", str(linked))
    assert (linked / ".git").is_file()
    write_files(linked, {"calc.py": CALC_BUGGY})

    assert capture(claim, linked) == 0

    assert by_target(claim) == {"calc.py": sha256(CALC_BUGGY)}


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_work_tree_owned_by_another_user_is_read(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    write_files(repo, {"calc.py": CALC_BUGGY})
    for folder, _, names in os.walk(repo):  # as the agent's own user would leave it
        for path in [folder, *(os.path.join(folder, name) for name in names)]:
            os.lchown(path, 4242, 4242)

    assert capture(claim, repo) == 0

    assert by_target(claim) == {"calc.py": sha256(CALC_BUGGY)}


def test_a_fifo_where_git_reads_a_file_cannot_hang_the_capture(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    os.mkfifo(repo / ".gitignore")  # git opens it to read the ignore rules, and waits for ever
    monkeypatch.setattr(repository, "GIT_TIMEOUT_S", 1.0)

    assert capture(claim, repo) == 5

    assert "git ls-files did not finish in 1 s" in capsys.readouterr().err
    assert mutations(claim) == []


# --- symbolic links -------------------------------------------------------------------------------


def link_out(repo: Path, outside: Path) -> None:
    (repo / "calc.py").symlink_to(outside)


def link_up(repo: Path, outside: Path) -> None:
    (repo / "calc.py").symlink_to(Path("..") / outside.name)


def link_chain(repo: Path, outside: Path) -> None:
    (repo / "hop.py").symlink_to(outside)
    (repo / "calc.py").symlink_to("hop.py")


def link_through_outside(repo: Path, outside: Path) -> None:
    """Ends inside the repository, by way of a link outside it the agent can retarget."""
    write_files(repo, {"real.py": CALC})
    hop = outside.with_name("hop.py")
    hop.symlink_to(repo / "real.py")
    (repo / "calc.py").symlink_to(hop)


def link_folder(repo: Path, outside: Path) -> None:
    (repo / "pkg").symlink_to(outside.parent)


def link_into_git(repo: Path, outside: Path) -> None:
    (repo / "calc.py").symlink_to(".git/config")


@pytest.mark.parametrize(
    "plant",
    [link_out, link_up, link_chain, link_through_outside, link_folder, link_into_git],
    ids=["absolute", "dot-dot", "chain", "through outside", "folder", "into .git"],
)
def test_attack_05_symlink_out_of_repo_is_refused_by_capture(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], plant: Any
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY})
    outside = tmp_path / "outside.py"
    outside.write_text(CALC)
    (repo / "calc.py").unlink()
    plant(repo, outside)

    assert capture(claim, repo) == 5

    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "symbolic link" in err
    assert "pkg" in err if plant is link_folder else "calc.py" in err
    assert mutations(claim) == []


def test_a_link_inside_the_repository_is_recorded_with_its_target_content(
    tmp_path: Path, claim: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"src/real.py": CALC})
    (repo / "calc.py").symlink_to("src/real.py")
    (repo / "lib").symlink_to("src")

    assert capture(claim, repo) == 0

    assert by_target(claim) == {
        "calc.py": f"symlink:src/real.py:{sha256(CALC)}",
        "lib": "symlink:src",
    }

    write_files(repo, {"src/real.py": CALC_BUGGY})

    assert capture(claim, repo) == 0

    later = {m["target"]: m["digest"] for m in mutations(claim)[2:]}
    assert later == {
        "calc.py": f"symlink:src/real.py:{sha256(CALC_BUGGY)}",
        "src/real.py": sha256(CALC_BUGGY),
    }


def test_a_file_replaced_by_a_link_to_the_same_text_is_a_change(
    tmp_path: Path, claim: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {"other.py": "x\n", "calc.py": "other.py"})
    (repo / "calc.py").unlink()
    (repo / "calc.py").symlink_to("other.py")  # git would hash the same bytes: the link text

    assert capture(claim, repo) == 0

    assert by_target(claim) == {"calc.py": f"symlink:other.py:{sha256('x' + chr(10))}"}


# --- the claim's own files ------------------------------------------------------------------------


def test_the_claim_and_its_temporary_files_are_never_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a0\n"})
    claim = repo / "notes" / "claim.json"
    claim.parent.mkdir()
    assert run(["new", str(claim), "--task-id", "t", "--outcome", "done"]) == 0
    write_files(
        repo,
        {
            "notes/.claim.json.k2j4x_9a.tmp": "left by an interrupted write\n",
            "notes/.other.json.k2j4x_9a.tmp": "not the claim's\n",
            ".claim.json.k2j4x_9a.tmp": "beside another folder's claim.json\n",
            "a.txt": "a1\n",
        },
    )

    assert capture(claim, repo) == 0

    assert sorted(by_target(claim)) == [
        ".claim.json.k2j4x_9a.tmp",
        "a.txt",
        "notes/.other.json.k2j4x_9a.tmp",
    ]


def test_attack_97_a_file_is_read_below_the_work_tree_only_never_through_a_link(
    tmp_path: Path,
) -> None:
    """``open_beneath`` opens a folder at a time without following a link: a path below a link
    is not there, wherever the link leads; a link at the end is refused; the file is read."""
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("x = 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "calc.py").write_text("secret\n")
    (root / "away").symlink_to(tmp_path / "outside")
    (root / "alias.py").symlink_to("pkg/calc.py")
    top = os.fsencode(root)

    with os.fdopen(repository.open_beneath(top, b"pkg/calc.py"), "rb") as handle:
        assert handle.read() == b"x = 1\n"
    for below_a_link in (b"away/calc.py", b"pkg/../away/calc.py", b"/etc/passwd"):
        with pytest.raises(FileNotFoundError):
            repository.open_beneath(top, below_a_link)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        repository.open_beneath(top, b"alias.py")
