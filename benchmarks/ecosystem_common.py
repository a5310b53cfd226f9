"""What the Go and Rust ecosystem benchmarks share: a repository with a committed bug and its fix
in the work tree, the operator's claim.toml, a timed command, and a loopback HTTP server standing
in for the registry (proxy.golang.org and crates.io are not reachable from every machine)."""

from __future__ import annotations

import functools
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from calc_repo import git  # benchmarks/calc_repo.py, beside this script

CLAIM = str(Path(sys.executable).with_name("claim"))
BARE, GATE = "bare test run", "claim gate"  # medians: build cache warm; dependencies cached
CONFIG = """\
[policy]
id = "bench/gate"
requires = ["test_run"]
max_age_s = 3600

[gate]
runs_dir = "{runs}"

[[check]]
type = "test_run"
command = {command}
trusted_ref = "main"
"""


def fixed_repo(root: Path, broken: Mapping[str, str], fixed: Mapping[str, str]) -> Path:
    """``root/repo``: ``broken`` committed on main, ``fixed`` written over it in the work tree."""
    repo = root / "repo"
    for name, text in broken.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    for name, text in fixed.items():
        (repo / name).write_text(text)
    return repo


def gate_config(root: Path, command: list[str]) -> Path:
    config = root / "ops" / "claim.toml"
    config.parent.mkdir()
    quoted = "[" + ", ".join(f'"{part}"' for part in command) + "]"
    config.write_text(CONFIG.format(runs=root / "runs", command=quoted))
    return config


def timed(
    argv: list[str], cwd: Path, expect: int = 0, env: Mapping[str, str] | None = None
) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        sys.exit(f"{argv[:2]} exited {done.returncode}: {done.stderr.decode()[-800:]}")
    return elapsed


def gate_rows(
    root: Path, repo: Path, config: Path, bare: list[str], runs: int,
    env: Mapping[str, str], build_cache: str,
) -> list[tuple[str, float]]:  # fmt: skip
    """The bare test command's median (its build cache warm, and empty as each gate run's is:
    ``build_cache`` names the variable), ``claim gate``'s with the dependency cache filled, the
    difference, and the first gate run after the cache was emptied (the install's cost)."""
    gate = [CLAIM, "gate", "--config", str(config), "--repo", str(repo), "--json"]
    timed([CLAIM, "gate", "--start", "--config", str(config), "--repo", str(repo)], repo, env=env)
    cache = root / "runs" / "dependencies"
    first = []
    for _ in range(max(1, runs // 3)):
        shutil.rmtree(cache, ignore_errors=True)
        first.append(timed(gate, repo, env=env))
    gate_s, bare_s, cold_s = [], [], []
    for run in range(runs):
        gate_s.append(timed(gate, repo, env=env))
        bare_s.append(timed(bare, repo, env=env))
        cold_s.append(timed(bare, repo, env={**env, build_cache: str(root / f"cold-{run}")}))
    gate_median, bare_median = statistics.median(gate_s), statistics.median(bare_s)
    # benchmarks/ecosystems.py finds the first two by name, for the added time and the ratio.
    return [
        (BARE, bare_median),
        (GATE, gate_median),
        ("bare test run, build cache empty", statistics.median(cold_s)),
        ("claim gate, first run (dependencies installed)", statistics.median(first)),
        ("dependency install (first gate run - later)", statistics.median(first) - gate_median),
    ]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Requests are not the benchmark's output."""


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` over HTTP on the loopback: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def show(title: str, rows: list[tuple[str, float]]) -> None:
    print(title)
    for name, value in rows:
        print(f"  {name}: {value:.2f}")
    found = dict(rows)
    print(f"  added per stop (gate - bare): {found[GATE] - found[BARE]:.2f}")
