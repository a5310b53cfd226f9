"""Verify a stream of claims (JSON Lines) with flat memory, optionally across processes.

Output order is input order. At most a fixed number of chunks are in flight, so memory does not
grow with the input however fast it can be read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import datetime
from itertools import islice

from ._json import dumps
from .errors import InvalidDocument
from .model import Policy, load_claim
from .verify import verify

CHUNK_LINES = 200
CHUNKS_IN_FLIGHT_PER_JOB = 4


def verify_line(line: bytes, policy: Policy | None, at: datetime, max_bytes: int) -> str:
    """One input line to one output line: the verdict, or ``{"state": "invalid", ...}``."""
    try:
        claim = load_claim(line, max_bytes)
    except InvalidDocument as error:
        return dumps({"state": "invalid", "error": str(error)})
    return dumps(verify(claim, at, policy).to_json())


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
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending: deque[Future[list[str]]] = deque()
        chunks = iter(lambda: list(islice(stripped, CHUNK_LINES)), [])
        for chunk in chunks:
            pending.append(pool.submit(_verify_chunk, chunk, policy, at, max_bytes))
            if len(pending) >= jobs * CHUNKS_IN_FLIGHT_PER_JOB:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
