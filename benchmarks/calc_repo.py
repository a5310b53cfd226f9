"""The small repository the observer benchmarks run on: a committed bug in calc.add, its fix in
the work tree, and the tests given."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)


def fixed_calc_repo(root: Path, tests: str) -> Path:
    """``root/repo``: ``calc.py`` committed broken on main and fixed in the work tree."""
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import add\n\n\n" + tests)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return repo
