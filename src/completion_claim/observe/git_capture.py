"""Mutation capture from git: one ``file_write`` per file that differs from a base revision.

A file counts as changed when its content (or whether it is a link) differs from the base
commit's blob, hashed here with no filter (see ``repository``): modified, added, untracked (not
ignored) or deleted; or when the claim already records it and its content moved on since (a
reverted edit is an edit too). Files that running tests writes are left out, like the workspace
digest does (otherwise the observer's own test run would look like an edit made after it), and so
are the claim's own files: the claim and the temporary files its atomic writes leave beside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from .._files import is_temporary_of
from ..claimfile import next_id
from ..errors import ObservationFailed, UsageError
from ..model import FILE_WRITE, Mutation, Timestamp
from ..timefmt import format_time
from .repository import (
    SYMLINK_PREFIX,
    VerifiedObjects,
    changed_files,
    content_digest,
    git_process,
    git_toplevel,
    object_format_of,
)
from .workspace import Workspace, without_byproducts

if TYPE_CHECKING:
    from .mirror import Mirror

DELETED = "deleted"
WORKSPACE_ID_PREFIX = "workspace:"


@dataclass(frozen=True)
class FileChange:
    target: str  # POSIX path relative to the repository root
    at: datetime
    digest: str  # sha256:<hex>, symlink:..., or "deleted"


def repository_root(directory: Path) -> Path:
    if not directory.is_dir():
        raise UsageError(f"--repo: {directory} is not a directory")
    root = git_toplevel(directory, failure=ObservationFailed)
    if root is None:
        raise UsageError(f"{directory} is not inside a git repository")
    return Path(os.path.realpath(root))


def capture(
    root: Path,
    base: str | None,
    recorded: Sequence[Mutation],
    now: datetime,
    excluded: Iterable[Path],
    mirror: Mirror | None = None,
) -> list[FileChange]:
    """The changes in the work tree at ``root`` that ``recorded`` does not already hold, by path;
    against the commit ``base`` names (None: no commit, every file is new). The base commit's
    tree is read object by object, each checked against its id (``VerifiedObjects``).

    ``excluded`` are the claim files: neither they nor their temporary files are changes. ``now``
    dates deletions: when a file went is unknown, and the latest possible moment is the one that
    can never make a test run look newer than the deletion. With the operator's ``mirror``, a
    file its change cache vouches for is not read, and one read is copied into it in the same
    pass.
    """
    claim_files = [_relative(root, path) for path in excluded]

    def chosen(paths: Iterable[bytes]) -> list[bytes]:
        # Every file (100,000 in a monorepo); the gate's claim is not in the tree.
        kept = without_byproducts(paths)
        if not claim_files:
            return kept
        return [rel for rel in kept if not any(_belongs_to(rel, claim) for claim in claim_files)]

    root_bytes = os.fsencode(root)
    commit = None if base is None else _resolve(root, base)
    if mirror is None:
        current = changed_files(root, commit, ObservationFailed, chosen)
    else:
        current = changed_files(
            root,
            commit,
            ObservationFailed,
            chosen,
            lambda paths: mirror.scan(paths, ObservationFailed),
            mirror.listed(Workspace(root, in_git=True)),
        )
    latest = {target: m.digest for target, m in latest_file_writes(recorded).items()}
    for target, digest in latest.items():
        rel = target.encode()
        if _was_captured(target, digest) and rel not in current and chosen([rel]):
            current[rel] = content_digest(root_bytes, rel, ObservationFailed)
    changes = []
    for rel, digest in sorted(current.items()):
        change = _change(root_bytes, rel, digest, now)
        if latest.get(change.target) != change.digest:
            changes.append(change)
    return changes


def workspace_mutations(
    directory: Path, base: str, recorded: Sequence[Mutation], at: datetime, excluded: Iterable[Path]
) -> list[Mutation]:
    """The work tree's changes that ``recorded`` does not hold, as file_write mutations, all
    dated ``at`` (the decision time: no time the agent can set on a file comes after it), with
    ids ``workspace:<path>`` that say what they are."""
    taken = {m.id for m in recorded}
    found = []
    for change in capture(repository_root(directory), base, recorded, at, excluded):
        mutation_id = WORKSPACE_ID_PREFIX + change.target
        if mutation_id in taken:
            mutation_id = next_id(mutation_id + "#", taken)
        taken.add(mutation_id)
        found.append(
            Mutation(mutation_id, FILE_WRITE, change.target, Timestamp.of(at), change.digest)
        )
    return found


def as_mutation(mutation_id: str, change: FileChange) -> Mutation:
    return Mutation(mutation_id, FILE_WRITE, change.target, Timestamp.of(change.at), change.digest)


def mutation_record(mutation: Mutation) -> dict[str, str | None]:
    """A captured mutation as a claim document holds it."""
    return {
        "id": mutation.id,
        "kind": mutation.kind,
        "target": mutation.target,
        "at": format_time(mutation.at),
        "digest": mutation.digest,
    }


def _resolve(root: Path, base: str) -> str | None:
    """The commit ``base`` names; None for HEAD in a repository without commits. A full commit
    id must be there, its bytes hashing to it: one missing or rewritten fails the observation,
    as the agent's doing, rather than the command."""
    if object_format_of(base) is not None:
        VerifiedObjects(root, base, ObservationFailed).commit_tree(base)
        return base
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


def _change(root: bytes, rel: bytes, digest: str | None, now: datetime) -> FileChange:
    try:
        target = rel.decode()
    except UnicodeDecodeError:
        raise ObservationFailed(f"file name is not UTF-8, cannot record it: {rel!r}") from None
    if digest is None:
        return FileChange(target, now, DELETED)
    return FileChange(target, _modified_at(os.path.join(root, rel)), digest)


def _modified_at(path: bytes) -> datetime:
    """The file's modification time (for a link, the later of the link's and its target's),
    rounded up to the microsecond a claim can hold: rounding down could date an edit before a
    test run that started in the same microsecond."""
    nanoseconds = os.lstat(path).st_mtime_ns
    if os.path.islink(path) and os.path.exists(path):
        nanoseconds = max(nanoseconds, os.stat(path).st_mtime_ns)
    micro = -(-nanoseconds // 1000)
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micro)


def latest_file_writes(mutations: Sequence[Mutation]) -> dict[str, Mutation]:
    """For each file target, its latest file_write (by time, then by order in the claim)."""
    writes = [(m.at, index, m) for index, m in enumerate(mutations) if m.kind == FILE_WRITE]
    return {m.target: m for _, _, m in sorted(writes, key=lambda w: (w[0], w[1]))}


def _was_captured(target: str, digest: str | None) -> bool:
    """Looks like a capture-git record (a repository path with a content digest), so the file it
    names can be checked again; other file_write records are left to what git reports."""
    path = PurePosixPath(target)
    plain = bool(target) and not path.is_absolute() and ".." not in path.parts
    content = digest is not None and digest.startswith(("sha256:", SYMLINK_PREFIX))
    return plain and (digest == DELETED or content)


def _belongs_to(rel: bytes, claim: bytes) -> bool:
    """The claim file itself, or a temporary file its atomic writes make beside it."""
    if rel == claim:
        return True
    folder, name = os.path.split(rel)
    claim_folder, claim_name = os.path.split(claim)
    return folder == claim_folder and is_temporary_of(os.fsdecode(name), os.fsdecode(claim_name))


def _relative(root: Path, path: Path) -> bytes:
    return os.fsencode(Path(os.path.relpath(os.path.realpath(path), root)).as_posix())
