"""What Python's runtime monitor costs: pytest on a project of 300 tests, bare and with the
monitor (:mod:`completion_claim.observe.runtime_monitor`) installed the way the observer's
plugin installs it (watching the changed ``calc.py``), interleaved; the CPU time of each run, the
least and the median of ``--runs``. CPU time, not wall time: the audit hook's cost is the
interpreter's, and a busy machine's scheduling would hide it. Run:
``.venv/bin/python benchmarks/monitor.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from completion_claim.observe import runtime_monitor

TEST_MODULE = (
    "import pytest\n\nfrom calc import add\n\n\n"
    "@pytest.mark.parametrize('n', range(10))\n"
    "def test_add(n):\n    assert add(n, n) == 2 * n\n"
)
# Installed when pytest registers it, as the observer's plugin installs the monitor.
PLUGIN = """import os, time

import bench_monitor_monitor as monitor


def pytest_addoption(pluginmanager):
    root = os.getcwd()
    files = frozenset({os.path.join(root, 'calc.py')})
    monitor.install(monitor.Watched(root, files, time.time_ns()), lambda record: None)
"""


def project(root: Path) -> None:
    (root / "tests").mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    for n in range(30):
        (root / "tests" / f"test_m{n}.py").write_text(TEST_MODULE)
    (root / "plugins").mkdir()
    (root / "plugins" / "bench_monitor.py").write_text(PLUGIN)
    shutil.copyfile(runtime_monitor.__file__, root / "plugins" / "bench_monitor_monitor.py")


def cpu_seconds(root: Path, *plugins: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugins, "tests"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root / "plugins")},
        check=True,
        capture_output=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    bare, monitored = [], []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        project(root)
        cpu_seconds(root)  # warm the file cache for both
        for _ in range(runs):
            bare.append(cpu_seconds(root))
            monitored.append(cpu_seconds(root, "-p", "bench_monitor"))
    least = min(monitored) / min(bare) - 1
    median = statistics.median(monitored) / statistics.median(bare) - 1
    print(f"pytest, 300 passing tests, CPU time of {runs} runs each (least, median):")
    for name, times in (("bare", bare), ("with the runtime monitor", monitored)):
        print(f"  {name:26} {min(times) * 1000:7.0f} ms {statistics.median(times) * 1000:7.0f} ms")
    print(f"  {'monitor cost':26} {least * 100:+6.1f} % {median * 100:+6.1f} %")


if __name__ == "__main__":
    main()
