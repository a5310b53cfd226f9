"""Trust anchors: what the gate believes about a repository the agent controls, and where from.

Every ref, object and file in the agent's repository is the agent's to write. The gate believes:

- a **commit id** the operator gave (``--base``, ``--trusted-ref``, ``[gate].base`` of a claim.toml
  outside the work tree), or one ``claim gate --start`` resolved and recorded before the agent
  worked. A branch or tag name is resolved only at the start, never when judging;
- **content** the operator's store copied at the start (``content_store``), else objects of a
  pinned commit whose bytes hash to their ids (``VerifiedObjects``);
- **configuration files** inside the work tree only as the start record's copies (else as the
  pinned base commit holds them): one the agent changed is read as the operator's copy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._files import open_regular, read_opened
from ..errors import ClaimError, InvalidDocument, ObservationFailed, UsageError
from ..observe.content_store import (
    ContentStore,
    StoredContent,
    StoredFile,
    manifest_json,
    stored_files,
)
from ..observe.repository import VerifiedObjects, display, git_process, object_format_of
from ..observe.run_tree import GitContent, TrustedContent, is_protected, protected_among
from ..observe.workspace import tree_entries
from .baseline import repository_id
from .config import GateConfig, TestRunCheck, load_config

STORE_FOLDER = "store"
MAX_CONFIG_BYTES = 16 << 20
NO_TRUSTED_BASE = (
    "no trusted base: run `claim gate --start` before the agent works, or pass --base with a "
    "full commit id"
)


def content_store(config: GateConfig, root: Path) -> ContentStore:
    return ContentStore(config.runs_dir / repository_id(root) / STORE_FOLDER)


def in_tree(config: GateConfig, root: Path) -> dict[str, Path]:
    """The configuration's files inside the work tree, by their path in it."""
    found = {}
    for path in config.files:
        rel = _tree_path(path, root)
        if rel is not None:
            found[rel] = path
    return found


def _tree_path(path: Path, root: Path) -> str | None:
    """``path``'s place in the work tree, None outside it. The entry itself, not what a link
    there leads to: a claim.toml swapped for a link is a changed claim.toml."""
    tree = os.path.realpath(root)
    real = os.path.join(os.path.realpath(path.parent), path.name)
    if not real.startswith(tree.rstrip("/") + "/"):
        return None
    return Path(os.path.relpath(real, tree)).as_posix()


# --- at the start ------------------------------------------------------------------------------


def start_anchors(config: GateConfig, root: Path, trusted_ref: str | None = None) -> dict[str, Any]:
    """What a start record holds besides the base and the baselines: each test_run's trusted
    ref (``trusted_ref``, ``--trusted-ref``'s commit, in place of each check's own when given)
    resolved to its commit, the protected files of that commit and the configuration files in
    the work tree, copied into the operator's store."""
    store = content_store(config, root)
    trusted_refs: dict[str, str] = {}
    protected = []
    for check in config.checks:
        ref = trusted_ref or (check.trusted_ref if isinstance(check, TestRunCheck) else None)
        if not isinstance(check, TestRunCheck) or ref is None:
            continue
        commit = trusted_refs.get(ref) or _resolve_now(root, ref)
        trusted_refs[ref] = commit
        source = GitContent(root, commit)
        kept = [rel for rel in source.entries() if is_protected(rel, check.protect)]
        files = {}
        for rel, data in source.contents(kept).items():
            mode, blob = source.entries()[rel]
            files[rel] = StoredFile(mode, store.put(data), blob)
        protected.append(
            {"commit": commit, "protect": list(check.protect), "files": manifest_json(files)}
        )
    config_files = {}
    for name, path in in_tree(config, root).items():
        try:
            config_files[name] = store.put(path.read_bytes())
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return {"trusted_refs": trusted_refs, "protected": protected, "config_files": config_files}


def _resolve_now(root: Path, ref: str) -> str:
    """``ref``'s commit now, before the agent works (replace refs and grafts off), checked
    against its bytes."""
    if object_format_of(ref) is not None:
        VerifiedObjects(root, ref, UsageError).commit_tree(ref)
        return ref
    if ref.startswith("-"):
        raise UsageError(f"trusted_ref: {ref!r} is not a revision")
    done = git_process(root, ("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"), UsageError)
    commit = done.stdout.decode().strip()
    if done.returncode != 0 or object_format_of(commit) is None:
        raise UsageError(f"trusted_ref: no commit {ref!r} in {root}")
    VerifiedObjects(root, commit, UsageError).commit_tree(commit)
    return commit


# --- when judging ------------------------------------------------------------------------------


def pinned_trusted_ref(ref: str | None, record: Mapping[str, Any] | None) -> str | None:
    """The commit a test_run's trusted ref stands for: a full commit id as given, a name as the
    start record resolved it; a name nobody resolved before the agent worked fails the check."""
    if ref is None or object_format_of(ref) is not None:
        return ref
    resolved = {} if record is None else record.get("trusted_refs")
    commit = resolved.get(ref) if isinstance(resolved, dict) else None
    if isinstance(commit, str) and object_format_of(commit) is not None:
        return commit
    raise ObservationFailed(
        f"trusted_ref {ref!r} is a name the agent can move, and no start record resolved it: "
        "run `claim gate --start` before the agent works, or give the full commit id"
    )


def require_base_tests(
    root: Path,
    base: str | None,
    commit: str,
    stored: TrustedContent | None,
    protect: tuple[str, ...],
) -> None:
    """Refuse a run whose trusted commit (as the start ``stored`` it, else as git holds it)
    lacks protected files the base commit has: the run would delete them (they are not the
    trusted commit's), and a test the operator committed after pinning the trusted ref would
    silently not run (attack 101)."""
    if base is None or base == commit:
        return
    source = stored or GitContent(root, commit)
    trusted = set(protected_among(source.entries(), protect))
    lacking = [display(rel) for rel in protected_among(tree_entries(root, base), protect)
               if rel not in trusted]  # fmt: skip
    if lacking:
        named = ", ".join(sorted(lacking)[:3]) + (
            f" and {len(lacking) - 3} more" if len(lacking) > 3 else ""
        )
        raise ObservationFailed(
            f"the trusted ref {commit} lacks {named}, which the base {base} has: the tests would "
            "run without them; point trusted_ref (or --trusted-ref) at a commit that has them, "
            "such as the base"
        )


def stored_content(
    config: GateConfig,
    root: Path,
    record: Mapping[str, Any] | None,
    commit: str,
    protect: tuple[str, ...],
) -> TrustedContent | None:
    """The start record's copy of ``commit``'s protected files under these globs, if it took
    one."""
    for entry in [] if record is None else record.get("protected") or []:
        if (
            isinstance(entry, dict)
            and entry.get("commit") == commit
            and entry.get("protect") == list(protect)
        ):
            files = stored_files(entry.get("files"), "the start record's protected files")
            return StoredContent(commit, files, content_store(config, root))
    return None


def operator_config(
    config: GateConfig, root: Path, record: Mapping[str, Any] | None, base: str | None
) -> tuple[GateConfig, list[str]]:
    """The configuration as the operator left it. A file of it inside the work tree that
    differs from the start record's copy (else from the pinned base commit) was changed by
    someone other than the operator's start: the configuration is read again from the
    operator's copies, every file inside the work tree from them, whichever files the copy
    names; and the files that differed. Without either, there is nothing to compare with (and
    no trusted base: the run fails anyway)."""
    files = in_tree(config, root)
    if not files or (record is None and base is None):
        return config, []
    copies = _OperatorCopies(config, root, record, base)
    changed = [rel for rel, path in files.items() if copies.get(rel) != _current(path)]
    if not changed:
        return config, []

    def read(path: Path) -> bytes:
        rel = _tree_path(path, root)
        if rel is None:
            return path.read_bytes()
        copy = copies.get(rel)
        if copy is None:
            raise FileNotFoundError(2, "the operator has no copy of it", rel)
        return copy

    try:
        return load_config(config.path, config.environ, read), changed
    except (ClaimError, OSError) as error:
        raise ObservationFailed(
            f"the gate's configuration in the work tree ({', '.join(changed)}) is not the "
            f"operator's copy, and that copy cannot be read ({error}): an operator who changed "
            "it runs claim gate --start again"
        ) from None


class _OperatorCopies:
    """Configuration files as the operator left them: the start record's stored copies, else
    the blobs of the pinned base commit."""

    def __init__(
        self, config: GateConfig, root: Path, record: Mapping[str, Any] | None, base: str | None
    ) -> None:
        recorded = None if record is None else record.get("config_files")
        self.digests = recorded if isinstance(recorded, dict) else {}
        self.store = content_store(config, root)
        self.source = None if record is not None or base is None else GitContent(root, base)

    def get(self, rel: str) -> bytes | None:
        if self.source is None:
            digest = self.digests.get(rel)
            return self.store.get(digest) if isinstance(digest, str) else None
        if rel.encode() not in self.source.entries():
            return None
        return self.source.contents([rel.encode()])[rel.encode()]


def _current(path: Path) -> bytes | None:
    """The file as the work tree holds it now; None for anything but a readable regular file
    (a FIFO the agent put there must not stall the gate)."""
    try:
        with open_regular(path) as handle:
            return read_opened(handle, MAX_CONFIG_BYTES, str(path))
    except (UsageError, InvalidDocument):
        return None
