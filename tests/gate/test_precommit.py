"""The pre-commit hook (.pre-commit-hooks.yaml), run by the real pre-commit on a scratch
repository: a push of a broken change is refused, a push of a fixed one goes through, and the
hook leaves the work tree as it found it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.fixtures.projects import (
    CALC,
    CALC_BUGGY,
    GIT_ENV,
    TEST_CALC,
    git,
    make_repo,
    write_files,
)

ROOT = Path(__file__).resolve().parents[2]
CALC_FIXED = "def add(a, b):\n    return sum((a, b))\n"


def try_hook(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo`` with this repository's hook, as a push runs it."""
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "claim-gate",
               "--hook-stage", "pre-push", "--verbose"]  # fmt: skip
    env = {**GIT_ENV, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run(
        command, cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_the_hook_is_a_pre_push_gate_that_changes_no_file() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "claim-gate"
    assert hook["entry"].startswith("claim gate")
    assert hook["stages"] == ["pre-push"]
    assert hook["pass_filenames"] is False
    assert hook["always_run"] is True


def test_pre_commit_refuses_a_broken_push_and_lets_the_fix_through(tmp_path: Path) -> None:
    config = (
        f'[gate]\nruns_dir = "{tmp_path / "runs"}"\n\n'
        '[policy]\nid = "ops/push"\nrequires = ["test_run"]\nmax_age_s = 600\n\n'
        '[[check]]\ntype = "test_run"\ncommand = ["python", "-m", "pytest", "-q"]\n'
        # pre-commit's own environment has no pytest: the tests run in the project's.
        f'python = "{sys.executable}"\n'
    )
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "claim.toml": config},
    )
    git(repo, "checkout", "-q", "-b", "feature")
    started = subprocess.run(
        [sys.executable, "-m", "completion_claim", "gate", "--start"],
        cwd=repo, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    write_files(repo, {"calc.py": CALC_BUGGY})
    git(repo, "commit", "-q", "-am", "add, rewritten")

    broken = try_hook(repo, tmp_path / "pre-commit")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "REFUTED" in broken.stdout
    assert "tests/test_calc.py::test_add failed: assert -1 == 5" in broken.stdout
    assert git(repo, "status", "--porcelain") == ""

    write_files(repo, {"calc.py": CALC_FIXED})
    git(repo, "commit", "-q", "-am", "add, fixed")
    fixed = try_hook(repo, tmp_path / "pre-commit")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "VERIFIED" in fixed.stdout
    assert git(repo, "status", "--porcelain") == ""
