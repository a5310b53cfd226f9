"""File input and output shared by the commands: bounded reads, atomic writes."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

from .errors import InvalidDocument, UsageError

STDIN = "-"


def read_limited(path: str, max_bytes: int) -> bytes:
    """Read a whole file (``-`` for stdin), refusing to hold more than ``max_bytes`` of it.

    A named file must be a regular file; a stream comes through stdin.
    """
    try:
        if path == STDIN:
            return _read_at_most(sys.stdin.buffer, max_bytes, "stdin")
        with open_regular(path) as handle:
            return read_opened(handle, max_bytes, path)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_opened(handle: BinaryIO, max_bytes: int, source: str) -> bytes:
    """The rest of a file from ``open_regular``: refused by its size before any of it is read,
    and read with a bound all the same, in case it grows meanwhile."""
    if os.fstat(handle.fileno()).st_size > max_bytes:
        raise _over_the_limit(max_bytes, source)
    return _read_at_most(handle, max_bytes, source)


def open_regular(path: str | Path, *, follow_symlinks: bool = True) -> BinaryIO:
    """Open a regular file for reading, or fail at once with a UsageError naming it.

    Opening is non-blocking, so a FIFO cannot stall ``open`` waiting for a writer; the type is
    then checked on the open descriptor (no window for a swap), so a FIFO, a device or a
    directory is never read from. Reads of a regular file ignore the non-blocking flag.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {_open_failure(exc, follow_symlinks)}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UsageError(f"cannot read {path}: not a regular file ({_file_type(mode)})")
    return os.fdopen(fd, "rb")


def _open_failure(exc: OSError, follow_symlinks: bool) -> str:
    if exc.errno == errno.ENXIO:  # opening a socket, or a device with nothing behind it
        return "not a regular file"
    if exc.errno == errno.ELOOP and not follow_symlinks:
        return "a symbolic link, which is not followed here"
    return exc.strerror or str(exc)


_FILE_TYPES = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def _file_type(mode: int) -> str:
    return _FILE_TYPES.get(stat.S_IFMT(mode), "a special file")


def _read_at_most(handle: BinaryIO, max_bytes: int, source: str) -> bytes:
    data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _over_the_limit(max_bytes, source)
    return data


def _over_the_limit(max_bytes: int, source: str) -> InvalidDocument:
    return InvalidDocument("", f"document is over the size limit of {max_bytes} bytes", source)


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
