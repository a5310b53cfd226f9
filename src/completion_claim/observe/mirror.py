"""The operator's mirror of a work tree: the files a test run is given, kept where the agent
cannot write, and read again from the work tree only when the change cache cannot vouch for them.

A mirror is a folder of the runs directory (the gate's: ``<runs>/<repository>/mirror``) holding
``tree/``, a copy of the listed files, and ``index``, the change cache: for each path, the
``lstat`` of the work-tree file it was copied from (device, inode, size, mtime, ctime, mode) and
the digests of what was copied (``sha256:`` and git's blob id). A file whose ``lstat`` is the one
recorded is not read again: its digests and its copy stand. Anything else is read once, hashed
and copied in the same pass, and recorded.

The cache trusts ctime: a process that is not root cannot set it (``utime`` sets mtime and atime,
and moves ctime to now), and any write, rename, link or mode change moves the ctime of the inode,
so of every path that names it. A stat is recorded only when the file's times are older than the
pass that took it, by more than file-system timestamps can lag (``RACY_NS``): a write in the same
clock tick as the stat could otherwise leave every field as recorded, as git's "racily clean"
entries; such a file is read again by the next pass. Symbolic links are never cached: their
digest reads their target.

A write through a shared mapping (``mmap``) moves the ctime only when it dirties a clean page:
later writes to the dirty page move nothing until the page is written back (attack 96). So a pass
first writes back the work tree's file system (``syncfs``): every page dirtied before it is then
clean, and a write to it after the pass's stat faults and moves the ctime; a page dirtied since
has a ctime within the racy window. That is a promise of the file systems that write pages back
(``KEYED_FILE_SYSTEMS``); on any other (tmpfs never writes back; FUSE reports whatever its daemon
says) no stat is recorded, nor for a file on another device than the work tree's root (a mount
inside it): every such file is read at every pass.

The agent's ``.git/index`` and its stat data are never read. The index is removed before a pass
first changes the mirror and written back once the tree is as the run is given it, so a pass that
dies half-way leaves no index, and the next one starts from an empty tree rather than from copies
the index does not describe; a pass that changes nothing writes nothing. One
pass at a time holds the mirror (a lock file beside it), for as long as a run reads it: the gate
holds one pass from its capture to its last check, so each path is stat'ed, and read if need be,
once a gate; ``changed_since`` then says whether the work tree moved on while the tests ran.

A stop costs an ``lstat`` per listed file. On a large tree (an index of ``_SPLIT_AT`` paths or
more) a forked process (``_Helper``) stats the files the index holds, from the last one backward,
while this one loads the index, git lists the work tree and the commits' entries are read; the
first scan then splits what is left between the two, so the stat pass overlaps that work rather
than following it. The helper only reads (the index's paths, as this process read them; ``lstat``),
writes the file system back before its first ``lstat`` as a pass does, and answers with the
keys it took. The index keeps its paths in the listing's order, so that the scan's paths line up
with the helper's, and what is a function of content alone (each path's kind, :mod:`.runners`;
the commits' entries, :func:`.repository.entries_kept_in`), so that a stop's other work grows
with what changed.

Without a folder (``Mirror.fresh``) the same code copies every file into a fresh tree: the copy a
run without a persistent mirror gets.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import itertools
import marshal
import mmap
import operator
import os
import shutil
import signal
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from .._files import write_atomic
from ..errors import ClaimError, ObservationFailed
from .repository import (
    TreeFiles,
    WorkTreeFile,
    display,
    entries_kept_in,
    open_beneath,
    work_tree_file,
)
from .runners import kinds_fingerprint, known_kinds, remember_kinds
from .workspace import Listing, Workspace

INDEX_VERSION = 5  # 5: a head (whose tree, its paths) apart from the rest, for the helper
_HEAD_LENGTH = struct.Struct("=Q")
RACY_NS = 2_000_000_000  # above any file system's timestamp granularity (FAT: 2 s)
LOCK_POLL_S = 0.05
LOCK_WAIT_S = 900.0  # above a test run's default timeout (600 s)
_CHUNK = 1 << 20
# Six 8-byte fields in this machine's order, the size first: the sizes of a run of keys are
# read as one array of them.
_PACKED = struct.Struct("=qQQqqQ")
_KEY_WORDS = _PACKED.size // 8
_KEY_FIELDS = operator.attrgetter("st_size", "st_dev", "st_ino", "st_mtime_ns", "st_ctime_ns",
                                  "st_mode")  # fmt: skip
_BATCH = 4096  # paths stat'ed at C speed at once; one that fails has its batch looked at alone
_SPLIT_AT = 20_000  # paths, below which a second process costs more than it saves
# File systems that write dirty pages back and make them fault on the next write, which moves
# the file's ctime (their page_mkwrite updates it): the only ones a stat is recorded on. Another
# may keep the promise too; until that is shown, its files are read at every pass.
KEYED_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs"})
_NEVER = b""  # the key of an entry no stat may vouch for: a link, a racily clean file, a time
# past 2262; and of a path that cannot be stat'ed now. The two never match (``_vouched``).

Key = tuple[int, int, int, int, int, int]
"""(size, device, inode, mtime_ns, ctime_ns, mode) of a work-tree file."""


@dataclass(frozen=True)
class Limits:
    """What one scan may give: no file over ``file_bytes``, no more than ``tree_bytes`` in all;
    ``reading`` is told of each chunk read, so a long read can be stopped (the deadline)."""

    file_bytes: int
    tree_bytes: int
    reading: Callable[[bytes], None]


def stat_key(info: os.stat_result) -> Key:
    key: Key = _KEY_FIELDS(info)
    return key


def _packed_key(info: os.stat_result) -> bytes:
    try:
        return _PACKED.pack(*stat_key(info))
    except struct.error:  # a time beyond 2262: never vouched for, read every time
        return _NEVER


def _folders_of(paths: Iterable[bytes]) -> Iterator[bytes]:
    """The folder of each path (``b""`` at the top), at C speed."""
    return map(operator.itemgetter(0), map(bytes.rpartition, paths, itertools.repeat(b"/")))


class Mirror:
    """One pass over a work tree: ``scan`` gives each path's digests, from the cache or by
    copying it; ``keep`` removes what the pass did not want; leaving saves the index."""

    def __init__(
        self,
        workspace: Path,
        tree: bytes,
        owner: int | None,
        object_format: str,
        folder: Path | None = None,
    ) -> None:
        self.workspace = os.fsencode(workspace)
        self.tree = tree
        self.owner = owner
        self.object_format = object_format
        self.folder = folder
        # The index: for each path copied, the packed Key of the file it was copied from
        # (``_NEVER`` when no stat may vouch for it), and the sha256 digest and git blob id of
        # the copy. Three maps of one order rather than an object a path: 100,000 paths are
        # loaded, compared and saved at every stop.
        self.keys: dict[bytes, bytes] = {}
        self.digests: dict[bytes, str] = {}
        self.blobs: dict[bytes, str] = {}
        self.seen: dict[bytes, os.stat_result] = {}  # each path as this pass read it
        # What this pass found: a path is stat'ed once a pass (the gate's capture and its run
        # share one), and a change after that is caught when the run ends (changed_since).
        self._found = TreeFiles()
        self._looked: set[bytes] = set()
        self._prefix = os.path.join(self.workspace, b"")
        self.read_paths: list[bytes] = []  # read from the work tree in this pass
        self._taken = time.time_ns()
        self._device: int | None = None  # the work tree's root's, when its stats may be kept
        self._folders: dict[bytes, bool] = {}
        self._lock: int | None = None
        self._held = contextlib.ExitStack()
        self._saved = False
        self._listed: list[bytes] | None = None
        self._listing: Listing | None = None
        self._helper: _Helper | None = None
        self._indexed: list[bytes] = []  # the index's paths as loaded

    @classmethod
    def fresh(cls, workspace: Path, tree: bytes, owner: int | None, object_format: str) -> Mirror:
        return cls(workspace, tree, owner, object_format)

    @classmethod
    def kept(cls, folder: Path, workspace: Path, owner: int | None, object_format: str) -> Mirror:
        """The persistent mirror in ``folder`` (the operator's runs directory)."""
        return cls(workspace, os.fsencode(folder / "tree"), owner, object_format, folder)

    # --- holding the mirror ---------------------------------------------------------------

    def __enter__(self) -> Mirror:
        if self.folder is None:
            return self
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            self._wait_for_lock()
            # What is written from now on is within the racy window: never keyed this pass.
            self._taken = time.time_ns()
            # A kept mirror is a gate's, of a git work tree: git lists it while the index loads.
            self._listing = Listing(Workspace(Path(os.fsdecode(self.workspace)), in_git=True))
            index = self._index_bytes()
            head = self._head(index)
            device = keyed_device(self.workspace)
            if device is not None and head is not None and len(head[_PATHS]) >= _SPLIT_AT:
                # Forked before any thread of this pass starts: it stats while the index loads.
                syncfs_function()
                with contextlib.suppress(OSError):  # no second process today: all done here
                    self._helper = _Helper(self.workspace, head[_PATHS], self._keys_now)
            written_back = _WriteBack(self.workspace, device)  # while the index loads
            try:
                if head is not None:
                    self._load(head, index)
            finally:
                self._device = written_back.device()
        except BaseException:
            self._release()
            raise
        if not self._saved:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.folder / "index")
        if not self.keys:
            shutil.rmtree(self.tree, ignore_errors=True)  # copies no index describes
        self._make_folder(self.tree)
        # The commits' entries (the base's, HEAD's, the trusted ref's) are kept beside it.
        self._held.enter_context(entries_kept_in(self.folder / "commits"))
        if self._device is None:  # no stat vouches here: not the ones kept before either
            self.keys = dict.fromkeys(self.keys, _NEVER)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            # The index describes the tree unless the pass stopped half-way through a change to
            # it, which only an unforeseen error can do (a refusal is raised before one).
            if kind is None or issubclass(kind, ClaimError):
                self.save()
        finally:
            self._release()

    def save(self) -> None:
        """Write the index now (once the tree is as the run is given it: a gate saves while
        the tests run); a change to the tree after this removes it again until the end."""
        if self.folder is None or self._saved:
            return
        paths = sorted(self.keys)  # the listing's order: the next pass's helper lines up with it
        head = (INDEX_VERSION, self.workspace, self.owner, self.object_format,
                kinds_fingerprint(), paths)  # fmt: skip
        rest = (list(map(self.keys.__getitem__, paths)), list(map(self.digests.__getitem__, paths)),
                list(map(self.blobs.__getitem__, paths)), known_kinds(paths))  # fmt: skip
        write_atomic(self.folder / "index", index_file(head, rest))
        self._saved = True

    def _changing(self) -> None:
        """The tree is about to change: a saved index no longer describes it."""
        if self._saved:
            assert self.folder is not None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.folder / "index")
            self._saved = False

    def _wait_for_lock(self) -> None:
        """Another gate on this work tree holds the mirror until its last check ends."""
        assert self._lock is not None
        ends = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > ends:
                    raise ObservationFailed(
                        f"another gate on this work tree held {self.folder} for over "
                        f"{LOCK_WAIT_S:g} s"
                    ) from None
                time.sleep(LOCK_POLL_S)

    def _release(self) -> None:
        if self._listing is not None:
            self._listing.stop()
            self._listing = None
        if self._helper is not None:
            self._helper.stop()
            self._helper = None
        self._held.close()
        if self._lock is not None:
            os.close(self._lock)  # closing the only descriptor releases the flock
            self._lock = None

    def _index_bytes(self) -> bytes:
        """The index's file as saved (``index_file``), or nothing."""
        assert self.folder is not None
        try:
            return (self.folder / "index").read_bytes()
        except OSError:
            return b""

    def _head(self, index: bytes) -> tuple[Any, ...] | None:
        """The head of the ``index`` (``index_file``), when it describes this work tree, owner
        and object format (else there is no index: the tree is then rebuilt)."""
        head = index_part(index, 0)
        wanted = (INDEX_VERSION, self.workspace, self.owner, self.object_format)
        if head is None or len(head) != _HEAD_FIELDS or head[:4] != wanted:
            return None
        return head if type(head[_PATHS]) is list else None

    def _load(self, head: tuple[Any, ...], index: bytes) -> None:
        """The rest of the ``index`` whose ``head`` describes this pass's tree. The kinds of
        its paths (:func:`.runners.path_kind`) are believed only when the code that worked
        them out is this one."""
        rest = index_part(index, 1)
        if rest is None or len(rest) != _REST_FIELDS:
            return
        paths, (keys, digests, blobs, kinds) = head[_PATHS], rest
        columns = (paths, keys, digests, blobs)
        if any(type(column) is not list or len(column) != len(paths) for column in columns):
            return
        self.keys = dict(zip(paths, keys, strict=True))
        self._indexed = paths  # the order the helper stats them in
        self.digests = dict(zip(paths, digests, strict=True))
        self.blobs = dict(zip(paths, blobs, strict=True))
        if head[_FINGERPRINT] == kinds_fingerprint() and type(kinds) is bytes:
            remember_kinds(paths, kinds)
            # Kept as it is until the tree changes: a pass that reads nothing writes nothing.
            self._saved = True

    # --- reading the work tree -------------------------------------------------------------

    def listed(self, workspace: Workspace) -> list[bytes]:
        """The work tree's listed files (``Workspace.listed``), listed once a pass: the capture
        and the run it holds are given the same files."""
        if self._listed is None:
            started, self._listing = self._listing, None
            if started is not None and os.fsencode(workspace.root) == self.workspace:
                self._listed = started.result()
            else:
                if started is not None:
                    started.stop()
                self._listed = workspace.listed()
        return self._listed

    def scan(
        self, paths: Iterable[bytes], failure: type[ClaimError], limits: Limits | None = None
    ) -> TreeFiles:
        """What the work tree holds at each of ``paths``, with its copy in the mirror: from the
        cache when the file's stat is as recorded, else read once (hashed and copied in one
        pass). ``limits`` bound the sizes of the regular files, checked before any is read,
        and see each chunk read. Returns what the pass has found so far: a path is looked at
        once a pass, whoever asks."""
        paths = list(paths)
        new = list(dict.fromkeys(itertools.filterfalse(self._looked.__contains__, paths)))
        doubtful = self._doubtful(new)
        budget = 0  # what the files still to be read may add up to
        if limits is not None:
            budget = limits.tree_bytes - self._within(paths, limits, failure)
        for rel in doubtful:
            budget -= self._look(rel, failure, limits, budget)
        return self._found

    def _doubtful(self, paths: list[bytes]) -> list[bytes]:
        """Those of ``paths`` the index cannot vouch for; the others are found as the index
        has them. The first scan of a large tree shares the stat pass with the helper."""
        helper, self._helper = self._helper, None
        with contextlib.ExitStack() as reaped:
            if helper is not None:
                reaped.callback(helper.stop)  # whatever happens here
            if not self.keys:  # nothing to vouch for: every path is looked at
                keys = [_NEVER] * len(paths)
            elif helper is not None:
                keys = helper.keys_with(paths, self._indexed, self._keys_now)
            else:
                keys = self._keys_now(paths)
        vouched = self._vouched(paths, keys)
        doubtful = list(itertools.compress(paths, map(operator.not_, vouched)))
        self._take(list(itertools.compress(paths, vouched)), doubtful)
        return doubtful

    def _vouched(self, paths: list[bytes], keys: list[bytes]) -> list[bool]:
        """Whether the index vouches for each of ``paths`` as the work tree holds it now: an
        entry whose key is the file's (``keys``), in a folder that is no link. An entry kept
        with no key (``_NEVER``) vouches for nothing: a file that can no longer be stat'ed, or
        whose times cannot be packed, has no key now either (attack 95)."""
        recorded = list(map(self.keys.get, paths, itertools.repeat(_NEVER)))
        vouched = list(map(operator.and_, map(operator.eq, keys, recorded), map(bool, recorded)))
        folders = set(_folders_of(paths))
        folders.discard(b"")
        links = {folder for folder in folders if not self._real_folder(folder)}
        if links:  # below a link: not in the work tree, as git sees it
            below = map(links.__contains__, _folders_of(paths))
            vouched = list(map(operator.and_, vouched, map(operator.not_, below)))
        return vouched

    def _keys_now(self, paths: list[bytes]) -> list[bytes]:
        """The packed key of each work-tree file of ``paths``, a batch at a time at C speed
        (this runs over every path of the tree); ``_NEVER`` for one that cannot be stat'ed
        (its batch is stat'ed a path at a time; the path is then looked at alone, which names
        the error)."""
        keys: list[bytes] = []
        for start in range(0, len(paths), _BATCH):
            batch = paths[start : start + _BATCH]
            full = map(self._prefix.__add__, batch)
            try:
                # Whole or not at all: a batch that fails half-way leaves nothing behind, so
                # every key stays beside its path.
                keys += list(itertools.starmap(_PACKED.pack, map(_KEY_FIELDS, map(os.lstat, full))))
            except (OSError, struct.error):
                keys += map(self._key_now, batch)
        return keys

    def _key_now(self, rel: bytes) -> bytes:
        try:
            return _packed_key(os.lstat(self._prefix + rel))
        except OSError:
            return _NEVER

    def _take(self, vouched: list[bytes], doubtful: list[bytes]) -> None:
        """Found, as the index has them: the ``vouched`` paths of a scan whose others were
        ``doubtful``. When the scan covered the whole index, its maps are copied whole (at
        memory speed) and the few doubtful taken out."""
        found, index = self._found, self.digests
        indexed_doubtful = list(filter(index.__contains__, doubtful))
        if not found.digests and len(vouched) + len(indexed_doubtful) == len(index):
            found.digests, found.blobs = index.copy(), self.blobs.copy()
            for rel in indexed_doubtful:
                found.remove(rel)
        else:
            found.digests.update(zip(vouched, map(index.__getitem__, vouched), strict=True))
            found.blobs.update(zip(vouched, map(self.blobs.__getitem__, vouched), strict=True))
        self._looked.update(vouched)

    def _look(
        self, rel: bytes, failure: type[ClaimError], limits: Limits | None, budget: int
    ) -> int:
        """Find ``rel`` (one path the index could not vouch for): read and copied when it is a
        file, digested afresh when a link. Returns the bytes read."""
        self._looked.add(rel)
        folder = next(_folders_of([rel]))
        if folder and not self._real_folder(folder):
            return 0  # below a link: not in the work tree, as git sees it
        try:
            info = os.lstat(self._prefix + rel)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise failure(f"cannot read {display(rel)}: {exc.strerror or exc}") from None
        key = self.keys.get(rel)
        if key and _packed_key(info) == key:
            self._take([rel], [])  # the other process could not say
            return 0
        if stat.S_ISLNK(info.st_mode):
            self._link(rel, info, failure)
        elif stat.S_ISREG(info.st_mode):
            if limits is not None and (info.st_size > limits.file_bytes or info.st_size > budget):
                _too_big(rel, info.st_size, limits, failure)
            self._copy(rel, failure, limits)
            return info.st_size
        return 0

    def _within(self, paths: list[bytes], limits: Limits, failure: type[ClaimError]) -> int:
        """The bytes of the regular files found among ``paths``, refused when one is over the
        size a file may have or all are over the size a tree may have."""
        sizes = self._sizes_of(paths)
        if sizes and max(sizes) > limits.file_bytes:
            biggest = max(sizes)
            rel = next(rel for rel in paths if list(self._sizes_of([rel])) == [biggest])
            _too_big(rel, biggest, limits, failure)
        if sum(sizes) > limits.tree_bytes:
            _too_big(b"", sum(sizes), limits, failure)
        return sum(sizes)

    def _sizes_of(self, paths: list[bytes]) -> Sequence[int]:
        """The size of each regular file found among ``paths``: from its key (an array over
        the keys joined), else (read in this pass, too close to it to be keyed) as read."""
        present = list(itertools.compress(paths, map(self._found.digests.__contains__, paths)))
        keys = list(map(self.keys.get, present, itertools.repeat(_NEVER)))
        sizes = memoryview(b"".join(keys)).cast("q")[::_KEY_WORDS]
        unkeyed = itertools.compress(present, map(operator.not_, keys))
        read = [self.seen[rel] for rel in unkeyed if rel in self.seen]
        if not read:
            return sizes
        return [*sizes, *(info.st_size for info in read if stat.S_ISREG(info.st_mode))]

    def _copy(self, rel: bytes, failure: type[ClaimError], limits: Limits | None) -> None:
        try:
            fd = open_beneath(self.workspace, rel)
        except FileNotFoundError:  # gone, or below a folder swapped for a link since
            return
        except OSError as exc:
            raise failure(f"cannot read {display(rel)}: {exc.strerror or exc}") from None
        temporary = os.path.join(self._scratch(), b"copy-%d" % os.getpid())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return  # swapped since the lstat: what is there now is no file
            content = hashlib.sha256()
            blob = hashlib.new(self.object_format, b"blob %d\0" % info.st_size)
            executable = bool(info.st_mode & 0o111)
            out_fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o755 if executable else 0o644)  # fmt: skip
            if self.owner is not None:
                os.fchown(out_fd, self.owner, self.owner)
            seen = 0
            with os.fdopen(out_fd, "wb") as out:
                while chunk := handle.read(_CHUNK):
                    if limits is not None:
                        limits.reading(rel)
                    seen += len(chunk)
                    if seen > info.st_size:
                        break
                    content.update(chunk)
                    blob.update(chunk)
                    out.write(chunk)
        if seen != info.st_size:
            os.unlink(temporary)
            raise failure(f"{display(rel)} changed while it was being read")
        self._place(rel, temporary)
        digest = "sha256:" + content.hexdigest()
        # Vouched for later only when its times are older than this pass by more than their
        # granularity: a write in the same tick as the stat would leave every field as it is.
        settled = max(info.st_mtime_ns, info.st_ctime_ns) < self._taken - RACY_NS
        key = _packed_key(info) if settled and info.st_dev == self._device else _NEVER
        self._index(rel, key, digest, blob.hexdigest())
        self.seen[rel] = info
        self.read_paths.append(rel)
        self._found.add(rel, WorkTreeFile(digest, blob.hexdigest(), link=False))

    def _link(self, rel: bytes, info: os.stat_result, failure: type[ClaimError]) -> None:
        """A link is digested afresh every pass (its digest reads its target), and kept in the
        mirror as the link: relative, so it points into the copy. One that leaves the work
        tree is refused."""
        found = work_tree_file(self.workspace, rel, failure, self.object_format)
        if found is None:
            return
        target = os.readlink(os.path.join(self.workspace, rel))
        resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if os.path.isabs(target) or resolved == b".." or resolved.startswith(b"../"):
            raise failure(f"{display(rel)} is a symbolic link out of the workspace "
                          f"(to {display(target)}); it is refused")  # fmt: skip
        temporary = os.path.join(self._scratch(), b"link-%d" % os.getpid())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        os.symlink(target, temporary)
        if self.owner is not None:
            os.lchown(temporary, self.owner, self.owner)
        self._place(rel, temporary)
        self._index(rel, _NEVER, found.digest, found.blob or "")
        self.seen[rel] = info
        self.read_paths.append(rel)
        self._found.add(rel, found)

    def _index(self, rel: bytes, key: bytes, digest: str, blob: str) -> None:
        self.keys[rel], self.digests[rel], self.blobs[rel] = key, digest, blob

    def _unindex(self, rel: bytes) -> None:
        del self.keys[rel], self.digests[rel], self.blobs[rel]
        self._found.remove(rel)
        self._looked.discard(rel)

    def _real_folder(self, folder: bytes) -> bool:
        """Whether no part of ``folder`` (a path below the work tree's root) is a link: each
        folder is stat'ed once a pass, its parent first."""
        known = self._folders.get(folder)
        if known is None:
            parent = folder.rpartition(b"/")[0]
            known = not parent or self._real_folder(parent)
            if known:
                with contextlib.suppress(OSError):  # nothing there: nothing below to read
                    known = not stat.S_ISLNK(os.lstat(self._prefix + folder).st_mode)
            self._folders[folder] = known
        return known

    # --- the mirror's tree -------------------------------------------------------------------

    def _scratch(self) -> bytes:
        """Where copies are made before they are moved into place: beside the tree (the same
        file system, so the move is a rename), never in it."""
        scratch = self.tree + b".scratch" if self.folder is not None else self.tree + b"-scratch"
        self._make_folder(scratch)
        return scratch

    def _place(self, rel: bytes, temporary: bytes) -> None:
        self._changing()
        destination = os.path.join(self.tree, rel)
        folder = self.tree
        for part in rel.split(b"/")[:-1]:
            folder = os.path.join(folder, part)
            if not _is_folder(folder):
                self._clear(folder)
                self._make_folder(folder)
        if _is_folder(destination):
            self._clear(destination)
        os.rename(temporary, destination)

    def _clear(self, path: bytes) -> None:
        """Whatever is at ``path`` in the mirror (a file where a folder now goes, or the
        reverse), and the entries below it."""
        self._changing()
        with contextlib.suppress(FileNotFoundError):
            if _is_folder(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        rel = os.path.relpath(path, self.tree)
        for gone in [known for known in self.keys if known == rel
                     or known.startswith(rel + b"/")]:  # fmt: skip
            self._unindex(gone)

    def _make_folder(self, path: bytes) -> None:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
            if self.owner is not None:
                os.chown(path, self.owner, self.owner)

    def keep(self, wanted: Mapping[bytes, object] | AbstractSet[bytes]) -> None:
        """Remove from the mirror every file but ``wanted`` (the run's files, or a set of
        paths), and the folders left empty."""
        gone = [rel for rel in self.keys if rel not in wanted]
        if gone:
            self._changing()
        for rel in gone:
            self._unindex(rel)
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                os.unlink(os.path.join(self.tree, rel))
            folder = os.path.dirname(rel)
            while folder:
                try:
                    os.rmdir(os.path.join(self.tree, folder))
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        break
                folder = os.path.dirname(folder)

    def changed_since(self, paths: Iterable[bytes]) -> bytes | None:
        """The first of ``paths`` whose work-tree file is no longer what this pass read."""
        for rel in paths:
            before = self.seen.get(rel)
            try:
                now: Key | None = stat_key(os.lstat(self._prefix + rel))
            except OSError:
                now = None
            if before is None or now != stat_key(before):
                return rel
        return None


# The index's file: the length of its head, the head (version, work tree, owner, object
# format, the fingerprint of the kinds' code, the paths) and the rest (each path's key, digest,
# blob id and kind), each a marshal of its own, so that the helper reads the paths alone.
_HEAD_FIELDS, _REST_FIELDS = 6, 4
_FINGERPRINT, _PATHS = 4, 5  # in the head


def index_file(head: tuple[Any, ...], rest: tuple[Any, ...]) -> bytes:
    dumped = marshal.dumps(head)
    return _HEAD_LENGTH.pack(len(dumped)) + dumped + marshal.dumps(rest)


def index_part(index: bytes, which: int) -> tuple[Any, ...] | None:
    """The head (``which`` 0) or the rest (1) of an index file's bytes (``index_file``); None
    when they hold no such part."""
    try:
        (length,) = _HEAD_LENGTH.unpack_from(index)
        parts = memoryview(index)[_HEAD_LENGTH.size :]
        part = marshal.loads(parts[length:] if which else parts[:length])  # noqa: S302 - the operator's own file
    except (struct.error, ValueError, EOFError, TypeError):
        return None
    return part if type(part) is tuple else None


_UNSET = -1
# What the helper and the pass share, eight bytes each: where the helper has got to (it has
# stat'ed the index's paths from there on), where it is to stop; then the keys it took, a
# packed key a path (``_UNKEYED`` for a path it could not stat: no kept key is all zeros, as
# no file has mode 0, so it vouches for nothing, as ``_NEVER`` would).
_SHARED = struct.Struct("=qq")
_UNKEYED = bytes(_PACKED.size)
_FRONTIER, _STOP = 0, 8
_SLOT = struct.Struct("=q")


class _Helper:
    """A forked process that stats the paths of the index (``paths``) from the last one
    backward, a batch at a time (``keys_now``: ``Mirror._keys_now``), while the pass loads the
    index and git lists the work tree. The first scan tells it to stop half-way through what it
    has left, stats the rest itself and takes its keys (``keys_with``).

    It writes its keys into a mapping it shares with the pass, after two numbers (``_SHARED``):
    where it has got to, and where it is to stop. It writes the work tree's file system back
    before its first ``lstat``, as the pass does (attack 96)."""

    def __init__(
        self, workspace: bytes, paths: list[bytes], keys_now: Callable[[list[bytes]], list[bytes]]
    ) -> None:
        self._shared = mmap.mmap(-1, _SHARED.size + len(paths) * _PACKED.size)
        _SHARED.pack_into(self._shared, 0, _UNSET, _UNSET)
        try:
            self.pid: int | None = os.fork()
        except OSError:
            self._shared.close()
            raise
        if self.pid == 0:  # the helper: stats, and is gone
            status = 1
            try:
                if self._help(workspace, paths, keys_now):
                    status = 0
            finally:
                os._exit(status)

    def _help(
        self, workspace: bytes, paths: list[bytes], keys_now: Callable[[list[bytes]], list[bytes]]
    ) -> bool:
        if not written_back(workspace):
            return False  # no key taken: the pass stats them all
        end = len(paths)
        _SLOT.pack_into(self._shared, _FRONTIER, end)
        while True:
            stop = _SLOT.unpack_from(self._shared, _STOP)[0]
            start = max(end - _BATCH, 0 if stop == _UNSET else stop)
            if start >= end:
                return True
            keys = b"".join([key or _UNKEYED for key in keys_now(paths[start:end])])
            self._shared[self._at(start) : self._at(end)] = keys
            end = start
            _SLOT.pack_into(self._shared, _FRONTIER, end)

    @staticmethod
    def _at(position: int) -> int:
        return _SHARED.size + position * _PACKED.size

    def keys_with(
        self,
        paths: list[bytes],
        indexed: list[bytes],
        keys_now: Callable[[list[bytes]], list[bytes]],
    ) -> list[bytes]:
        """The key of each of ``paths``: the helper's for the paths of the index (``indexed``,
        in its order) it took, and from ``keys_now`` (this process) for the others. The helper
        is told to stop half-way through what it has not stat'ed yet, and this process stats
        the other half meanwhile."""
        count = len(indexed)
        frontier = _SLOT.unpack_from(self._shared, _FRONTIER)[0]
        middle = (count if frontier == _UNSET else min(frontier, count)) // 2
        _SLOT.pack_into(self._shared, _STOP, middle)
        theirs = indexed[middle:]
        if paths[:count] == indexed:  # the listing as indexed (and what only the base holds)
            mine = keys_now(paths[:middle])
            rest = keys_now(paths[count:])
            return mine + (self._keys(middle, count) or keys_now(theirs)) + rest
        taken = dict.fromkeys(theirs)
        own = list(itertools.filterfalse(taken.__contains__, paths))
        found = dict(zip(own, keys_now(own), strict=True))
        found.update(zip(theirs, self._keys(middle, count) or keys_now(theirs), strict=True))
        return list(map(found.__getitem__, paths))

    def _keys(self, middle: int, count: int) -> list[bytes] | None:
        """The helper's keys for the index's paths from ``middle`` on, once it has stopped
        (reaped); None when it did not take them all."""
        assert self.pid is not None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if status != 0 or not 0 <= _SLOT.unpack_from(self._shared, _FRONTIER)[0] <= middle:
            return None
        taken, width = self._shared[self._at(middle) : self._at(count)], _PACKED.size
        starts = range(0, len(taken), width)
        return list(map(taken.__getitem__, map(slice, starts, range(width, len(taken) + 1, width))))

    def stop(self) -> None:
        """The helper ended and reaped; the mapping closed."""
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None
        self._shared.close()


def keyed_device(root: bytes) -> int | None:
    """The device of the work tree's root when its file system keeps the cache's promise
    (``KEYED_FILE_SYSTEMS``), else None: no stat is kept there."""
    try:
        device = os.stat(root).st_dev
    except OSError:
        return None
    return device if file_system_of(device) in KEYED_FILE_SYSTEMS else None


class _WriteBack:
    """The work tree's file system written back (``syncfs``) in a thread of its own, which the
    call leaves free to run: ``device`` waits for it, and is the work tree root's ``device``
    (``keyed_device``) once every page dirtied before is written back, else None."""

    def __init__(self, root: bytes, device: int | None) -> None:
        self._device: int | None = None
        self._thread: threading.Thread | None = None
        if device is None:
            return
        self._thread = threading.Thread(target=self._run, args=(root, device))
        self._thread.start()

    def _run(self, root: bytes, device: int) -> None:
        if written_back(root):
            self._device = device  # only once every page dirtied before is written back

    def device(self) -> int | None:
        if self._thread is not None:
            self._thread.join()  # before any fork: no thread runs in an observer after this
        return self._device


def file_system_of(device: int) -> str | None:
    """The type of the file system mounted from ``device`` (``/proc/self/mountinfo``), or None
    when no mount names it (a btrfs subvolume's own device, a system without ``/proc``)."""
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            mounts = handle.read()
    except OSError:
        return None
    wanted = b"%d:%d" % (os.major(device), os.minor(device))
    for line in mounts.splitlines():
        fields = line.split(b" ")
        # id, parent, major:minor, root, mount point, options, [optional...], -, type, ...
        if len(fields) > 2 and fields[2] == wanted and b"-" in fields[6:]:
            return fields[fields.index(b"-", 6) + 1].decode(errors="replace")
    return None


def written_back(root: bytes) -> bool:
    """Whether the file system holding the folder ``root`` was written back (``_write_back``);
    False when the folder cannot be opened (then no stat may be kept)."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        _write_back(fd)
    finally:
        os.close(fd)
    return True


def _write_back(fd: int) -> None:
    """``syncfs`` on the file system holding ``fd``: its dirty pages written back, and made
    read-only in every mapping, so that the next write to one faults and moves its ctime."""
    syncfs = syncfs_function()
    if syncfs is None or syncfs(fd) != 0:
        os.sync()


@functools.cache
def syncfs_function() -> Callable[[int], int] | None:
    """libc's ``syncfs``, found once a process (a helper is forked after it was, so that it
    loads no library of its own), or None where libc has none."""
    import ctypes  # noqa: PLC0415 - only a kept mirror's pass needs it

    found: Callable[[int], int] | None = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
    return found


def _too_big(rel: bytes, size: int, limits: Limits | None, failure: type[ClaimError]) -> None:
    assert limits is not None
    if size > limits.file_bytes:
        raise failure(f"{display(rel)} is {size} bytes, over the {limits.file_bytes} a copied "
                      "file may have")  # fmt: skip
    raise failure(f"the workspace is over the {limits.tree_bytes} bytes a run copies")


def _is_folder(path: bytes) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def require_unchanged(mirror: Mirror, paths: Iterable[bytes]) -> None:
    changed = mirror.changed_since(paths)
    if changed is not None:
        raise ObservationFailed(
            f"{display(changed)} changed in the work tree while the tests ran (a process still "
            "writing there?): the run no longer describes the work tree"
        )
