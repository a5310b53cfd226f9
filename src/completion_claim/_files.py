"""File input and output shared by the commands: bounded reads, atomic writes."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

from .errors import InvalidDocument, UsageError

STDIN = "-"


def read_limited(path: str, max_bytes: int) -> bytes:
    """Read a whole file (``-`` for stdin), refusing to hold more than ``max_bytes`` of it."""
    try:
        if path == STDIN:
            return _read_at_most(sys.stdin.buffer, max_bytes, "stdin")
        with open(path, "rb") as handle:
            return _read_at_most(handle, max_bytes, path)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read_at_most(handle: BinaryIO, max_bytes: int, source: str) -> bytes:
    data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InvalidDocument("", f"document is over the size limit of {max_bytes} bytes", source)
    return data


def source_name(path: str) -> str:
    return "stdin" if path == STDIN else path


_TEMPORARY_SUFFIX = ".tmp"


def _temporary_prefix(name: str) -> str:
    return f".{name}."


def is_temporary_of(name: str, target_name: str) -> bool:
    """Whether ``name`` is a temporary file ``write_atomic`` makes beside ``target_name``."""
    return name.startswith(_temporary_prefix(target_name)) and name.endswith(_TEMPORARY_SUFFIX)


def write_atomic(
    path: str | Path, data: bytes, *, exclusive: bool = False, mode: int | None = None
) -> None:
    """Replace ``path`` with ``data`` in one step: a reader sees the old file or the new, never
    half of one. With ``exclusive``, refuse when the file already exists (even if another process
    creates it meanwhile). ``mode`` sets the new file's permissions (the temporary file has them
    from the start, so a private key is never readable by others, even briefly)."""
    target = Path(path)
    if exclusive and target.exists():
        raise UsageError(f"{target} already exists; refusing to overwrite it")
    temp = ""
    try:
        fd, temp = tempfile.mkstemp(
            prefix=_temporary_prefix(target.name), suffix=_TEMPORARY_SUFFIX, dir=target.parent
        )
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is None:
            keep = not exclusive and target.exists()
            os.chmod(temp, target.stat().st_mode & 0o7777 if keep else _new_file_mode())
        if exclusive:
            os.link(temp, target)
        else:
            os.replace(temp, target)
    except FileExistsError:
        raise UsageError(f"{target} already exists; refusing to overwrite it") from None
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if temp and os.path.exists(temp):
            os.unlink(temp)


def _new_file_mode() -> int:
    """What ``open()`` would give a new file under the current umask (mkstemp gives 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
