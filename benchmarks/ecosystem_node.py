"""What the gate adds to a stop on a Node project: ``claim gate`` next to the bare test command
in the work tree, for the ``node:test`` project and the vitest one (tests/fixtures/
node_projects.py), medians of ``--runs`` interleaved, in seconds; and the dependency cache's cost:
the first gate on an empty cache (``npm ci --ignore-scripts`` from the lockfile, with the
network) next to the later ones (the cache entry mounted read-only), and ``npm ci`` alone.

Run: ``.venv/bin/python benchmarks/ecosystem_node.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fixture projects live with the tests

from tests.fixtures.node_projects import PROJECTS, node_project  # noqa: E402
from tests.fixtures.projects import head_commit, write_files  # noqa: E402

CLAIM = str(Path(sys.executable).with_name("claim"))
CONFIG = """\
[policy]
id = "bench/node"
requires = ["test_run"]
max_age_s = 3600

[gate]
runs_dir = "{runs}"

[[check]]
type = "test_run"
command = {command}
trusted_ref = "{base}"
"""
COMMANDS = {
    "node-test": (["node", "--test"], ["node", "--test"]),
    "vitest": (["vitest", "run"], ["node", "node_modules/vitest/vitest.mjs", "run"]),
}


def timed(argv: list[str], cwd: Path, expect: int = 0) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        sys.exit(f"{argv[:3]} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def project(root: Path, runner: str) -> tuple[Path, list[str]]:
    """The fixed project, its claim.toml, and the gate's command line."""
    repo = node_project(root / "repo", runner)  # the bug committed: the fix is the change
    code, right, _, _, _ = PROJECTS[runner]
    write_files(repo, {code: right})
    config = root / "ops" / "claim.toml"
    config.parent.mkdir()
    base = head_commit(repo)
    gate_command = str(COMMANDS[runner][0]).replace("'", '"')
    config.write_text(CONFIG.format(runs=root / "runs", command=gate_command, base=base))
    gate = [CLAIM, "gate", "--config", str(config), "--repo", str(repo), "--base", base, "--json"]
    return repo, gate


def measure(runs: int = 5) -> list[tuple[str, float]]:
    """The node:test project's rows under the labels make bench pairs (``bare test run``,
    ``claim gate``); the vitest project's prefixed with ``vitest``, with the cache's cost."""
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="ecosystem-node-") as folder:
        for runner in COMMANDS:
            repo, gate = project(Path(folder) / runner, runner)
            prefix = "" if runner == "node-test" else f"{runner} "
            if runner == "vitest":
                npm_ci = ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
                rows.append(("vitest npm ci in the work tree", timed(npm_ci, repo)))
                rows.append(("vitest claim gate, empty dependency cache", timed(gate, repo)))
            bare_s, gate_s = [], []
            for _ in range(runs):
                bare_s.append(timed(COMMANDS[runner][1], repo))
                gate_s.append(timed(gate, repo))
            bare, gated = statistics.median(bare_s), statistics.median(gate_s)
            rows.append((f"{prefix}bare test run", bare))
            rows.append((f"{prefix}claim gate", gated))
            if prefix:
                rows.append((f"{prefix}added per stop (gate - bare)", gated - bare))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    for name, value in measure(parser.parse_args().runs):
        print(f"{name}: {value:.3f} s")


if __name__ == "__main__":
    main()
