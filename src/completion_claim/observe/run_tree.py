"""The run directory: exactly the files the claim describes, outside the workspace.

The workspace's listed files (tracked, and untracked but not ignored; never a virtualenv) are
copied, not linked, hashing each as it is copied, so the run is bound to the bytes it ran on: into
a fresh folder, or into the operator's mirror (:mod:`.mirror`), where a file whose stat the change
cache recorded is not read again. Every file that differs from ``HEAD`` must be the claim's latest
``file_write`` for that path, with the same digest, or the run is refused: the agent cannot add a
file the claim never mentions. A symbolic link that leaves the workspace is refused; one inside is
copied as the link.

Protected paths (test configuration, the test files pytest collects, what would shadow pytest
itself, and the operator's ``--protect`` globs) are either made exactly as in a commit the
operator pinned (read from the operator's store, or from git with every object checked against
its id), or, without one, listed when the agent changed them.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import hashlib
import itertools
import operator
import os
import shutil
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

from ..errors import ObservationFailed, UsageError
from ..model import Mutation
from .git_capture import DELETED, latest_file_writes
from .mirror import Limits, Mirror
from .repository import VerifiedObjects, display, object_format_of
from .runners import PROTECTED, is_runner_protected, of_kind
from .runtime_monitor import Lines
from .workspace import (
    Files,
    Workspace,
    containing,
    is_byproduct,
    tree_entries,
    without_byproducts,
)

MAX_FILE_BYTES = 1 << 30
MAX_TREE_BYTES = 4 << 30
_SYMLINK_MODE = "120000"
_EXECUTABLE_MODE = "100755"
_NOT_THERE = ("", "")  # the (mode, object id) of a path the commit does not hold


class Deadline:
    """The observer's own time limit: listing, hashing and copying count against ``--timeout``
    as much as the run does."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._end = time.monotonic() + timeout_s

    def remaining(self) -> float:
        return self._end - time.monotonic()

    def check(self, doing: str) -> None:
        if self.remaining() <= 0:
            raise ObservationFailed(
                f"the observation ran longer than {self.timeout_s:g} s ({doing}) and was stopped"
            )


@dataclass
class RunTree:
    """What the run is given: each file's digest (as the claim records it) and git object id.

    The files are in ``root``: a fresh copy, or the operator's mirror (:mod:`.mirror`), which the
    run sees through an overlay whose writable layer is ``layer``; what is restored or removed
    for this run alone (protected paths) goes to ``layer``, never to the mirror."""

    root: bytes
    owner: int | None
    layer: bytes | None = None  # the overlay's upper folder; None: changes go to root
    files: Files = field(default_factory=dict)
    object_ids: dict[bytes, str] = field(default_factory=dict)
    virtualenvs: list[bytes] = field(default_factory=list)  # left out: never the run's Python

    def fill(
        self, workspace: Workspace, excluded: Iterable[str], deadline: Deadline, mirror: Mirror
    ) -> None:
        """Every listed file but the skipped ones, through ``mirror``: read only when its cache
        cannot vouch for it; the mirror keeps nothing else."""
        skipped = [os.fsencode(path) for path in excluded]
        listed = mirror.listed(workspace)
        configs = containing(listed, [b"pyvenv.cfg"])
        self.virtualenvs = sorted(os.path.dirname(rel) for rel in configs
                                  if os.path.basename(rel) == b"pyvenv.cfg")  # fmt: skip
        left_out = [*skipped, *self.virtualenvs]
        wanted = without_byproducts(listed)
        if left_out:
            wanted = [rel for rel in wanted if not _under(rel, left_out)]
        deadline.check("reading the workspace")
        limits = Limits(MAX_FILE_BYTES, MAX_TREE_BYTES,
                        lambda rel: deadline.check(f"copying {display(rel)}"))  # fmt: skip
        found = mirror.scan(wanted, ObservationFailed, limits)
        present = list(itertools.compress(wanted, map(found.digests.__contains__, wanted)))
        if len(present) < len(wanted):
            for rel in itertools.filterfalse(found.digests.__contains__, wanted):
                _refuse_special(os.path.join(os.fsencode(workspace.root), rel), rel)
        if not self.files and len(present) == len(found.digests):  # all found: copied whole
            self.files, self.object_ids = found.digests.copy(), found.blobs.copy()
        else:
            self.files.update(zip(present, map(found.digests.__getitem__, present), strict=True))
            self.object_ids.update(zip(present, map(found.blobs.__getitem__, present), strict=True))
        mirror.keep(self.files)

    def add_link(
        self, rel: bytes, target: bytes, hash_name: str, digest: str | None = None
    ) -> None:
        """A link whose target stays inside the tree, kept as the link (relative, so it points
        into the copy); one that leaves it is refused."""
        resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if os.path.isabs(target) or resolved == b".." or resolved.startswith(b"../"):
            raise ObservationFailed(
                f"{display(rel)} is a symbolic link out of the workspace "
                f"(to {display(target)}); it is refused"
            )
        destination = os.path.join(self._changes, rel)
        self._make_parents(rel)
        os.symlink(target, destination)
        if self.owner is not None:
            os.lchown(destination, self.owner, self.owner)
        self.files[rel] = digest or "sha256:" + hashlib.sha256(target).hexdigest()
        self.object_ids[rel] = _blob_id(hash_name, target)

    def write(self, rel: bytes, data: bytes, mode: str, hash_name: str) -> None:
        """Put ``data`` at ``rel`` as git stores it (``mode`` from a tree entry)."""
        self.remove(rel)
        if self.layer is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.layer, rel))  # the whiteout remove() left
        if mode == _SYMLINK_MODE:
            self.add_link(rel, data, hash_name)
            return
        with self._create(rel, executable=mode == _EXECUTABLE_MODE) as out:
            out.write(data)
        self.files[rel] = "sha256:" + hashlib.sha256(data).hexdigest()
        self.object_ids[rel] = _blob_id(hash_name, data)

    def remove(self, rel: bytes) -> None:
        if rel not in self.files:
            return
        del self.files[rel]
        del self.object_ids[rel]
        if self.layer is None:
            os.unlink(os.path.join(self.root, rel))
            return
        path = os.path.join(self.layer, rel)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # restored for this run earlier
        if os.path.lexists(os.path.join(self.root, rel)):
            # A whiteout: overlayfs shows the mirror's file as gone.
            self._make_parents(rel)
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(0, 0))

    def remove_folder(self, rel: bytes) -> None:
        """Whatever is at ``rel`` for this run (a folder, a file or a link), with what is below
        it; the files it held are removed from ``files`` by the caller. Under an overlay the
        mirror keeps it, hidden by a whiteout in the layer."""
        for folder in (self.root,) if self.layer is None else (self.layer,):
            path = os.path.join(folder, rel)
            if os.path.islink(path) or os.path.isfile(path) or _is_special(path):
                os.unlink(path)
            elif os.path.isdir(path):
                shutil.rmtree(path)
        if self.layer is not None and os.path.lexists(os.path.join(self.root, rel)):
            self._make_parents(rel)
            os.mknod(os.path.join(self.layer, rel), stat.S_IFCHR | 0o600, os.makedev(0, 0))

    def read(self, rel: bytes) -> bytes:
        """A file as the run is given it: restored for this run (in ``layer``), else as read
        from the workspace. The observer's own copy, read before the run."""
        missing = f"{display(rel)} is missing: the dependencies are installed from it"
        if rel not in self.files:
            raise ObservationFailed(missing)
        for folder in (self.layer, self.root):
            if folder is None:
                continue
            try:
                fd = os.open(os.path.join(folder, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ObservationFailed(f"cannot read {display(rel)}: {exc.strerror}") from None
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise ObservationFailed(f"{display(rel)} is not a regular file")
                return handle.read(MAX_FILE_BYTES)
        raise ObservationFailed(
            f"{display(rel)} is missing: the dependencies are installed from it"
        )

    @property
    def _changes(self) -> bytes:
        return self.root if self.layer is None else self.layer

    def _create(self, rel: bytes, *, executable: bool) -> BinaryIO:
        self._make_parents(rel)
        destination = os.path.join(self._changes, rel)
        mode = 0o755 if executable else 0o644
        fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        if self.owner is not None:
            os.fchown(fd, self.owner, self.owner)
        return os.fdopen(fd, "wb")

    def _make_parents(self, rel: bytes) -> None:
        folder = self._changes
        for part in rel.split(b"/")[:-1]:
            folder = os.path.join(folder, part)
            if not os.path.isdir(folder):
                os.mkdir(folder, 0o755)
                if self.owner is not None:
                    os.chown(folder, self.owner, self.owner)


def _is_special(path: bytes) -> bool:
    """A whiteout, a FIFO or a device: unlinked like a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISDIR(mode) and not stat.S_ISREG(mode) and not stat.S_ISLNK(mode)


def _refuse_special(path: bytes, rel: bytes) -> None:
    """A listed path that is neither a file nor a link: a FIFO or a device is refused (a run
    cannot be given it); gone, a folder (a submodule) or below a link, it is simply not there."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(info.st_mode) and os.path.realpath(os.path.dirname(path)) == (
        os.path.dirname(path)
    ):
        raise ObservationFailed(f"{display(rel)} is not a regular file; it cannot be copied")


def _blob_id(hash_name: str, data: bytes) -> str:
    """The id git gives ``data`` as a blob, so a copy compares with a tree without git."""
    return hashlib.new(hash_name, b"blob %d\0" % len(data) + data).hexdigest()


def _differs_from(tree: RunTree, head: Mapping[bytes, tuple[str, str]]) -> set[bytes]:
    """Paths added, modified or deleted against ``head`` (in bulk: every path of the tree)."""
    committed = map(head.get, tree.object_ids, itertools.repeat(_NOT_THERE))
    differing = map(operator.ne, tree.object_ids.values(), map(operator.itemgetter(1), committed))
    return set(itertools.compress(tree.object_ids, differing)) | (head.keys() - tree.files.keys())


def _under(rel: bytes, folders: Sequence[bytes]) -> bool:
    return any(folder in (b"", rel) or rel.startswith(folder + b"/") for folder in folders)


# --- the claim's binding ----------------------------------------------------------------------


def require_recorded(
    tree: RunTree,
    head: Mapping[bytes, tuple[str, str]] | None,
    mutations: Sequence[Mutation],
    excluded: Iterable[str],
) -> None:
    """Refuse the run unless every file that differs from ``head`` (every listed file, outside
    git: ``head`` None) is as the claim's latest file_write for it records."""
    latest = latest_file_writes(mutations)
    skipped = [os.fsencode(path) for path in excluded]
    # A record without a digest (written by hand) binds nothing: only git can then say whether
    # its file changed.
    candidates = {
        target.encode()
        for target, mutation in latest.items()
        if _repository_path(target) and mutation.digest is not None
    }
    if head is not None:
        candidates |= _differs_from(tree, head)
    for rel in sorted(candidates):
        if is_byproduct(rel) or _under(rel, skipped) or _under(rel, tree.virtualenvs):
            continue
        current = tree.files.get(rel, DELETED)
        recorded = latest.get(display(rel))
        if recorded is None and head is None:
            continue  # outside git only what the claim records can be checked
        if recorded is None or recorded.digest != current:
            label = recorded.id if recorded is not None else "not recorded"
            raise ObservationFailed(
                f"{display(rel)} is not as the claim records it ({label}): "
                "run claim capture-git first"
            )


def _repository_path(target: str) -> bool:
    path = PurePosixPath(target)
    return bool(target) and not path.is_absolute() and ".." not in path.parts


# --- protected paths ---------------------------------------------------------------------------


def is_protected(rel: bytes, globs: Sequence[str]) -> bool:
    """Decides what a run does rather than what it tests: anything under a test folder, each
    runner's test files and configuration (:mod:`.runners`), and the operator's own globs."""
    if is_runner_protected(rel):
        return True
    return bool(globs) and any(fnmatch.fnmatchcase(display(rel), glob) for glob in globs)


def protected_among(paths: Iterable[bytes], globs: Sequence[str]) -> list[bytes]:
    """``is_protected`` of every path of a tree, at the cost of a lookup each."""
    if not globs:
        return of_kind(paths, PROTECTED)
    return [rel for rel in paths if is_protected(rel, globs)]


def changed_protected(
    tree: RunTree,
    head: Mapping[bytes, tuple[str, str]] | None,
    mutations: Sequence[Mutation],
    globs: Sequence[str],
) -> list[str]:
    """Protected paths that differ from ``head`` (added, modified, deleted) or that the claim
    records as written; outside git (``head`` None) every protected path present."""
    written = {target.encode() for target in latest_file_writes(mutations)}
    changed = set(tree.files) if head is None else _differs_from(tree, head)
    changed |= written
    return sorted(display(rel) for rel in changed if is_protected(rel, globs))


def changed_code(
    tree: RunTree,
    head: Mapping[bytes, tuple[str, str]] | None,
    mutations: Sequence[Mutation],
    globs: Sequence[str],
) -> list[bytes]:
    """The tree's paths that differ from ``head`` or that the claim records as written, and are
    no protected path: the code the agent changed (outside git, every unprotected path)."""
    written = {target.encode() for target in latest_file_writes(mutations)}
    changed = set(tree.files) if head is None else _differs_from(tree, head) | written
    return sorted(rel for rel in changed if rel in tree.files and not is_protected(rel, globs))


def changed_lines(
    tree: RunTree, root: Path, commit: str, paths: Sequence[bytes]
) -> dict[bytes, Lines | None]:
    """Each path with the lines of it that differ from the trusted ``commit`` (a line removed
    counts as a change of the lines on either side of it), or None where the whole file is the
    agent's: new since that commit, not text, or its objects not to be had whole (each is
    checked against its id, whoever's repository holds it)."""
    changed: dict[bytes, Lines | None] = dict.fromkeys(paths)
    if not paths:
        return changed
    try:
        source = GitContent(root, commit)
        known = [rel for rel in paths if rel in source.entries()]
        trusted = source.contents(known)
    except ObservationFailed:
        return changed
    for rel in known:
        try:
            before = trusted[rel].decode().splitlines()
            after = tree.read(rel).decode().splitlines()
        except UnicodeDecodeError:
            continue
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        changed[rel] = tuple(
            (max(1, start), start + 1) if start == end else (start + 1, end)
            for kind, _, _, start, end in matcher.get_opcodes()
            if kind != "equal"
        )
    return changed


class TrustedContent(Protocol):
    """Where the content of protected paths comes from: a commit the operator pinned, read as
    its objects hash (``GitContent``), or the copy the operator's store took at the start."""

    @property
    def commit(self) -> str: ...

    def entries(self) -> Mapping[bytes, tuple[str, str]]:
        """Path -> (mode, git blob id) of every file and link."""
        ...

    def contents(self, paths: Sequence[bytes]) -> dict[bytes, bytes]:
        """The bytes of each path, each checked against what ``entries`` says of it."""
        ...


class GitContent:
    """A pinned commit read from the repository's object store, every object checked against
    its id (``VerifiedObjects``)."""

    def __init__(self, root: Path, commit: str) -> None:
        self.objects = VerifiedObjects(root, commit, ObservationFailed)
        self.commit = commit
        self._entries = tree_entries(root, commit)

    def entries(self) -> Mapping[bytes, tuple[str, str]]:
        return self._entries

    def contents(self, paths: Sequence[bytes]) -> dict[bytes, bytes]:
        blobs = self.objects.read((self._entries[rel][1] for rel in paths), b"blob")
        return {rel: blobs[self._entries[rel][1]] for rel in paths}


def restore_protected(
    tree: RunTree, source: TrustedContent, globs: Sequence[str], hash_name: str, deadline: Deadline
) -> tuple[str, dict[str, list[str]]]:
    """Make every protected path exactly as the trusted ``source`` has it: its commit, and what
    was restored or removed."""
    entries = source.entries()
    trusted = {rel: entries[rel] for rel in protected_among(entries, globs)}
    removed = sorted(rel for rel in protected_among(tree.files, globs) if rel not in trusted)
    for rel in removed:
        tree.remove(rel)
    wanted = [
        rel
        for rel, (mode, oid) in sorted(trusted.items())
        if tree.object_ids.get(rel) != oid or mode == _SYMLINK_MODE
    ]
    deadline.check("restoring protected paths")
    contents = source.contents(wanted)
    for rel in wanted:
        deadline.check("restoring protected paths")
        tree.write(rel, contents[rel], trusted[rel][0], hash_name)
    return source.commit, {
        "restored": [display(rel) for rel in wanted],
        "removed": [display(rel) for rel in removed],
    }


def pinned_commit(root: Path, ref: str) -> str:
    """``ref`` when it is a full commit id the repository holds (checked against its bytes). A
    branch or tag name is refused: in the agent's repository it names whatever the agent made it
    name (``git branch -f main``); it is resolved only where the agent cannot move it (``claim
    gate --start``, the operator's CI)."""
    if object_format_of(ref) is None:
        raise UsageError(
            f"--trusted-ref: {ref!r} is not a full commit id; a branch or tag name in the "
            "agent's repository is the agent's to move: give the commit id the operator resolved "
            "(git rev-parse), or let claim gate --start resolve it"
        )
    VerifiedObjects(root, ref, ObservationFailed).commit_tree(ref)
    return ref
