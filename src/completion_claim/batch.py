"""Verify a stream of claims (JSON Lines) with flat memory, optionally across processes.

Output order is input order, and every input line gets exactly one output line: a line that
cannot be verified gets an error object, and the lines after it are verified all the same. At
most a fixed number of chunks are in flight, so memory does not grow with the input however fast
it can be read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from itertools import islice

from ._json import dumps
from .errors import InvalidDocument
from .model import Policy, load_claim
from .verify import verify

CHUNK_LINES = 200
CHUNKS_IN_FLIGHT_PER_JOB = 4


def verify_line(line: bytes, policy: Policy | None, at: datetime, max_bytes: int) -> str:
    """One input line to one output line: the verdict, ``{"state": "invalid", ...}`` for an
    invalid claim, or ``{"state": "error", ...}`` when verifying it failed otherwise."""
    try:
        return dumps(verify(load_claim(line, max_bytes), at, policy).to_json())
    except InvalidDocument as error:
        return dumps({"state": "invalid", "error": str(error)})
    except Exception as error:  # one line's failure must not stop the others
        return _error_line(error)


def _error_line(error: Exception) -> str:
    return dumps({"state": "error", "error": f"internal error: {type(error).__name__}: {error}"})


def _verify_chunk(
    lines: list[bytes], policy: Policy | None, at: datetime, max_bytes: int
) -> list[str]:
    return [verify_line(line, policy, at, max_bytes) for line in lines]


def verify_stream(
    lines: Iterable[bytes],
    policy: Policy | None,
    at: datetime,
    max_bytes: int,
    jobs: int = 1,
) -> Iterator[str]:
    """Yield one output line per input line, in input order."""
    stripped = (line.rstrip(b"\r\n") for line in lines)
    if jobs == 1:
        for line in stripped:
            yield verify_line(line, policy, at, max_bytes)
        return
    chunks = iter(lambda: list(islice(stripped, CHUNK_LINES)), [])
    pool = ProcessPoolExecutor(max_workers=jobs)
    try:
        pending: deque[tuple[int, Future[list[str]]]] = deque()
        for chunk in chunks:
            try:
                future = pool.submit(_verify_chunk, chunk, policy, at, max_bytes)
            except BrokenProcessPool:  # a worker died: go on with fresh ones
                pool.shutdown(wait=False)
                pool = ProcessPoolExecutor(max_workers=jobs)
                future = pool.submit(_verify_chunk, chunk, policy, at, max_bytes)
            pending.append((len(chunk), future))
            if len(pending) >= jobs * CHUNKS_IN_FLIGHT_PER_JOB:
                yield from _results(*pending.popleft())
        while pending:
            yield from _results(*pending.popleft())
    finally:
        pool.shutdown(cancel_futures=True)


def _results(size: int, future: Future[list[str]]) -> list[str]:
    try:
        return future.result()
    except Exception as error:
        # The chunk never came back (BrokenProcessPool: its worker was killed, ran out of
        # memory): its lines are unverified, and each says so.
        return [_error_line(error)] * size
