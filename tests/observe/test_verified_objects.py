"""Git objects read as they hash: a commit's files listed by the gate's own tree parser, in
both object formats, and every object the agent could rewrite checked against its id."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from completion_claim.errors import ObservationFailed
from completion_claim.observe.repository import VerifiedObjects, object_format_of
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
