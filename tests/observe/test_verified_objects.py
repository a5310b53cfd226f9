"""Git objects read as they hash: a commit's files listed by the gate's own tree parser, in
both object formats, and every object the agent could rewrite checked against its id."""

from __future__ import annotations

import marshal
import shutil
import zlib
from pathlib import Path

import pytest

from completion_claim.errors import ObservationFailed
from completion_claim.observe import repository
from completion_claim.observe.repository import VerifiedObjects, entries_kept_in, object_format_of
from tests.fixtures.projects import CALC, TEST_CALC, git, write_files


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_commits_files_are_listed_as_ls_tree_lists_them(
    tmp_path: Path, object_format: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", f"--object-format={object_format}", "-b", "main")
    write_files(repo, {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "a/b/c.txt": "c\n"})
    (repo / "link").symlink_to("calc.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    commit = git(repo, "rev-parse", "HEAD").strip()
    assert object_format_of(commit) == object_format

    entries = VerifiedObjects(repo, commit, ObservationFailed).entries(commit)

    listed = {}
    for line in git(repo, "ls-tree", "-r", "-z", "HEAD").split("\0"):
        if line:
            meta, path = line.split("\t", 1)
            mode, _, oid = meta.split()
            listed[path.encode()] = (mode, oid)
    assert entries == listed


def test_an_object_rewritten_in_place_or_missing_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_files(repo, {"calc.py": CALC})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    commit = git(repo, "rev-parse", "HEAD").strip()
    blob = git(repo, "rev-parse", "HEAD:calc.py").strip()
    objects = VerifiedObjects(repo, commit, ObservationFailed)
    assert objects.read([blob], b"blob") == {blob: CALC.encode()}

    path = repo / ".git" / "objects" / blob[:2] / blob[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob 4\0evil"))
    with pytest.raises(ObservationFailed, match="does not hash to its id"):
        objects.read([blob], b"blob")
    path.unlink()
    with pytest.raises(ObservationFailed, match="is missing"):
        objects.read([blob], b"blob")
    with pytest.raises(ObservationFailed, match="is a commit, not a blob"):
        objects.read([commit], b"blob")
    with pytest.raises(ObservationFailed, match="not a full commit id"):
        VerifiedObjects(repo, "main", ObservationFailed)


def _committed(repo: Path, files: dict[str, str]) -> str:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_files(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return git(repo, "rev-parse", "HEAD").strip()


def _forget_this_process() -> None:
    repository._ENTRIES.clear()  # what a new process starts with


def test_a_commits_entries_are_kept_for_the_next_process(tmp_path: Path) -> None:
    """A gate reads its base's 100,000 entries once; the next one reads the kept copy, even
    when the object store has been emptied since (an id names one content)."""
    commit = _committed(tmp_path / "repo", {"calc.py": CALC, "tests/test_calc.py": TEST_CALC})
    kept = tmp_path / "kept"
    with entries_kept_in(kept):
        first = VerifiedObjects(tmp_path / "repo", commit, ObservationFailed).entries(commit)
    assert (kept / commit).is_file()

    _forget_this_process()
    shutil.rmtree(tmp_path / "repo" / ".git" / "objects")
    (tmp_path / "repo" / ".git" / "objects").mkdir()
    with entries_kept_in(kept):
        again = VerifiedObjects(tmp_path / "repo", commit, ObservationFailed).entries(commit)

    assert again == first
    assert set(first) == {b"calc.py", b"tests/test_calc.py"}
    _forget_this_process()
    with pytest.raises(ObservationFailed, match="missing"):  # kept nowhere else
        VerifiedObjects(tmp_path / "repo", commit, ObservationFailed).entries(commit)


def test_kept_entries_in_another_layout_are_read_again_from_the_store(tmp_path: Path) -> None:
    commit = _committed(tmp_path / "repo", {"calc.py": CALC})
    kept = tmp_path / "kept"
    kept.mkdir()
    # An older layout (modes as bytes) or a damaged file: not believed, rewritten.
    (kept / commit).write_bytes(marshal.dumps({b"calc.py": (b"100644", "0" * 40)}))
    _forget_this_process()

    with entries_kept_in(kept):
        entries = VerifiedObjects(tmp_path / "repo", commit, ObservationFailed).entries(commit)

    blob = git(tmp_path / "repo", "rev-parse", "HEAD:calc.py").strip()
    assert entries == {b"calc.py": ("100644", blob)}
    _forget_this_process()
    with entries_kept_in(kept):
        assert VerifiedObjects(tmp_path / "repo", commit, ObservationFailed).entries(commit) == (
            entries
        )


def test_kept_entries_share_one_text_a_mode(tmp_path: Path) -> None:
    """A monorepo's 100,000 entries have a few modes: each is one text, so the kept copy writes
    it once and a new process reads back one object, not one an entry."""
    files = {f"m{number}.py": f"VALUE = {number}\n" for number in range(20)}
    commit = _committed(tmp_path / "repo", files | {"run.sh": "#!/bin/sh\n"})
    (tmp_path / "repo" / "run.sh").chmod(0o755)
    git(tmp_path / "repo", "add", "-A")
    git(tmp_path / "repo", "commit", "-qm", "executable")
    commit = git(tmp_path / "repo", "rev-parse", "HEAD").strip()
    kept = tmp_path / "kept"
    _forget_this_process()
    with entries_kept_in(kept):
        VerifiedObjects(tmp_path / "repo", commit, ObservationFailed).entries(commit)
    _forget_this_process()

    with entries_kept_in(kept):
        entries = VerifiedObjects(tmp_path / "repo", commit, ObservationFailed).entries(commit)

    texts = {id(mode) for mode, _ in entries.values()}
    assert {mode for mode, _ in entries.values()} == {"100644", "100755"}
    assert len(texts) == 2
