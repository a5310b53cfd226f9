"""unittest: what the gate adds per stop on a small project tested with ``python -m unittest``
(calc.add fixed in the work tree), against the same command run bare in the work tree, medians
of interleaved runs. No dependencies to install. Run:
``.venv/bin/python benchmarks/ecosystem_unittest.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ecosystem_common import fixed_repo, gate_config
from ecosystem_java import gate_against_bare

TEST = """import unittest

from calc import add


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def measure() -> list[tuple[str, float]]:
    with tempfile.TemporaryDirectory(prefix="bench-unittest-") as folder:
        root = Path(folder)
        repo = fixed_repo(
            root,
            {"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": TEST},
            {"calc.py": "def add(a, b):\n    return a + b\n"},
        )
        bare = [sys.executable, "-B", "-m", "unittest", "-q"]
        return gate_against_bare(
            repo, gate_config(root, ["python", "-m", "unittest"]), bare, [], runs=10
        )


if __name__ == "__main__":
    for label, seconds in measure():
        print(f"{label:<44} {seconds:>8.3f}")
