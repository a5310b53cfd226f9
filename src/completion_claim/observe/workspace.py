"""The files a test run reads: where the workspace is, what it holds, and its test configuration.

A workspace is the git work tree containing the run's directory, or that directory when it is not
in a repository. A test run is given its listed files: tracked and untracked (not ignored) ones,
or every file outside git; what running tests writes (``__pycache__/``, ``*.pyc``,
``.pytest_cache/``) is left out. Its content is a map ``relative path -> sha256:<hex>``.

The workspace digest is ``sha256:`` over the sorted entries, each ``path NUL digest NUL`` (path as
the raw bytes the file system holds), so anyone can recompute it.

Paths stay bytes internally: any name the file system holds can be read back; they are decoded
only for display.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ObservationFailed
from .repository import (
    StartedGit,
    VerifiedObjects,
    display,
    git_process,
    git_toplevel,
    split_z,
    tree_object_format,
    with_mode,
)
from .runners import CONFIGURATION, of_kind

Files = dict[bytes, str]
"""Relative path (POSIX, bytes) -> content digest."""

_SUBMODULE_MODE = "160000"
_BYPRODUCT_DIRS = frozenset({b"__pycache__", b".pytest_cache"})
_NEVER_WALKED = _BYPRODUCT_DIRS | {b".git"}


def is_byproduct(rel: bytes) -> bool:
    """Written by running Python tests, not read by them as source."""
    if b"__pycache__" not in rel and b".pytest_cache" not in rel:
        return rel.endswith(b".pyc")  # the common case, without splitting the path
    parts = rel.split(b"/")
    return rel.endswith(b".pyc") or any(part in _BYPRODUCT_DIRS for part in parts[:-1])


def without_byproducts(paths: Iterable[bytes]) -> list[bytes]:
    """``paths`` but the byproducts, asking ``is_byproduct`` only of the few that may be."""
    paths = list(paths)
    candidates = containing(paths, (b".pyc", b"__pycache__", b".pytest_cache"))
    byproducts = {rel for rel in candidates if is_byproduct(rel)}
    return list(itertools.filterfalse(byproducts.__contains__, paths)) if byproducts else paths


def containing(paths: Sequence[bytes], marks: Iterable[bytes]) -> set[bytes]:
    """Those of ``paths`` that contain one of ``marks``: found by searching all the paths at
    once (they are every file of the tree, and few contain one)."""
    joined = b"\0".join(paths)
    found: set[bytes] = set()
    for mark in marks:
        at = joined.find(mark)
        while at >= 0:
            start = joined.rfind(b"\0", 0, at) + 1
            end = joined.find(b"\0", at)
            end = len(joined) if end < 0 else end
            found.add(joined[start:end])
            at = joined.find(mark, end)
    return found


@dataclass(frozen=True)
class Workspace:
    root: Path
    in_git: bool

    @classmethod
    def containing(cls, directory: Path) -> Workspace:
        toplevel = git_toplevel(directory) if shutil.which("git") else None
        if toplevel is None:
            return cls(Path(os.path.realpath(directory)), in_git=False)
        return cls(Path(os.path.realpath(toplevel)), in_git=True)

    def listed(self) -> list[bytes]:
        """The files a run is given: in git, the tracked and the untracked but not ignored ones
        (so nothing hidden through .gitignore or .git/info/exclude); outside git, every file."""
        return Listing(self).result()

    def head(self) -> Mapping[bytes, tuple[str, str]] | None:
        """``HEAD``'s files as ``path -> (mode, object id)``; None outside git, and empty in a
        repository without a commit (every file is then new)."""
        if not self.in_git:
            return None
        done = git_process(self.root, ("rev-parse", "--verify", "-q", "HEAD"), ObservationFailed)
        head = done.stdout.decode().strip()
        return tree_entries(self.root, head) if done.returncode == 0 else {}

    def object_format(self) -> str:
        """The hash git names objects with (``sha1`` or ``sha256``)."""
        if not self.in_git:
            return "sha1"
        return tree_object_format(self.root)


class Listing:
    """``Workspace.listed``, started when made and taken by ``result``: git lists a monorepo's
    files while the caller goes on. One not wanted after all is ``stop``ped."""

    def __init__(self, workspace: Workspace) -> None:
        self.root = workspace.root
        listing = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        self._git = StartedGit(self.root, listing, ObservationFailed) if workspace.in_git else None

    def result(self) -> list[bytes]:
        if self._git is None:
            return sorted(_walk(os.fsencode(self.root)))
        # git lists the others, then the index, each sorted: two runs, merged in one pass.
        return sorted(dict.fromkeys(split_z(self._git.output())))

    def stop(self) -> None:
        if self._git is not None:
            self._git.stop()


def tree_entries(root: Path, commit: str) -> Mapping[bytes, tuple[str, str]]:
    """``path -> (mode, object id)`` for every file (blob: files and links) in ``commit`` (a
    full id), each object checked against its id (``VerifiedObjects``); read only, and, in a
    commit with no submodule, the very mapping every reader of the commit is given."""
    entries = VerifiedObjects(root, commit, ObservationFailed).entries(commit)
    submodules = set(with_mode(entries, _SUBMODULE_MODE))
    if not submodules:
        return entries
    return {rel: entry for rel, entry in entries.items() if rel not in submodules}


def _walk(root: bytes) -> Iterator[bytes]:
    """Every file under ``root``, not following links; a link to a folder is a file (its
    target text)."""
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in _NEVER_WALKED]
        links = [name for name in subfolders if os.path.islink(os.path.join(folder, name))]
        rel_folder = os.path.relpath(folder, root)
        for name in names + links:
            yield name if rel_folder == b"." else rel_folder + b"/" + name


def tree_digest(files: Mapping[bytes, str]) -> str:
    hasher = hashlib.sha256()
    for rel in sorted(files):
        hasher.update(rel + b"\0" + files[rel].encode() + b"\0")
    return "sha256:" + hasher.hexdigest()


def config_digests(files: Mapping[bytes, str]) -> dict[str, str]:
    """The test configuration files among ``files``, by displayed path."""
    return {display(rel): files[rel] for rel in sorted(of_kind(files, CONFIGURATION))}
