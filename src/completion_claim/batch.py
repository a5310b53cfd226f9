"""Verify a stream of claims (JSON Lines) with flat memory, optionally across processes.

Output order is input order, and every input line gets exactly one output line: the verdict
with the input's ``line`` number and the claim's ``task_id`` first, or, for a line that cannot be
verified, ``{"line", "state": "invalid" | "error", "error"}``; the lines after it are verified
all the same. At most a fixed number of chunks are in flight, so memory does not grow with the
input however fast it can be read.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from datetime import datetime
from itertools import chain, islice
from typing import Literal

import msgspec

from ._json import cycle_collection_paused
from .errors import InvalidDocument
from .model import Policy, load_claim
from .trust import check_signatures
from .verify import State, verify

CHUNK_LINES = 200
CHUNKS_IN_FLIGHT_PER_JOB = 4
LineState = State | Literal["invalid", "error"]
Result = tuple[LineState, bytes]
"""One output line without its newline, and the state it reports (for the exit code)."""

_ENCODE = msgspec.json.Encoder().encode
# A batch line is one document: "(line 1, column 12)" of the decoder means column 12 of it.
_PLACE_IN_LINE = re.compile(r"\(line 1, column (\d+)\)")


def verify_line(
    line: bytes, number: int, policy: Policy | None, at: datetime, max_bytes: int
) -> Result:
    """Input line ``number`` (from 1) to its output line."""
    try:
        claim = load_claim(line, max_bytes)
    except InvalidDocument as error:
        text = _PLACE_IN_LINE.sub(r"(column \1)", str(error))
        return "invalid", _ENCODE({"line": number, "state": "invalid", "error": text})
    try:
        verdict = verify(claim, at, policy, signatures=check_signatures)
        body = verdict.encode()
    except Exception as error:  # one line's failure must not stop the others
        return _error_line(number, error)
    # The verdict's own object, opened with the two members that say which input it answers.
    head = b'{"line":%d,"task_id":%s,' % (number, _ENCODE(claim.task.id))
    return verdict.state, head + body[1:]


def _error_line(number: int, error: BaseException) -> Result:
    text = f"internal error: {type(error).__name__}: {error}"
    return "error", _ENCODE({"line": number, "state": "error", "error": text})


def _verify_chunk(
    lines: list[bytes], first: int, policy: Policy | None, at: datetime, max_bytes: int
) -> list[Result]:
    with cycle_collection_paused():  # nothing verified here forms a cycle
        return [verify_line(line, first + i, policy, at, max_bytes) for i, line in enumerate(lines)]


def verify_stream(
    lines: Iterable[bytes],
    policy: Policy | None,
    at: datetime,
    max_bytes: int,
    jobs: int = 1,
) -> Iterator[Result]:
    """Yield one result per input line, in input order. With more than one job, an input of
    fewer than two chunks is verified here: starting processes would cost more than it saves."""
    stripped = (line.rstrip(b"\r\n") for line in lines)
    chunks = iter(lambda: list(islice(stripped, CHUNK_LINES)), [])
    first = next(chunks, [])
    second = next(chunks, []) if jobs > 1 and len(first) == CHUNK_LINES else []
    if not second:
        yield from _verify_chunk(first, 1, policy, at, max_bytes)
        for i, chunk in enumerate(chunks, start=1):
            yield from _verify_chunk(chunk, 1 + i * CHUNK_LINES, policy, at, max_bytes)
        return
    yield from _in_processes([first, second], chunks, policy, at, max_bytes, jobs)


def _in_processes(
    started: list[list[bytes]],
    chunks: Iterator[list[bytes]],
    policy: Policy | None,
    at: datetime,
    max_bytes: int,
    jobs: int,
) -> Iterator[Result]:
    # Imported here: multiprocessing is worth loading only for an input that will use it.
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415
    from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

    pool = ProcessPoolExecutor(max_workers=jobs)
    number = 1
    try:
        pending: deque[tuple[int, int, Future[list[Result]]]] = deque()
        for chunk in chain(started, chunks):
            try:
                future = pool.submit(_verify_chunk, chunk, number, policy, at, max_bytes)
            except BrokenProcessPool:  # a worker died: go on with fresh ones
                pool.shutdown(wait=False)
                pool = ProcessPoolExecutor(max_workers=jobs)
                future = pool.submit(_verify_chunk, chunk, number, policy, at, max_bytes)
            pending.append((number, len(chunk), future))
            number += len(chunk)
            if len(pending) >= jobs * CHUNKS_IN_FLIGHT_PER_JOB:
                yield from _results(*pending.popleft())
        while pending:
            yield from _results(*pending.popleft())
    finally:
        pool.shutdown(cancel_futures=True)


def _results(first: int, size: int, future: Future[list[Result]]) -> list[Result]:
    try:
        return future.result()
    except Exception as error:
        # The chunk never came back (BrokenProcessPool: its worker was killed, ran out of
        # memory): its lines are unverified, and each says so.
        return [_error_line(first + i, error) for i in range(size)]
