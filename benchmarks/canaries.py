"""What the observer's own tests in every run cost (issue 30): `claim observe test-run` of one
pytest suite with its canaries and with none, interleaved, beside the bare `python -m pytest`
run of the same suite; median of ``--runs`` each.

The runs without canaries are the observer's with ``Pytest.canaries`` answering None in this
process: the same copy, sandbox and plugin, only the planted tests missing. Goal: the canaries
add at most 10% of the bare run. This is a benchmark, not a test: it exits 0 and prints MISS
when the goal is missed. Run: ``.venv/bin/python benchmarks/canaries.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from calc_repo import fixed_calc_repo  # benchmarks/calc_repo.py, beside this script

from completion_claim.cli import run
from completion_claim.observe.runners.pytest import Pytest

GOAL = 0.10
TESTS = 300
SUITE = "".join(f"def test_{n}():\n    assert add({n}, 1) == {n + 1}\n\n\n" for n in range(TESTS))
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")


@contextlib.contextmanager
def no_canaries() -> Iterator[None]:
    planted = Pytest.canaries
    Pytest.canaries = lambda *_: None  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        Pytest.canaries = planted  # type: ignore[method-assign]


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def observe(repo: Path, claim: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = run(
            ["observe", "test-run", str(claim), "--cwd", str(repo), "--print", "--", *PYTEST]
        )
    assert code == 0, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        repo = fixed_calc_repo(Path(folder), SUITE)
        claim = Path(folder) / "claim.json"
        with contextlib.redirect_stdout(io.StringIO()):
            run(["new", str(claim), "--task-id", "b", "--outcome", "o"])
            run(["capture-git", str(claim), "--repo", str(repo)])

        def bare() -> object:
            return subprocess.run(PYTEST, cwd=repo, check=True, capture_output=True)

        def without() -> None:
            with no_canaries():
                observe(repo, claim)

        sides: dict[str, list[float]] = {"bare": [], "without": [], "with": []}
        for warm in (bare, lambda: observe(repo, claim), without):  # the caches, both sides
            warm()
        for _ in range(runs):
            sides["bare"].append(timed(bare))
            sides["without"].append(timed(without))
            sides["with"].append(timed(lambda: observe(repo, claim)))
    bare_s, without_s, with_s = (statistics.median(sides[key]) for key in sides)
    added = with_s - without_s
    print(f"canaries: pytest, {TESTS} tests, median of {runs} runs each, interleaved")
    print(f"  bare python -m pytest        {bare_s * 1000:8.0f} ms")
    print(f"  observed, no canaries        {without_s * 1000:8.0f} ms")
    print(f"  observed, with canaries      {with_s * 1000:8.0f} ms")
    verdict = "ok" if added <= GOAL * bare_s else "MISS"
    print(f"  canaries add                 {added * 1000:8.0f} ms = {added / bare_s:6.1%} of the "
          f"bare run (goal <= {GOAL:.0%}: {verdict})")  # fmt: skip


if __name__ == "__main__":
    main()
