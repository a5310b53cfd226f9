"""Verify a stream of claims (JSON Lines) with flat memory, optionally across processes.

Output order is input order, and every input line gets exactly one output line: the verdict
with the input's ``line`` number and the claim's ``task_id`` first, or, for a line that cannot be
verified, ``{"line", "state": "invalid" | "error", "error"}``; the lines after it are verified
all the same. At most a fixed number of chunks are in flight, so memory does not grow with the
input however fast it can be read.

Worker processes are this module's own, not a ``ProcessPoolExecutor``: that pool's workers share
one pipe for their results, so a worker killed halfway through sending one left the pool reading
the rest for ever. Here each worker has pipes of its own, and its death costs only its chunk.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Iterator
from contextlib import suppress
from datetime import datetime
from itertools import chain, islice
from typing import TYPE_CHECKING, Literal

import msgspec

from ._json import cycle_collection_paused
from .errors import InvalidDocument
from .model import Policy, load_claim
from .trust import check_signatures
from .verify import State, verify

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import DefaultContext

CHUNK_LINES = 200
CHUNKS_IN_FLIGHT_PER_JOB = 4
LineState = State | Literal["invalid", "error"]
Result = tuple[LineState, bytes]
"""One output line without its newline, and the state it reports (for the exit code)."""
Task = tuple[int, int, list[bytes]]
"""A chunk's index in the input, the number of its first line, and its lines."""
Settings = tuple[Policy | None, datetime, int]
"""What every chunk is verified with: the policy, the decision time, the largest line."""

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
        return _error_line(number, f"internal error: {type(error).__name__}: {error}")
    # The verdict's own object, opened with the two members that say which input it answers.
    head = b'{"line":%d,"task_id":%s,' % (number, _ENCODE(claim.task.id))
    return verdict.state, head + body[1:]


def _error_line(number: int, text: str) -> Result:
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
    pool = _Pool(jobs, (policy, at, max_bytes))
    window = jobs * CHUNKS_IN_FLIGHT_PER_JOB
    answered: dict[int, list[Result]] = {}  # by chunk index, until the chunks before are shown
    shown = handed = 0  # chunks yielded; chunks given to a worker
    number = 1
    try:
        for chunk in chain(started, chunks):
            timeout: float | None = 0  # first a look without waiting: an idle worker may be dead
            while True:
                pool.collect(answered, timeout)
                while shown in answered:
                    yield from answered.pop(shown)
                    shown += 1
                if handed - shown < window and (worker := pool.idle()) is not None:
                    break
                # Every worker busy, or the window full with chunk `shown` held by a worker:
                # an answer or a death will come.
                timeout = None
            pool.hand(worker, (handed, number, chunk), answered)
            handed += 1
            number += len(chunk)
        while True:
            while shown in answered:
                yield from answered.pop(shown)
                shown += 1
            if shown == handed:
                return
            pool.collect(answered, None)  # chunk `shown` is held by a worker
    finally:
        pool.close()


def _work(
    tasks: Connection,
    results: Connection,
    parent_ends: tuple[Connection, Connection],
    settings: Settings,
) -> None:
    """A worker process: verify chunks until told to stop or the parent is gone."""
    # Forked, this process holds copies of the parent's ends too; its own reads would then
    # never end, and it would outlive a parent that was killed.
    for end in parent_ends:
        end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the workers
    try:
        while (task := tasks.recv()) is not None:
            _, first, lines = task
            results.send(_verify_chunk(lines, first, *settings))
    except (EOFError, OSError):
        return  # the parent is gone


class _Worker:
    """A process verifying one chunk at a time, with a pipe each way whose far end only it
    holds: when it dies, even halfway through sending an answer, the parent's read of that
    answer ends (at end of file) instead of waiting for the rest."""

    def __init__(self, context: DefaultContext, settings: Settings):
        far_tasks, self.tasks = context.Pipe(duplex=False)
        self.results, far_results = context.Pipe(duplex=False)
        self.process = context.Process(
            target=_work,
            args=(far_tasks, far_results, (self.tasks, self.results), settings),
            daemon=True,
        )
        self.process.start()
        # Held here, the far ends would keep the parent's reads open after the worker died,
        # and be inherited by the workers forked next.
        far_tasks.close()
        far_results.close()
        self.held: Task | None = None  # the chunk it verifies, whose answer is due

    def stop(self) -> int | None:
        """End the process, killed if an answer is still due, and return its exit code."""
        if self.held is None:
            with suppress(OSError):  # already dead
                self.tasks.send(None)
        else:
            self.process.kill()
        self.process.join()
        code: int | None = self.process.exitcode
        self.tasks.close()
        self.results.close()
        self.process.close()
        return code


class _Pool:
    """Up to ``jobs`` workers, started as chunks come; a dead one is replaced by the next
    start. A chunk whose worker died before answering is one error line per line, naming how
    the worker died."""

    def __init__(self, jobs: int, settings: Settings):
        # Imported here: multiprocessing is worth loading only for an input that will use it.
        import multiprocessing  # noqa: PLC0415

        self.context = multiprocessing.get_context()
        self.jobs = jobs
        self.settings = settings
        self.workers: list[_Worker] = []

    def idle(self) -> _Worker | None:
        for worker in self.workers:
            if worker.held is None:
                return worker
        if len(self.workers) < self.jobs:
            self.workers.append(_Worker(self.context, self.settings))
            return self.workers[-1]
        return None

    def hand(self, worker: _Worker, task: Task, answered: dict[int, list[Result]]) -> None:
        worker.held = task
        try:
            worker.tasks.send(task)
        except OSError:  # it died since it was last seen
            self._bury(worker, answered)

    def collect(self, answered: dict[int, list[Result]], timeout: float | None) -> None:
        """Wait up to ``timeout`` (None: until something happens) for answers and deaths; put
        each answered chunk's lines, or its error lines, in ``answered`` by chunk index."""
        from multiprocessing.connection import wait  # noqa: PLC0415 - as multiprocessing

        busy = [worker.results for worker in self.workers if worker.held is not None]
        ready = set(wait([*busy, *(worker.process.sentinel for worker in self.workers)], timeout))
        for worker in list(self.workers):
            if worker.held is not None and worker.results in ready:
                try:
                    answered[worker.held[0]] = worker.results.recv()
                except (EOFError, OSError):  # it died before its answer was whole
                    self._bury(worker, answered)
                    continue
                worker.held = None
            if worker.process.sentinel in ready:  # dead, after any whole answer it sent
                self._bury(worker, answered)

    def _bury(self, worker: _Worker, answered: dict[int, list[Result]]) -> None:
        self.workers.remove(worker)
        death = _death(worker.stop())
        if worker.held is not None:
            index, first, lines = worker.held
            text = f"internal error: the worker process verifying this line died ({death})"
            answered[index] = [_error_line(first + i, text) for i in range(len(lines))]

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()


def _death(exitcode: int | None) -> str:
    """How a process ended, from its exit code: ``SIGKILL``, ``exit code 1``."""
    if exitcode is not None and exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"
