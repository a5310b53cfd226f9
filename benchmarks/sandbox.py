"""What the test-run sandbox costs: `claim observe test-run` on one small suite, sandboxed
(bubblewrap) and with ``--no-sandbox``, interleaved, median of ``--runs`` each.

Both paths copy the workspace and run the operator's interpreter; the difference is the sandbox
probe and bubblewrap's namespaces and mounts. Run: ``.venv/bin/python benchmarks/sandbox.py``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calc_repo import fixed_calc_repo  # benchmarks/calc_repo.py, beside this script

CLAIM = str(Path(sys.executable).with_name("claim"))
TESTS = "".join(f"def test_{n}():\n    assert add({n}, 1) == {n + 1}\n\n\n" for n in range(20))


def project(root: Path) -> tuple[Path, Path]:
    repo = fixed_calc_repo(root, TESTS)
    claim = root / "claim.json"
    for args in (["new", str(claim), "--task-id", "b", "--outcome", "o"],
                 ["capture-git", str(claim), "--repo", str(repo)]):  # fmt: skip
        subprocess.run([CLAIM, *args], check=True, capture_output=True)
    return repo, claim


def observe(repo: Path, claim: Path, *options: str) -> float:
    command = [CLAIM, "observe", "test-run", str(claim), "--cwd", str(repo), "--print",
               *options, "--", sys.executable, "-m", "pytest", "-q"]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        repo, claim = project(Path(folder))
        observe(repo, claim)  # warm the file cache for both
        sandboxed, bare = [], []
        for _ in range(runs):
            sandboxed.append(observe(repo, claim))
            bare.append(observe(repo, claim, "--no-sandbox"))
    with_sandbox, without = statistics.median(sandboxed), statistics.median(bare)
    print(f"observe test-run, 20 tests, median of {runs} runs each (whole CLI call):")
    print(f"  sandboxed (bubblewrap)  {with_sandbox * 1000:8.0f} ms")
    print(f"  --no-sandbox            {without * 1000:8.0f} ms")
    print(f"  overhead                {(with_sandbox - without) * 1000:8.0f} ms "
          f"({with_sandbox / without:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
