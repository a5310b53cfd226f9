"""The operator's mirror and its change cache: a file is read again whenever its stat cannot
vouch for it, whatever the agent does to hide the change (attacks 75 to 77, 79)."""

from __future__ import annotations

import hashlib
import marshal
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from completion_claim.errors import ObservationFailed
from completion_claim.observe import mirror as mirror_module
from completion_claim.observe import runners
from completion_claim.observe.mirror import RACY_NS, Limits, Mirror, file_system_of
from completion_claim.observe.runners import CONFIGURATION, PROTECTED, is_runner_protected
from tests.fixtures.projects import make_repo

ORIGINAL = "def add(a, b):\n    return a + b\n"
SAME_SIZE = "def add(a, b):\n    return a - b\n"


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def aged(root: Path, files: dict[str, str]) -> Path:
    """A repository whose files are older than the racy window, so the cache may vouch for
    them: only then does any attack on it mean something."""
    repo = make_repo(root, files)
    time.sleep(RACY_NS / 1e9 + 0.2)
    return repo


def one_pass(
    repo: Path, folder: Path, paths: list[str], before_scan: Any = None
) -> tuple[dict[str, str | None], list[str]]:
    """Each path's digest through the mirror, and the paths it read from the work tree;
    ``before_scan`` is called with the pass before it scans."""
    with Mirror.kept(folder, repo, None, "sha1") as mirror:
        if before_scan is not None:
            before_scan(mirror)
        scanned = mirror.scan([path.encode() for path in paths], ObservationFailed)
        digests = {path: scanned.digests.get(path.encode()) for path in paths}
        mirror.keep({path.encode() for path in paths})
    return digests, sorted(rel.decode() for rel in mirror.read_paths)


def rewrite_keeping_mtime(path: Path, text: str) -> None:
    """Same size, and the modification time put back: only the ctime moves."""
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def counted_lstats(repo: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names this process ``lstat``s below ``repo`` from now on, in order."""
    stated: list[str] = []
    lstat = os.lstat

    def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if os.fsdecode(path).startswith(str(repo)):
            stated.append(os.path.basename(os.fsdecode(path)))
        return lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counted)
    return stated


@pytest.fixture(params=["alone", "with a helper"])
def stat_pass(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Who stats the work tree: this process alone, or with a helper (``_Helper``), given here
    to every pass over an index, as to a large tree's. An attack fails either way."""
    if request.param == "with a helper":
        monkeypatch.setattr(mirror_module, "_SPLIT_AT", 0)
    return str(request.param)


def test_an_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL})
    first = one_pass(repo, tmp_path / "mirror", ["calc.py"])

    again = one_pass(repo, tmp_path / "mirror", ["calc.py"])

    assert first == ({"calc.py": sha256(ORIGINAL)}, ["calc.py"])
    assert again == ({"calc.py": sha256(ORIGINAL)}, [])
    assert (tmp_path / "mirror" / "tree" / "calc.py").read_text() == ORIGINAL


def test_a_file_written_within_the_racy_window_is_read_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": ORIGINAL})
    one_pass(repo, tmp_path / "mirror", ["calc.py"])

    assert one_pass(repo, tmp_path / "mirror", ["calc.py"])[1] == ["calc.py"]


def test_attack_75_a_change_with_its_mtime_put_back_is_read(tmp_path: Path, stat_pass: str) -> None:
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL})
    one_pass(repo, tmp_path / "mirror", ["calc.py"])

    rewrite_keeping_mtime(repo / "calc.py", SAME_SIZE)

    assert one_pass(repo, tmp_path / "mirror", ["calc.py"]) == (
        {"calc.py": sha256(SAME_SIZE)},
        ["calc.py"],
    )
    assert (tmp_path / "mirror" / "tree" / "calc.py").read_text() == SAME_SIZE


def test_attack_76_a_hard_link_or_a_symlink_makes_two_paths_one_file(
    tmp_path: Path, stat_pass: str
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": ORIGINAL})
    os.link(repo / "calc.py", repo / "twin.py")
    os.symlink("calc.py", repo / "alias.py")
    time.sleep(RACY_NS / 1e9 + 0.2)
    paths = ["alias.py", "calc.py", "twin.py"]
    one_pass(repo, tmp_path / "mirror", paths)

    rewrite_keeping_mtime(repo / "twin.py", SAME_SIZE)  # through one name: the inode changes

    digests, read = one_pass(repo, tmp_path / "mirror", paths)
    assert digests == {
        "alias.py": f"symlink:calc.py:{sha256(SAME_SIZE)}",
        "calc.py": sha256(SAME_SIZE),
        "twin.py": sha256(SAME_SIZE),
    }
    assert read == paths
    assert (tmp_path / "mirror" / "tree" / "calc.py").read_text() == SAME_SIZE
    assert os.readlink(tmp_path / "mirror" / "tree" / "alias.py") == "calc.py"


def test_attack_77_content_the_cache_saw_before_comes_back(tmp_path: Path, stat_pass: str) -> None:
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL})
    one_pass(repo, tmp_path / "mirror", ["calc.py"])
    rewrite_keeping_mtime(repo / "calc.py", SAME_SIZE)
    assert one_pass(repo, tmp_path / "mirror", ["calc.py"])[0] == {"calc.py": sha256(SAME_SIZE)}

    rewrite_keeping_mtime(repo / "calc.py", ORIGINAL)  # A -> B -> A, times as at first

    assert one_pass(repo, tmp_path / "mirror", ["calc.py"]) == (
        {"calc.py": sha256(ORIGINAL)},
        ["calc.py"],
    )
    assert (tmp_path / "mirror" / "tree" / "calc.py").read_text() == ORIGINAL


def test_attack_94_a_folder_swapped_for_a_link_to_where_it_went_is_not_vouched_for(
    tmp_path: Path, stat_pass: str
) -> None:
    """``mv pkg moved && ln -s moved pkg``: ``pkg/calc.py`` stats as the very file the index
    recorded (the same inode, its ctime untouched by its folder's rename), but git sees a link
    where the folder was: the path is no longer in the work tree."""
    repo = aged(tmp_path / "repo", {"pkg/calc.py": ORIGINAL})
    one_pass(repo, tmp_path / "mirror", ["pkg/calc.py"])
    before = os.lstat(repo / "pkg" / "calc.py")

    (repo / "pkg").rename(repo / "moved")
    (repo / "pkg").symlink_to("moved")

    after = os.lstat(repo / "pkg" / "calc.py")  # through the link: the attack is real
    assert (after.st_ino, after.st_ctime_ns) == (before.st_ino, before.st_ctime_ns)
    assert one_pass(repo, tmp_path / "mirror", ["pkg/calc.py"]) == ({"pkg/calc.py": None}, [])


def test_attack_95_a_path_kept_without_a_key_is_not_vouched_for_once_it_is_gone(
    tmp_path: Path, stat_pass: str
) -> None:
    """A link, and a file written within the racy window, are kept with no key; deleted, they
    cannot be stat'ed, and "no key now" must not match "no key kept": the deletion is seen
    (the gate would otherwise run the tests on the copy of a file the agent removed)."""
    repo = make_repo(tmp_path / "repo", {"calc.py": ORIGINAL})
    os.symlink("calc.py", repo / "alias.py")
    paths = ["alias.py", "calc.py"]
    first, _ = one_pass(repo, tmp_path / "mirror", paths)  # calc.py: too fresh to be keyed
    assert first == {"alias.py": f"symlink:calc.py:{sha256(ORIGINAL)}",
                     "calc.py": sha256(ORIGINAL)}  # fmt: skip

    (repo / "alias.py").unlink()
    (repo / "calc.py").unlink()

    assert one_pass(repo, tmp_path / "mirror", paths) == ({"alias.py": None, "calc.py": None}, [])


def test_a_file_gone_from_the_work_tree_leaves_the_others_vouched_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stat that fails (``rm`` of a file git still lists) is the one path's: every other key
    stays beside its own path, so no other file is looked at again (in a monorepo, each path
    after the gone one would otherwise cost a second ``lstat``, one at a time)."""
    files = {f"m{number}.py": f"VALUE = {number}\n" for number in range(6)}
    repo = aged(tmp_path / "repo", files)
    paths = sorted(files)
    first, _ = one_pass(repo, tmp_path / "mirror", paths)
    (repo / "m2.py").unlink()
    stated = counted_lstats(repo, monkeypatch)
    assert one_pass(repo, tmp_path / "mirror", paths) == (first | {"m2.py": None}, [])
    # The batch, then each of its paths alone (which names the one that failed), then the
    # gone one looked at: nothing else.
    assert sorted(stated) == sorted([*paths[:3], *paths, "m2.py"])


def test_attack_95_a_file_dated_past_2262_is_read_at_every_pass(
    tmp_path: Path, stat_pass: str
) -> None:
    """A modification time the cache key cannot hold (past 2262, nanoseconds overflow 64 bits)
    is set with ``touch -d 2300-01-01``: the file is kept with no key, and read again at every
    pass, so a new content under the same far date is seen."""
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL})
    far = 10_413_792_000.0  # 2300-01-01T00:00:00Z
    os.utime(repo / "calc.py", (far, far))
    if os.stat(repo / "calc.py").st_mtime_ns < 1 << 63:
        pytest.fail("this file system cannot hold a date past 2262: the attack needs one")
    assert one_pass(repo, tmp_path / "mirror", ["calc.py"])[0] == {"calc.py": sha256(ORIGINAL)}

    (repo / "calc.py").write_text(SAME_SIZE)
    os.utime(repo / "calc.py", (far, far))

    assert one_pass(repo, tmp_path / "mirror", ["calc.py"]) == (
        {"calc.py": sha256(SAME_SIZE)},
        ["calc.py"],
    )
    assert (tmp_path / "mirror" / "tree" / "calc.py").read_text() == SAME_SIZE


def mapped_passes(repo: Path, folder: Path) -> tuple[dict[str, str | None], list[str]]:
    """``calc.py`` rewritten through a shared mapping the agent keeps open: once to SAME_SIZE
    (its ctime moves: the page was clean), a pass that reads it after the racy window, then to
    ORIGINAL through the now dirty page; what the next pass finds."""
    with open(repo / "calc.py", "r+b") as handle:
        os.fsync(handle.fileno())  # written back: the next write dirties a clean page
        with mmap.mmap(handle.fileno(), 0) as mapped:
            mapped[:] = SAME_SIZE.encode()
            time.sleep(RACY_NS / 1e9 + 0.2)
            assert one_pass(repo, folder, ["calc.py"])[0] == {"calc.py": sha256(SAME_SIZE)}
            mapped[:] = ORIGINAL.encode()
    assert (repo / "calc.py").read_text() == ORIGINAL
    return one_pass(repo, folder, ["calc.py"])


def test_attack_96_a_write_through_a_shared_mapping_is_read(tmp_path: Path, stat_pass: str) -> None:
    """A write to a page already dirty moves no time until the page is written back: the pass
    writes the file system back before it stats, so the write after it moves the ctime."""
    repo = make_repo(tmp_path / "repo", {"calc.py": ORIGINAL})
    assert file_system_of(os.stat(repo).st_dev) in mirror_module.KEYED_FILE_SYSTEMS

    assert mapped_passes(repo, tmp_path / "mirror") == ({"calc.py": sha256(ORIGINAL)}, ["calc.py"])


def test_attack_96_on_a_file_system_that_never_writes_back_no_stat_vouches(tmp_path: Path) -> None:
    """tmpfs writes nothing back: a write through a mapping moves no time, ever. There every
    file is read at every pass."""
    shm = Path("/dev/shm")  # the machine's tmpfs: the case under test
    if not shm.is_dir() or file_system_of(os.stat(shm).st_dev) != "tmpfs":
        pytest.fail("this test needs the tmpfs at /dev/shm")
    with tempfile.TemporaryDirectory(dir=shm) as folder:
        repo = make_repo(Path(folder) / "repo", {"calc.py": ORIGINAL})

        assert mapped_passes(repo, tmp_path / "mirror") == (
            {"calc.py": sha256(ORIGINAL)},
            ["calc.py"],
        )
        assert one_pass(repo, tmp_path / "mirror", ["calc.py"])[1] == ["calc.py"]


def test_attack_96_a_file_on_a_mount_inside_the_work_tree_is_read_at_every_pass(
    tmp_path: Path,
) -> None:
    """A folder of the work tree mounted from elsewhere (a tmpfs, a FUSE daemon's files): its
    files are on another device than the root's, and no stat of theirs is kept."""
    repo = make_repo(tmp_path / "repo", {"calc.py": ORIGINAL})
    (repo / "mounted").mkdir()
    code = f"""
import subprocess, sys, time
sys.path[:0] = {sys.path!r}
subprocess.run(["mount", "-t", "tmpfs", "tmpfs", {str(repo / "mounted")!r}], check=True)
open({str(repo / "mounted" / "m.py")!r}, "w").write("VALUE = 1\\n")
from tests.observe.test_mirror import one_pass, RACY_NS
from pathlib import Path
time.sleep(RACY_NS / 1e9 + 0.2)
paths = ["calc.py", "mounted/m.py"]
one_pass(Path({str(repo)!r}), Path({str(tmp_path / "mirror")!r}), paths)
print(one_pass(Path({str(repo)!r}), Path({str(tmp_path / "mirror")!r}), paths)[1])
"""
    own = ["-m"] if os.geteuid() == 0 else ["-U", "-r", "-m"]
    done = subprocess.run(["unshare", *own, sys.executable, "-c", code], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "['mounted/m.py']"


def test_attack_97_a_folder_swapped_for_a_link_after_its_check_is_not_read_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stat_pass: str
) -> None:
    """The folder check (attack 94) and the read are two steps: a folder swapped for a link
    between them, to a place outside the work tree the gate can read (the operator's own
    files), must not have that place's file copied as the tree's, for the tests to read."""
    repo = make_repo(tmp_path / "repo", {"pkg/calc.py": ORIGINAL})
    outside = tmp_path / "operator"
    outside.mkdir()
    (outside / "calc.py").write_text("TOKEN = 'the operator's'\n")
    shutil.rmtree(repo / "pkg")
    (repo / "pkg").symlink_to(outside)
    monkeypatch.setattr(Mirror, "_real_folder", lambda _mirror, _folder: True)  # checked before

    assert one_pass(repo, tmp_path / "mirror", ["pkg/calc.py"]) == ({"pkg/calc.py": None}, [])
    assert not (tmp_path / "mirror" / "tree" / "pkg").exists()


def test_attack_79_a_mirror_taken_from_another_repository_is_not_trusted(tmp_path: Path) -> None:
    theirs = aged(tmp_path / "theirs", {"calc.py": SAME_SIZE})
    ours = make_repo(tmp_path / "ours", {"calc.py": ORIGINAL})
    one_pass(theirs, tmp_path / "their-mirror", ["calc.py"])
    shutil.copytree(tmp_path / "their-mirror", tmp_path / "mirror")

    assert one_pass(ours, tmp_path / "mirror", ["calc.py"]) == (
        {"calc.py": sha256(ORIGINAL)},
        ["calc.py"],
    )
    assert (tmp_path / "mirror" / "tree" / "calc.py").read_text() == ORIGINAL


def test_a_pass_that_died_changing_the_tree_leaves_no_index_and_the_next_starts_afresh(
    tmp_path: Path,
) -> None:
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL, "old.py": "x = 1\n"})
    one_pass(repo, tmp_path / "mirror", ["calc.py", "old.py"])
    (repo / "calc.py").write_text(SAME_SIZE)
    try:
        with Mirror.kept(tmp_path / "mirror", repo, None, "sha1") as mirror:
            mirror.scan([b"calc.py"], ObservationFailed)
            raise RuntimeError("killed")
    except RuntimeError:
        pass

    assert not (tmp_path / "mirror" / "index").exists()
    assert one_pass(repo, tmp_path / "mirror", ["calc.py"])[1] == ["calc.py"]
    assert sorted(os.listdir(tmp_path / "mirror" / "tree")) == ["calc.py"]


@pytest.mark.parametrize(
    "written",
    [
        pytest.param(lambda index: b"", id="empty"),
        pytest.param(lambda index: index[:40], id="cut short"),
        pytest.param(lambda index: b"\xff" * 8 + index[8:], id="a head longer than the file"),
        pytest.param(lambda index: marshal.dumps(("an index", "of version 4")), id="version 4"),
    ],
)
def test_an_index_file_that_is_no_index_is_not_used(
    tmp_path: Path, stat_pass: str, written: Any
) -> None:
    """Bytes that hold no index of this tree (a file cut short by a full disk, one written by
    an older version) vouch for nothing: every file is read again, and nothing is refused."""
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL})
    one_pass(repo, tmp_path / "mirror", ["calc.py"])
    index = tmp_path / "mirror" / "index"
    index.write_bytes(written(index.read_bytes()))

    assert one_pass(repo, tmp_path / "mirror", ["calc.py"]) == (
        {"calc.py": sha256(ORIGINAL)},
        ["calc.py"],
    )


def test_a_pass_that_changes_nothing_writes_no_index(tmp_path: Path) -> None:
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL})
    one_pass(repo, tmp_path / "mirror", ["calc.py"])
    index = tmp_path / "mirror" / "index"
    before = index.stat()

    assert one_pass(repo, tmp_path / "mirror", ["calc.py"]) == ({"calc.py": sha256(ORIGINAL)}, [])
    assert (index.stat().st_ino, index.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_what_is_no_longer_wanted_leaves_the_mirror_with_its_folders(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": ORIGINAL, "pkg/deep/mod.py": "x = 1\n"})
    one_pass(repo, tmp_path / "mirror", ["calc.py", "pkg/deep/mod.py"])

    one_pass(repo, tmp_path / "mirror", ["calc.py"])

    assert sorted(os.listdir(tmp_path / "mirror" / "tree")) == ["calc.py"]


def test_a_second_pass_waits_for_the_one_holding_the_mirror(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": ORIGINAL})
    order: list[str] = []
    first = Mirror.kept(tmp_path / "mirror", repo, None, "sha1").__enter__()

    def second() -> None:
        with Mirror.kept(tmp_path / "mirror", repo, None, "sha1"):
            order.append("second")

    waiting = threading.Thread(target=second)
    waiting.start()
    time.sleep(0.3)
    order.append("first leaves")
    first.__exit__(None, None, None)
    waiting.join()

    assert order == ["first leaves", "second"]


def test_each_paths_kind_is_kept_for_the_next_process(tmp_path: Path) -> None:
    """Whether a path is protected is worked out once a path, not once a stop: the kinds the
    index keeps are the ones the next process starts from."""
    repo = aged(tmp_path / "repo", {"calc.py": ORIGINAL, "pytest.ini": "[pytest]\n"})
    with Mirror.kept(tmp_path / "mirror", repo, None, "sha1") as mirror:
        mirror.scan([b"calc.py", b"pytest.ini"], ObservationFailed)
        assert is_runner_protected(b"pytest.ini")
        assert not is_runner_protected(b"calc.py")

    runners._KINDS.clear()  # a new process
    with Mirror.kept(tmp_path / "mirror", repo, None, "sha1"):
        assert runners._KINDS == {b"calc.py": 0, b"pytest.ini": PROTECTED | CONFIGURATION}


def test_kinds_kept_under_other_rules_are_not_believed(tmp_path: Path) -> None:
    repo = aged(tmp_path / "repo", {"tests/test_kept_kind.py": ORIGINAL})
    one_pass(repo, tmp_path / "mirror", ["tests/test_kept_kind.py"])
    index = tmp_path / "mirror" / "index"
    head, rest = (mirror_module.index_part(index.read_bytes(), which) for which in (0, 1))
    assert head is not None
    assert rest is not None
    # An index kept by other code (an upgrade, an edit) that took the test file for code.
    assert head[5] == [b"tests/test_kept_kind.py"]
    head, rest = (*head[:4], "0" * 64, head[5]), (*rest[:3], bytes([0]))
    index.write_bytes(mirror_module.index_file(head, rest))
    runners._KINDS.clear()

    with Mirror.kept(tmp_path / "mirror", repo, None, "sha1"):
        assert is_runner_protected(b"tests/test_kept_kind.py")


def test_the_size_limits_hold_for_files_the_cache_vouches_for(tmp_path: Path) -> None:
    """Sizes come from the cache's keys when no file is read: a file or a tree over its limit
    is refused all the same."""
    repo = aged(tmp_path / "repo", {"big.py": "x" * 100, "small.py": "y" * 50})
    one_pass(repo, tmp_path / "mirror", ["big.py", "small.py"])
    paths = [b"small.py", b"big.py"]

    with Mirror.kept(tmp_path / "mirror", repo, None, "sha1") as mirror:
        with pytest.raises(ObservationFailed, match=r"^big\.py is 100 bytes, over the 99 "):
            mirror.scan(paths, ObservationFailed, Limits(99, 1000, lambda rel: None))
        assert mirror.read_paths == []
    with Mirror.kept(tmp_path / "mirror", repo, None, "sha1") as mirror:
        with pytest.raises(ObservationFailed, match="over the 149 bytes a run copies"):
            mirror.scan(paths, ObservationFailed, Limits(1000, 149, lambda rel: None))
        assert mirror.read_paths == []
    with Mirror.kept(tmp_path / "mirror", repo, None, "sha1") as mirror:
        found = mirror.scan(paths, ObservationFailed, Limits(100, 150, lambda rel: None))
        assert sorted(found.digests) == sorted(paths)


def _indexed_large_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """Ten files, taken for a large tree (a pass over their index is given a helper), and
    indexed by a first pass."""
    monkeypatch.setattr(mirror_module, "_SPLIT_AT", 4)
    names = [f"m{number}.py" for number in range(10)]
    repo = aged(tmp_path / "repo", dict.fromkeys(names, ORIGINAL))
    one_pass(repo, tmp_path / "mirror", names)
    return repo, names


def _rewritten(names: list[str], *changed: str) -> dict[str, str | None]:
    """The digests of ``names`` when ``changed`` were rewritten to SAME_SIZE."""
    return {name: sha256(SAME_SIZE if name in changed else ORIGINAL) for name in names}


def _helper_done(mirror: Mirror) -> None:
    """Waits until the pass's helper has stat'ed every path of the index."""
    helper = mirror._helper
    assert helper is not None
    ends = time.monotonic() + 60
    while mirror_module._SLOT.unpack_from(helper._shared, mirror_module._FRONTIER)[0] != 0:
        assert time.monotonic() < ends, "the helper never got through the listing"
        time.sleep(0.01)


def test_a_helper_stats_the_tree_while_the_pass_loads_and_this_process_what_it_doubts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large tree's pass forks a helper that stats the index's paths meanwhile: given the
    time, it stats every one, and this process only looks again at what it could not vouch
    for (a change with its mtime put back), which is read."""
    repo, names = _indexed_large_tree(tmp_path, monkeypatch)
    rewrite_keeping_mtime(repo / "m2.py", SAME_SIZE)
    rewrite_keeping_mtime(repo / "m8.py", SAME_SIZE)
    stated = counted_lstats(repo, monkeypatch)

    digests, read = one_pass(repo, tmp_path / "mirror", names, _helper_done)

    assert sorted(stated) == ["m2.py", "m8.py"]
    assert read == ["m2.py", "m8.py"]
    assert digests == _rewritten(names, "m2.py", "m8.py")
    assert (tmp_path / "mirror" / "tree" / "m8.py").read_text() == SAME_SIZE


def test_the_first_scan_shares_what_the_helper_has_left_and_either_sides_doubts_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scanned at once, the helper has stat'ed what it could from the end: this process stats
    the first part of the rest and it the other, and a change on either side is read."""
    repo, names = _indexed_large_tree(tmp_path, monkeypatch)
    rewrite_keeping_mtime(repo / "m0.py", SAME_SIZE)
    rewrite_keeping_mtime(repo / "m9.py", SAME_SIZE)
    stated = counted_lstats(repo, monkeypatch)

    digests, read = one_pass(repo, tmp_path / "mirror", names)

    # This process stat'ed the listing's first files (as many as the helper left it), and
    # looked again at the two changes, alone.
    mine = [name for name in names if name in stated and name not in ("m0.py", "m9.py")]
    assert mine == names[1 : 1 + len(mine)]
    assert stated.count("m9.py") == 1
    assert read == ["m0.py", "m9.py"]
    assert digests == _rewritten(names, "m0.py", "m9.py")


def test_a_scan_that_does_not_line_up_with_the_index_takes_the_helpers_keys_by_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file added since the last pass sits among the indexed ones in the listing: the
    helper's keys are taken path by path, the new file is stat'ed here and read, and so is a
    change the helper found."""
    repo, names = _indexed_large_tree(tmp_path, monkeypatch)
    (repo / "m10.py").write_text(SAME_SIZE)
    rewrite_keeping_mtime(repo / "m5.py", SAME_SIZE)
    stated = counted_lstats(repo, monkeypatch)
    listed = sorted([*names, "m10.py"])

    digests, read = one_pass(repo, tmp_path / "mirror", listed, _helper_done)

    assert sorted(stated) == ["m10.py", "m10.py", "m5.py"]  # stat'ed, then looked at alone
    assert read == ["m10.py", "m5.py"]
    assert digests == _rewritten(listed, "m10.py", "m5.py")


def test_when_the_helper_fails_this_process_stats_what_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, names = _indexed_large_tree(tmp_path, monkeypatch)
    rewrite_keeping_mtime(repo / "m8.py", SAME_SIZE)

    parent, keys_now = os.getpid(), Mirror._keys_now

    def dies(self: Mirror, paths: list[bytes]) -> list[bytes]:
        if os.getpid() != parent:
            raise OSError("the helper dies")
        return keys_now(self, paths)

    monkeypatch.setattr(Mirror, "_keys_now", dies)
    digests, read = one_pass(repo, tmp_path / "mirror", names)

    assert read == ["m8.py"]
    assert digests["m8.py"] == sha256(SAME_SIZE)
    assert digests["m1.py"] == sha256(ORIGINAL)


def test_a_pass_that_ends_before_its_scan_ends_its_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper still at work when the pass ends (it failed before its scan) is ended with
    it, not waited for, and reaped."""
    repo, _ = _indexed_large_tree(tmp_path, monkeypatch)
    parent, keys_now = os.getpid(), Mirror._keys_now

    def stuck(self: Mirror, paths: list[bytes]) -> list[bytes]:
        if os.getpid() != parent:
            time.sleep(600)
        return keys_now(self, paths)

    monkeypatch.setattr(Mirror, "_keys_now", stuck)
    started = time.monotonic()
    with Mirror.kept(tmp_path / "mirror", repo, None, "sha1") as mirror:
        assert mirror._helper is not None
        helper = mirror._helper.pid
    assert time.monotonic() - started < 30
    assert helper is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(helper, os.WNOHANG)  # reaped already
