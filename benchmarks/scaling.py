"""What the gate adds to a stop as the repository grows (issue 19): repositories of 1k to 100k
small files, one changed file and one test, side by side in one run:

- ``git status --porcelain`` (what a stat cache answers in),
- the bare test run, ``python -m pytest -q tests`` in the work tree (no sandbox),
- the one-shot floor: a Python process that only lists the work tree as the gate does (``git
  ls-files``) and ``lstat``s every listed file, in two processes as the mirror does; no process
  started per stop can decide what changed in less (everything else a gate does comes on top),
- ``claim gate`` after ``claim gate --start``, configured as ``claim init`` writes it (the tests
  restored from a trusted commit): the first gate after the start (which filled the operator's
  mirror) and later ones (only what the change cache cannot vouch for is read),
- the added time (gate minus bare run) and the ratios;

then where a later gate's time goes, from the gate's own progress lines on stderr, each taken
as it arrives (the same runs): until the base is chosen (the interpreter, the imports, the
configuration, the start record), the capture (the change cache's index, git's listing, the stat
pass, the comparison with the base), the test run (the run's tree, the sandbox and the tests:
compare with the bare run) and the rest (the verdict, the record, the exit);

then, on one size, the scaling with the number of changed files (1, 10, 100, 1000).

Medians of ``--runs``, interleaved so every command sees the same machine load. The generated
repositories are kept under the system's temporary folder between runs (building 100k files and
committing them takes a while); each run puts its repository back to its commit and checks that
``git status`` is clean before measuring, and the runs folder (the mirror, the start record) is
new every run. ``--profile`` prints where one later gate's time goes (cProfile, cumulative).

The package is compiled to bytecode first, as an installed wheel is (``make`` does the same), and
pytest's assertion-rewrite cache of the plugins it loads is written once: where
PYTHONDONTWRITEBYTECODE is set (this workplace's shells) pytest would otherwise rewrite every
plugin module at every run, bare and sandboxed alike, and the bare run would take seconds.

Run: ``.venv/bin/python benchmarks/scaling.py`` (``--sizes 1000,10000`` for a quick look).
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLAIM = str(Path(sys.executable).with_name("claim"))
LAYOUT_VERSION = 1  # bump when the generated repository changes
FILES_A_FOLDER = 100
CALC_BUGGY = "def add(a, b):\n    return a - b\n"
CALC = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CONFIG = """\
[policy]
id = "bench/scaling"
requires = ["test_run"]
max_age_s = 3600

[gate]
runs_dir = "{runs}"

[[check]]
type = "test_run"
command = ["python", "-m", "pytest", "-q", "tests"]
trusted_ref = "{commit}"
"""
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


def repository(files: int) -> Path:
    """A committed repository of ``files`` small modules plus calc.py (buggy) and one test,
    back at its commit with nothing changed."""
    root = Path(tempfile.gettempdir()) / f"claim-bench-scaling-v{LAYOUT_VERSION}" / str(files)
    if not (root / ".bench-ready").exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
        root.mkdir(parents=True)
        for number in range(files):
            folder = root / "pkg" / f"d{number // FILES_A_FOLDER:05d}"
            if number % FILES_A_FOLDER == 0:
                folder.mkdir(parents=True)
            (folder / f"m{number:06d}.py").write_text(f"VALUE = {number}\n")
        (root / "tests").mkdir()
        (root / "calc.py").write_text(CALC_BUGGY)
        (root / "tests" / "test_calc.py").write_text(TEST)
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
        (root / ".git" / "info" / "exclude").write_text(".bench-ready\n")
        (root / ".bench-ready").write_text("")
    git(root, "checkout", "-q", "--", ".")
    git(root, "clean", "-q", "-fd")
    if git(root, "status", "--porcelain"):
        sys.exit(f"{root} is not back at its commit; remove it and run again")
    return root


def git(root: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


# What a process started per stop pays at the least: start, list as the gate lists, lstat each
# listed file (the second half in a forked process). Run as ``python -c FLOOR`` in the work tree.
FLOOR = """
import os, subprocess
out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                     capture_output=True, check=True).stdout
paths = sorted(dict.fromkeys(out.split(b"\\0")[:-1]))
half = len(paths) // 2
child = os.fork()
try:
    for rel in paths[half:] if child == 0 else paths[:half]:
        os.lstat(rel)
finally:
    if child == 0:
        os._exit(0)
os.waitpid(child, 0)
"""


def timed(argv: list[str], cwd: Path, expect: int | None = 0) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if expect is not None and done.returncode != expect:
        sys.exit(f"{' '.join(argv[:3])} exited {done.returncode}: {done.stderr.decode()[-800:]}")
    return elapsed


class Bench:
    def __init__(self, repo: Path, place: Path) -> None:
        self.repo = repo
        config = place / "ops" / "claim.toml"
        config.parent.mkdir(parents=True)
        commit = git(repo, "rev-parse", "HEAD").strip()
        config.write_text(CONFIG.format(runs=place / "runs", commit=commit))
        self.gate = [CLAIM, "gate", "--config", str(config), "--repo", str(repo), "--json"]
        self.status = ["git", "status", "--porcelain"]
        self.pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        self.floor = [sys.executable, "-c", FLOOR]

    def start(self) -> None:
        timed([*self.gate, "--start"], self.repo)

    def side_by_side(self, runs: int) -> dict[str, float]:
        found: dict[str, list[float]] = {"status": [], "pytest": [], "floor": []}
        for _ in range(runs):
            found["status"].append(timed(self.status, self.repo))
            found["pytest"].append(timed(self.pytest, self.repo))
            found["floor"].append(timed(self.floor, self.repo))
            for name, seconds in self.phased_gate().items():
                found.setdefault(name, []).append(seconds)
        return {name: statistics.median(times) for name, times in found.items()}

    def phased_gate(self) -> dict[str, float]:
        """One gate: its whole time (``gate``) and each of ``PHASES``, from the moments its
        progress lines arrive on stderr."""
        started = time.perf_counter()
        process = subprocess.Popen(self.gate, cwd=self.repo, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)  # fmt: skip
        assert process.stderr is not None
        arrived: dict[str, float] = {}
        for line in process.stderr:
            name, _, detail = line.decode().removeprefix("gate: ").partition(": ")
            step = "run" if detail.startswith("observing") else name.partition(" ")[0]
            arrived.setdefault(step, time.perf_counter())
        if process.wait() != 0 or set(arrived) < {"base", "capture", "run", "check", "verdict"}:
            sys.exit(f"the gate exited {process.returncode} or said less than expected")
        ended = time.perf_counter()
        return {
            "gate": ended - started,
            "start": arrived["base"] - started,
            "capture": arrived["capture"] - arrived["base"],
            "test run": arrived["check"] - arrived["capture"],
            "rest": ended - arrived["check"],
        }


PHASES = ("start", "capture", "test run", "rest")


def change(repo: Path, count: int, round_: int) -> None:
    """calc.py fixed, and ``count - 1`` modules edited (new content every round)."""
    (repo / "calc.py").write_text(CALC)
    for number in range(count - 1):
        path = repo / "pkg" / f"d{number // FILES_A_FOLDER:05d}" / f"m{number:06d}.py"
        path.write_text(f"VALUE = {number}\n# round {round_}\n")


def sizes_table(sizes: list[int], runs: int, profile: bool) -> None:
    print("| files | git status | bare pytest | one-shot floor | first gate | "
          "later gate (median) | added | gate / bare |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    phases = []
    for files in sizes:
        repo = repository(files)
        with tempfile.TemporaryDirectory(prefix="claim-bench-scaling-") as folder:
            bench = Bench(repo, Path(folder))
            bench.start()
            change(repo, 1, 0)
            first = timed(bench.gate, repo)
            times = bench.side_by_side(runs)
            added = times["gate"] - times["pytest"]
            print(
                f"| {files:,} | {times['status']:.3f} s | {times['pytest']:.3f} s | "
                f"{times['floor']:.3f} s | {first:.3f} s | {times['gate']:.3f} s | "
                f"{added:+.3f} s | "
                f"{times['gate'] / times['pytest']:.2f}x |",
                flush=True,
            )
            phases.append(
                f"| {files:,} | {times['pytest']:.3f} s | "
                + " | ".join(f"{times[phase]:.3f} s" for phase in PHASES)
                + f" | {times['gate']:.3f} s |"
            )
            if profile and files == max(sizes):
                where_the_time_goes(bench)
        repository(files)  # back at its commit for the next run
    print("\nWhere a later gate's time goes (medians of the same runs; the test run holds the "
          "run's tree, the sandbox and the tests):")  # fmt: skip
    print(f"| files | bare pytest | {' | '.join(PHASES)} | gate |")
    print("|---|---|" + "---|" * len(PHASES) + "---|")
    print("\n".join(phases), flush=True)


def changed_table(files: int, counts: list[int], runs: int) -> None:
    print(f"\nChanged files, {files:,}-file repository (each gate after a fresh edit of them):")
    print("| changed files | bare pytest | gate (median) | added |")
    print("|---|---|---|---|")
    repo = repository(files)
    with tempfile.TemporaryDirectory(prefix="claim-bench-scaling-") as folder:
        bench = Bench(repo, Path(folder))
        bench.start()
        change(repo, 1, 0)
        timed(bench.gate, repo)  # the mirror filled once
        for count in counts:
            gates, tests = [], []
            for round_ in range(runs):
                change(repo, count, round_ + 1)
                gates.append(timed(bench.gate, repo))
                tests.append(timed(bench.pytest, repo))
            gate, pytest = statistics.median(gates), statistics.median(tests)
            print(f"| {count:,} | {pytest:.3f} s | {gate:.3f} s | {gate - pytest:+.3f} s |",
                  flush=True)  # fmt: skip
    repository(files)


def where_the_time_goes(bench: Bench) -> None:
    """One later gate in this process, under cProfile: the costliest calls."""
    from completion_claim.cli import run  # noqa: PLC0415

    profiler = cProfile.Profile()
    cwd = os.getcwd()
    os.chdir(bench.repo)
    try:
        profiler.runcall(lambda: run(bench.gate[1:]))
    finally:
        os.chdir(cwd)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(20)
    print("\nWhere one later gate's time goes (cProfile: cumulative, then own time):")
    print(out.getvalue())


def warm_rewrite_cache() -> None:
    """One pytest run that may write bytecode: its assertion-rewrite cache of the plugins it
    loads (hypothesis, schemathesis in the dev venv) is then read by every later run, bare and
    sandboxed, as on a machine whose shells do not set PYTHONDONTWRITEBYTECODE."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="claim-bench-scaling-") as folder:
        Path(folder, "test_nothing.py").write_text("def test_nothing():\n    pass\n")
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", folder],
                       cwd=folder, env=environment, capture_output=True, check=False)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,50000,100000")
    parser.add_argument("--changed", default="1,10,100,1000")
    parser.add_argument("--changed-on", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    # Measured as installed, with bytecode: where PYTHONDONTWRITEBYTECODE is set (in this
    # workplace's shells) a checkout's modules would otherwise be compiled by every gate.
    import completion_claim  # noqa: PLC0415

    compileall.compile_dir(Path(completion_claim.__file__).parent, quiet=2)
    warm_rewrite_cache()
    sizes = [int(size) for size in args.sizes.split(",")]
    sizes_table(sizes, args.runs, args.profile)
    changed_table(args.changed_on, [int(count) for count in args.changed.split(",")], args.runs)


if __name__ == "__main__":
    main()
