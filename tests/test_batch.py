"""``verify --batch``: one output line per input line, in order, whatever one line does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from completion_claim.batch import CHUNK_LINES, verify_stream

from .builders import claim_doc, evidence, mutation
from .test_files import CLAIM_SCRIPT, HANG_TIMEOUT_S, claim_script

# Decided one minute into year 1: a policy may only look back that far before the calendar
# starts, so a longer max_age_s is a real input that verify cannot compute with today.
DECIDE = "0001-01-01T00:01:00Z"


def claim_line(max_age_s: float) -> bytes:
    doc = claim_doc(
        mutations=[mutation(at="0001-01-01T00:00:10Z")],
        evidence_items=[evidence(at="0001-01-01T00:00:40Z")],
        policy={"id": "p", "requires": [], "max_age_s": max_age_s},
    )
    return json.dumps(doc).encode()


GOOD = claim_line(30)
# Each verified as OverflowError (exit 4, the whole batch lost) when this test was written: a
# max_age_s beyond any date, and a look-back of five minutes from one minute into the calendar.
HUGE_MAX_AGE = claim_line(1e12)
BEFORE_THE_CALENDAR = claim_line(300)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_attack_10_batch_bad_line_does_not_stop_the_rest(tmp_path: Path, jobs: str) -> None:
    """Enough lines for several chunks across processes: each bad one is one error line."""
    pattern = [GOOD, HUGE_MAX_AGE, GOOD, BEFORE_THE_CALENDAR]
    (tmp_path / "claims.jsonl").write_bytes(b"\n".join(pattern * 150) + b"\n")
    result = claim_script(
        *("verify", "--batch", "claims.jsonl", "--at", DECIDE, "--jobs", jobs), cwd=tmp_path
    )
    assert (result.returncode, result.stderr) == (0, b"")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 600
    assert {line["state"] for line in lines[0::2]} == {"verified"}
    for huge in lines[1::4]:  # invalid input once max_age_s is bounded
        assert huge["state"] in ("invalid", "error"), huge
    for early in lines[3::4]:  # a verdict once the stale cut-off is bounded by year 1
        assert early["state"] in ("error", "verified"), early
    for failed in (line for line in lines if line["state"] == "error"):
        assert failed["error"].startswith("internal error: OverflowError: ")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_line_that_fails_is_an_error_object_with_the_cause(jobs: int) -> None:
    """Through the library, in both of the stream's paths (two chunks and more go to worker
    processes): a decision time without an offset is refused by verify() itself, for every
    line, and no line is lost."""
    naive = datetime(2026, 8, 27, 18, 0, 20)  # no offset: verify() raises
    lines = [GOOD, b"{}", GOOD] * CHUNK_LINES
    results = list(verify_stream(lines, None, naive, 10_000, jobs))
    assert len(results) == len(lines)
    out = [json.loads(line) for _, line in results]
    cause = "internal error: ValueError: the decision time must carry a UTC offset"
    assert out[0] == {"line": 1, "state": "error", "error": cause}
    assert out[-1] == {"line": len(lines), "state": "error", "error": cause}
    assert out[1]["state"] == "invalid"
    assert [state for state, _ in results[:3]] == ["error", "invalid", "error"]


def test_each_line_says_which_input_it_answers() -> None:
    """``line`` (from 1) and the claim's ``task_id`` open each verdict; an invalid line has its
    number, and a JSON error's place is a column of that line."""
    at = datetime(2026, 8, 27, 18, 0, 20, tzinfo=UTC)
    good = json.dumps(claim_doc(task={"id": "task-7"})).encode()
    out = [json.loads(line) for _, line in verify_stream([good, b'{"a": x}'], None, at, 10_000)]
    assert list(out[0])[:3] == ["line", "task_id", "state"]
    assert (out[0]["line"], out[0]["task_id"], out[0]["state"]) == (1, "task-7", "verified")
    assert out[1] == {
        "line": 2,
        "state": "invalid",
        "error": "not JSON: Expecting value (column 7)",
    }


def _workers(parent: int) -> list[int]:
    """The pool's worker processes: forked children of ``parent`` with its command line."""
    own = Path(f"/proc/{parent}/cmdline").read_bytes()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and (entry / "cmdline").read_bytes() == own:
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _wait_for(condition: Callable[[], object], what: str) -> Any:
    deadline = time.monotonic() + HANG_TIMEOUT_S
    while not (result := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return result


def _in_pipe_write(pid: int) -> bool:
    """Whether process ``pid`` waits in the kernel for room in a pipe it writes to."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text().endswith("pipe_write")
    except OSError:
        return False


def _idle_after_writing(pid: int) -> bool:
    """Whether process ``pid`` waits to read a pipe after it wrote something (a worker: waits
    for work after it sent an answer, not before its first)."""
    try:
        waiting = Path(f"/proc/{pid}/wchan").read_text().endswith("pipe_read")
        io = Path(f"/proc/{pid}/io").read_text().split()
        return waiting and int(io[io.index("wchar:") + 1]) > 0
    except OSError:
        return False


def _done_verifying(pid: int) -> bool:
    """Waits on a pipe after writing: sends its answer, or waits for work after sending it."""
    return _in_pipe_write(pid) or _idle_after_writing(pid)


def _dead(pid: int) -> bool:
    """Gone, or a zombie that its parent has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _kill_a_worker_then_finish(
    tmp_path: Path, chunk: bytes, when: Callable[[int], bool], more_chunks: int
) -> list[dict[str, Any]]:
    """Run a batch of two chunks, SIGKILL a worker once ``when(its pid)`` holds, then feed
    ``more_chunks`` more: the output lines of a batch that exited 0 and wrote nothing on
    stderr."""
    argv = ["verify", "--batch", "-", "--jobs", "2", "--at", "2026-08-27T18:00:20Z"]
    with subprocess.Popen(
        [str(CLAIM_SCRIPT), *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        start_new_session=True,
    ) as batch:
        try:
            assert batch.stdin is not None
            # The batch reads on for a third chunk meanwhile: nothing reads the answers.
            batch.stdin.write(chunk * 2)
            batch.stdin.flush()
            victim = _wait_for(
                lambda: [pid for pid in _workers(batch.pid) if when(pid)],
                f"no worker ever met {when.__name__}",
            )[0]
            os.kill(victim, signal.SIGKILL)
            _wait_for(lambda: _dead(victim), "the worker never died")
            out, err = batch.communicate(chunk * more_chunks, timeout=HANG_TIMEOUT_S)
        except BaseException:
            # A hung batch and its workers die here, or Popen's exit would wait on them forever.
            os.killpg(batch.pid, signal.SIGKILL)
            raise
    assert (batch.returncode, err) == (0, b"")
    return [json.loads(line) for line in out.splitlines()]


def test_a_worker_killed_mid_answer_loses_its_lines_alone(tmp_path: Path) -> None:
    """A worker that dies (the OOM killer, say) halfway through sending an answer larger than a
    pipe holds: its lines are unverified, each says how it died, and the lines after them are
    verified by fresh workers. The batch once waited for the rest of that answer for ever."""
    chunk = (json.dumps(claim_doc()).encode() + b"\n") * CHUNK_LINES  # ~100 KB of verdicts
    lines = _kill_a_worker_then_finish(tmp_path, chunk, _in_pipe_write, 4)
    assert [line["line"] for line in lines] == list(range(1, 6 * CHUNK_LINES + 1))
    lost = "internal error: the worker process verifying this line died (SIGKILL)"
    first_two = [
        {line.get("error", line["state"]) for line in lines[i : i + CHUNK_LINES]}
        for i in (0, CHUNK_LINES)
    ]
    assert sorted(first_two, key=str) == [{lost}, {"verified"}]
    assert {line["state"] for line in lines[2 * CHUNK_LINES :]} == {"verified"}


def test_a_worker_killed_after_answering_loses_nothing(tmp_path: Path) -> None:
    """An answer sent whole counts even when its worker dies next, waiting for more work."""
    chunk = b"{}\n" * CHUNK_LINES  # each an invalid line: the answer fits in a pipe
    lines = _kill_a_worker_then_finish(tmp_path, chunk, _idle_after_writing, 2)
    assert [line["line"] for line in lines] == list(range(1, 4 * CHUNK_LINES + 1))
    assert {line["state"] for line in lines} == {"invalid"}


def test_workers_do_not_outlive_a_killed_batch(tmp_path: Path) -> None:
    """The batch itself SIGKILLed once its workers are done with their chunks (each waits to
    send an answer larger than a pipe holds, or for more work): they end too, instead of
    waiting for ever on pipes whose other end is gone."""
    chunk = (json.dumps(claim_doc()).encode() + b"\n") * CHUNK_LINES
    argv = ["verify", "--batch", "-", "--jobs", "2", "--at", "2026-08-27T18:00:20Z"]
    with subprocess.Popen(
        [str(CLAIM_SCRIPT), *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        cwd=tmp_path,
        start_new_session=True,
    ) as batch:
        try:
            assert batch.stdin is not None
            batch.stdin.write(chunk * 2)
            batch.stdin.flush()

            def both_done() -> list[int]:
                found = _workers(batch.pid)
                return found if len(found) == 2 and all(map(_done_verifying, found)) else []

            workers = _wait_for(both_done, "the two workers never got done with their chunks")
            os.kill(batch.pid, signal.SIGKILL)
            _wait_for(lambda: all(map(_dead, workers)), "a worker outlived the batch")
        finally:
            # Whatever is left dies here, or Popen's exit would wait on it.
            with suppress(ProcessLookupError):
                os.killpg(batch.pid, signal.SIGKILL)
