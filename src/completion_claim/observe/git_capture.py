"""Mutation capture from git: one ``file_write`` per file that differs from a base revision.

A file counts as changed when it is modified, added, untracked (not ignored) or deleted against
the base, or when the claim already records it and its content moved on since (a reverted edit
is an edit too). Files that running tests writes are left out, like the workspace digest does:
otherwise the observer's own test run would look like an edit made after it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath

from ..errors import UsageError
from ..model import Mutation
from .workspace import (
    DIFF_NAMES,
    content_digest,
    git_process,
    git_toplevel,
    is_byproduct,
    run_git,
    split_z,
)

FILE_WRITE = "file_write"
DELETED = "deleted"


@dataclass(frozen=True)
class FileChange:
    target: str  # POSIX path relative to the repository root
    at: datetime
    digest: str  # sha256:<hex>, or "deleted"


def repository_root(directory: Path) -> Path:
    if not directory.is_dir():
        raise UsageError(f"--repo: {directory} is not a directory")
    root = git_toplevel(directory, failure=UsageError)
    if root is None:
        raise UsageError(f"{directory} is not inside a git repository")
    return Path(os.path.realpath(root))


def capture(
    root: Path, base: str, recorded: Sequence[Mutation], now: datetime, excluded: Iterable[Path]
) -> list[FileChange]:
    """The changes in the work tree at ``root`` that ``recorded`` does not already hold, by path.

    ``now`` dates deletions: when a file went is unknown, and the latest possible moment is the
    one that can never make a test run look newer than the deletion.
    """
    skipped = {_relative(root, path) for path in excluded}
    latest = _latest_digests(recorded)
    candidates = set(_changed_against(root, base))
    candidates |= {t.encode() for t, digest in latest.items() if _was_captured(t, digest)}
    changes = []
    for rel in sorted(candidates):
        if is_byproduct(rel) or rel in skipped:
            continue
        change = _current(root, rel, now)
        if change is not None and latest.get(change.target) != change.digest:
            changes.append(change)
    return changes


def _changed_against(root: Path, base: str) -> list[bytes]:
    commit = _resolve(root, base)
    if commit is None:  # no commit yet: everything in the work tree is new
        listing = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        return split_z(run_git(root, *listing, failure=UsageError))
    changed = split_z(run_git(root, *DIFF_NAMES, commit, "--", failure=UsageError))
    untracked = ("ls-files", "-z", "--others", "--exclude-standard")
    return changed + split_z(run_git(root, *untracked, failure=UsageError))


def _resolve(root: Path, base: str) -> str | None:
    """The commit ``base`` names; None for HEAD in a repository without commits."""
    if base.startswith("-"):
        raise UsageError(f"--base: {base!r} is not a revision")
    found = git_process(
        root, ("rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"), UsageError
    )
    if found.returncode == 0:
        return found.stdout.decode().strip()
    if base == "HEAD":  # HEAD always exists; failing to resolve means no commit yet
        return None
    raise UsageError(f"--base: no commit {base!r} in {root}")


def _current(root: Path, rel: bytes, now: datetime) -> FileChange | None:
    try:
        target = rel.decode()
    except UnicodeDecodeError:
        raise UsageError(f"file name is not UTF-8, cannot record it: {rel!r}") from None
    path = os.path.join(os.fsencode(root), rel)
    digest = content_digest(path)
    if digest is not None:
        return FileChange(target, _modified_at(path), digest)
    if os.path.lexists(path):  # a folder (submodule, nested repository): not a file write
        return None
    return FileChange(target, now, DELETED)


def _modified_at(path: bytes) -> datetime:
    """The file's modification time, rounded up to the microsecond a claim can hold: rounding
    down could date an edit before a test run that started in the same microsecond."""
    nanoseconds = os.lstat(path).st_mtime_ns
    micro = -(-nanoseconds // 1000)
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micro)


def _latest_digests(recorded: Sequence[Mutation]) -> dict[str, str | None]:
    """For each file target, the digest of its latest file_write (by time, then by order)."""
    writes = [(m.at, index, m) for index, m in enumerate(recorded) if m.kind == FILE_WRITE]
    return {m.target: m.digest for _, _, m in sorted(writes, key=lambda w: (w[0], w[1]))}


def _was_captured(target: str, digest: str | None) -> bool:
    """Looks like a capture-git record (a repository path with a content digest), so the file it
    names can be checked again; other file_write records are left to what git reports."""
    path = PurePosixPath(target)
    plain = bool(target) and not path.is_absolute() and ".." not in path.parts
    return plain and digest is not None and (digest == DELETED or digest.startswith("sha256:"))


def _relative(root: Path, path: Path) -> bytes:
    return os.fsencode(Path(os.path.relpath(os.path.realpath(path), root)).as_posix())
