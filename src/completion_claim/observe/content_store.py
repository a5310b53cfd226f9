"""The operator's content store: file contents the gate copied at ``claim gate --start``, kept
under the runs directory (outside the work tree, and the service's own for ``claim serve``), so
that trusted content is read from where the agent cannot write rather than from its object store.

Contents are addressed by their SHA-256 (``<store>/<hex[:2]>/<hex>``) and checked against it on
every read: a file changed or gone since it was stored fails the observation, and nothing else is
read in its place. A manifest says what each path held: ``{mode, sha256, blob}`` (``blob`` being
git's object id for the bytes, so a copy compares with a commit's tree without git).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files import open_regular, read_opened, write_atomic
from ..errors import InvalidDocument, ObservationFailed, UsageError
from .repository import display

MAX_STORED_BYTES = 1 << 30


class ContentStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, digest: str) -> Path:
        return self.folder / digest[:2] / digest

    def put(self, data: bytes) -> str:
        """Keep ``data``; its SHA-256 (hex)."""
        digest = hashlib.sha256(data).hexdigest()
        if self.get(digest) is None:
            self._path(digest).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomic(self._path(digest), data)
        return digest

    def get(self, digest: str) -> bytes | None:
        """The bytes stored as ``digest``; None when they are gone or no longer hash to it."""
        path = self._path(digest)
        try:
            with open_regular(path, follow_symlinks=False) as handle:
                data = read_opened(handle, MAX_STORED_BYTES, str(path))
        except (UsageError, InvalidDocument):
            return None
        return data if hashlib.sha256(data).hexdigest() == digest else None

    def require(self, digest: str, what: str) -> bytes:
        data = self.get(digest)
        if data is None:
            raise ObservationFailed(f"the operator's stored copy of {what} is gone or was changed")
        return data


@dataclass(frozen=True)
class StoredFile:
    mode: str  # git's file mode (100644, 100755, 120000)
    sha256: str
    blob: str

    def to_json(self) -> dict[str, str]:
        return {"mode": self.mode, "sha256": self.sha256, "blob": self.blob}


def stored_files(value: Any, where: str) -> dict[bytes, StoredFile]:
    """A manifest as a start record holds it (``{path: {mode, sha256, blob}}``)."""
    if type(value) is not dict:
        raise UsageError(f"{where}: not a manifest")
    files = {}
    for path, entry in value.items():
        if type(entry) is not dict or not all(
            type(entry.get(key)) is str for key in ("mode", "sha256", "blob")
        ):
            raise UsageError(f"{where}: the entry of {path!r} is not {{mode, sha256, blob}}")
        files[os.fsencode(path)] = StoredFile(entry["mode"], entry["sha256"], entry["blob"])
    return files


def manifest_json(files: Mapping[bytes, StoredFile]) -> dict[str, dict[str, str]]:
    return {manifest_path(rel): files[rel].to_json() for rel in sorted(files)}


def manifest_path(rel: bytes) -> str:
    try:
        return rel.decode()
    except UnicodeDecodeError:
        raise UsageError(f"cannot store {display(rel)}: its name is not UTF-8") from None


class StoredContent:
    """A trusted commit's files as the operator's store copied them (``TrustedContent``)."""

    def __init__(self, commit: str, files: Mapping[bytes, StoredFile], store: ContentStore):
        self.commit = commit
        self.files = files
        self.store = store

    def entries(self) -> Mapping[bytes, tuple[str, str]]:
        return {rel: (stored.mode, stored.blob) for rel, stored in self.files.items()}

    def contents(self, paths: Sequence[bytes]) -> dict[bytes, bytes]:
        return {rel: self.store.require(self.files[rel].sha256, display(rel)) for rel in paths}
