"""The files a test run reads: where the workspace is, what it holds, and its test configuration.

A workspace is the git work tree containing the run's directory, or that directory when it is not
in a repository. Its content is a map ``relative path -> sha256:<hex>`` over the tracked and
untracked (not ignored) files, plus every test configuration file found anywhere under the root,
ignored or not: an ignored ``conftest.py`` or ``.pth`` still changes what a run does. What running
tests writes (``__pycache__/``, ``*.pyc``, ``.pytest_cache/``) is left out, so an ordinary run in a
repository without a ``.gitignore`` leaves the digest unchanged.

The workspace digest is ``sha256:`` over the sorted entries, each ``path NUL digest NUL`` (path as
the raw bytes the file system holds), so anyone can recompute it.

Paths stay bytes internally: any name the file system holds can be read back; they are decoded
only for display.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ObservationFailed
from .repository import (
    changed_files,
    content_digest,
    display,
    git_process,
    git_toplevel,
    run_git,
    split_z,
)

Files = dict[bytes, str]
"""Relative path (POSIX, bytes) -> content digest."""

_BYPRODUCT_DIRS = frozenset({b"__pycache__", b".pytest_cache"})
_NEVER_WALKED = _BYPRODUCT_DIRS | {b".git"}
_CONFIG_NAMES = frozenset(
    {
        b"conftest.py",
        b"pytest.ini",
        b"tox.ini",
        b"setup.cfg",
        b"pyproject.toml",
        b"sitecustomize.py",
    }
)


def is_byproduct(rel: bytes) -> bool:
    """Written by running Python tests, not read by them as source."""
    parts = rel.split(b"/")
    return rel.endswith(b".pyc") or any(part in _BYPRODUCT_DIRS for part in parts[:-1])


def is_test_config(rel: bytes) -> bool:
    name = rel.rsplit(b"/", 1)[-1]
    return name in _CONFIG_NAMES or name.endswith(b".pth")


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

    def snapshot(self, excluded: Iterable[Path] = ()) -> Files:
        """The content map of the workspace, leaving out ``excluded`` paths (files or folders)."""
        root = os.fsencode(self.root)
        skipped = [rel for rel in map(self._relative, excluded) if rel is not None]
        if self.in_git:
            listed = set(self._git_listed()) | set(_walk(root, every_file=False))
        else:
            listed = set(_walk(root, every_file=True))
        files: Files = {}
        for rel in sorted(listed):
            if is_byproduct(rel) or any(rel == s or rel.startswith(s + b"/") for s in skipped):
                continue
            digest = content_digest(root, rel)
            if digest is not None:
                files[rel] = digest
        return files

    def config_changed_from_head(self, files: Mapping[bytes, str]) -> list[str]:
        """Test configuration files that differ from HEAD: added, modified or deleted."""
        if self._has_head():
            head = set(split_z(run_git(self.root, "ls-tree", "-r", "-z", "--name-only", "HEAD")))
            modified = set(changed_files(self.root, "HEAD", ObservationFailed, is_byproduct))
        else:  # no commit yet: every configuration file is new
            head, modified = set(), set()
        current = {rel for rel in files if is_test_config(rel)}
        changed = {rel for rel in current if rel not in head or rel in modified}
        changed |= {rel for rel in head if is_test_config(rel) and rel not in current}
        return sorted(display(rel) for rel in changed)

    def _has_head(self) -> bool:
        done = git_process(self.root, ("rev-parse", "--verify", "-q", "HEAD"), ObservationFailed)
        return done.returncode == 0

    def _relative(self, path: Path) -> bytes | None:
        real = os.path.realpath(path)
        rel = os.path.relpath(real, self.root)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            return None
        return os.fsencode(Path(rel).as_posix())

    def _git_listed(self) -> list[bytes]:
        return split_z(
            run_git(self.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        )


def _walk(root: bytes, *, every_file: bool) -> Iterator[bytes]:
    """Files under ``root`` (every one, or only test configuration), not following links."""
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in _NEVER_WALKED]
        # A link to a folder is listed with the folders; it is content (its target text).
        links = [name for name in subfolders if os.path.islink(os.path.join(folder, name))]
        rel_folder = os.path.relpath(folder, root)
        for name in names + links:
            rel = name if rel_folder == b"." else rel_folder + b"/" + name
            if every_file or is_test_config(rel):
                yield rel


def tree_digest(files: Mapping[bytes, str]) -> str:
    hasher = hashlib.sha256()
    for rel in sorted(files):
        hasher.update(rel + b"\0" + files[rel].encode() + b"\0")
    return "sha256:" + hasher.hexdigest()


def config_digests(files: Mapping[bytes, str]) -> dict[str, str]:
    """The test configuration files among ``files``, by displayed path."""
    return {display(rel): digest for rel, digest in sorted(files.items()) if is_test_config(rel)}


def changed_paths(before: Mapping[bytes, str], after: Mapping[bytes, str]) -> list[str]:
    """Paths added, removed or modified between two snapshots."""
    return sorted(
        display(rel) for rel in set(before) | set(after) if before.get(rel) != after.get(rel)
    )
