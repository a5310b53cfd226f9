"""What the gate adds to an agent's stop: ``claim gate`` on a small repository whose test suite is
trivial, median of ``--runs``, minus the median of the same pytest run unsandboxed in the work
tree (interleaved, so both see the same machine load).

The difference is the gate's own cost per stop: starting the CLI, capturing the change with git,
copying the work tree, the sandbox, reading the report, verifying and recording the claim.
Run: ``.venv/bin/python benchmarks/gate_latency.py``.
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
CONFIG = """\
[policy]
id = "bench/gate"
requires = ["test_run"]
max_age_s = 3600

[gate]
runs_dir = "{runs}"

[[check]]
type = "test_run"
command = ["python", "-m", "pytest", "-q"]
trusted_ref = "main"
"""


def project(root: Path) -> tuple[Path, Path]:
    """A repository with one fixed bug in the work tree, and the operator's claim.toml."""
    repo = fixed_calc_repo(root, "def test_add():\n    assert add(2, 3) == 5\n")
    config = root / "ops" / "claim.toml"
    config.parent.mkdir()
    config.write_text(CONFIG.format(runs=root / "runs"))
    return repo, config


def timed(argv: list[str], cwd: Path, expect: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        sys.exit(f"{argv[:2]} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def measure(runs: int = 20) -> list[tuple[str, float]]:
    """The medians, labelled as benchmarks/ecosystems.py reads them (ecosystem_pytest.py)."""
    with tempfile.TemporaryDirectory(prefix="gate-latency-") as folder:
        repo, config = project(Path(folder))
        gate = [CLAIM, "gate", "--config", str(config), "--repo", str(repo), "--json"]
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        # The gate judges a change from the start it recorded before the agent worked.
        timed([CLAIM, "gate", "--start", "--config", str(config), "--repo", str(repo)], repo, 0)
        gate_s, pytest_s = [], []
        for _ in range(runs):
            gate_s.append(timed(gate, repo, expect=0))
            pytest_s.append(timed(pytest, repo, expect=0))
    return [("bare test run", statistics.median(pytest_s)),
            ("claim gate", statistics.median(gate_s))]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    (_, pytest_median), (_, gate_median) = measure(runs)
    print(f"claim gate, median of {runs}: {gate_median * 1000:.0f} ms")
    print(f"pytest alone (unsandboxed), median of {runs}: {pytest_median * 1000:.0f} ms")
    print(f"added per stop: {(gate_median - pytest_median) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
