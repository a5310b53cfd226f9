"""Editing a claim file in place: locked, validated, atomic, and never dropping what it held.

Commands edit the raw JSON object (so members this version does not model survive untouched)
and validate the whole document before and after the edit.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any, BinaryIO

from ._files import open_regular, read_limited, read_opened, write_atomic
from ._json import DEFAULT_MAX_BYTES, decode_bytes, dumps, loads
from .errors import InvalidDocument, UsageError
from .model import Claim, parse_claim

RawClaim = dict[str, Any]
LOCK_TIMEOUT_S = 60.0
"""How long an edit waits for another writer. A process the agent left behind can hold the lock
for ever; the edit must end all the same."""


@contextmanager
def _locked(path: Path) -> Iterator[BinaryIO]:
    """Serialise writers of one claim, so concurrent observers never lose each other's evidence.

    The lock is on the claim file itself, opened for reading as ``open_regular`` does (a FIFO
    neither blocks nor is read) and never through a symbolic link: the edit replaces the path,
    so a link would silently become a file, and the lock would be taken on whatever it points
    at. Writers replace the file by rename, so a writer that waited on a file that has since
    been replaced tries again on the new one.
    """
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        handle = open_regular(path, follow_symlinks=False)
        _wait_for_lock(handle, path, deadline)
        try:
            still_there = os.path.samestat(os.lstat(path), os.fstat(handle.fileno()))
        except FileNotFoundError:
            still_there = False
        if still_there:
            break
        handle.close()
    with handle:
        yield handle


def _wait_for_lock(handle: BinaryIO, path: Path, deadline: float) -> None:
    pause = 0.005
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.close()
                raise UsageError(
                    f"{path} stayed locked by another process for {LOCK_TIMEOUT_S:g} s; "
                    "nothing was written"
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def read_claim(path: str | Path) -> tuple[RawClaim, Claim]:
    """The raw document and its parsed form; invalid documents name the file."""
    return _parse(read_limited(str(path), DEFAULT_MAX_BYTES), str(path))


def _parse(data: bytes, source: str) -> tuple[RawClaim, Claim]:
    try:
        raw = loads(decode_bytes(data))
        return raw, parse_claim(raw)
    except InvalidDocument as error:
        raise error.in_source(source) from None


def render(raw: RawClaim) -> bytes:
    return (dumps(raw, indent=2) + "\n").encode()


def create_claim(path: str | Path, raw: RawClaim) -> None:
    parse_claim(raw)
    write_atomic(path, render(raw), exclusive=True)


def edit_claim(path: str | Path, change: Callable[[RawClaim, Claim], None]) -> RawClaim:
    """Apply ``change`` to the raw claim under a lock; write only if the result is valid."""
    target = Path(path)
    with _locked(target) as handle:
        raw, claim = _parse(read_opened(handle, DEFAULT_MAX_BYTES, str(target)), str(target))
        change(raw, claim)
        try:
            parse_claim(raw)
        except InvalidDocument as error:
            raise error.in_source(f"{target} (after the edit)") from None
        write_atomic(target, render(raw))
    return raw


def next_id(prefix: str, taken: set[str]) -> str:
    """The first of ``prefix1``, ``prefix2``, ... not already taken."""
    return next(f"{prefix}{n}" for n in count(1) if f"{prefix}{n}" not in taken)
