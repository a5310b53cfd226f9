"""The whole loop through the installed ``claim`` command: an agent fixes a bug in a git project,
its changes are captured, the tests are observed, and the claim is verified, superseded and
refuted as the work moves on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fixtures.projects import CALC, CALC_BUGGY, TEST_CALC, head_commit, make_repo, write_files

CLAIM = Path(sys.executable).with_name("claim")  # the console script this environment installed
# Bytecode is written as on a developer's machine, so the observer must tell it from edits.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
PYTEST = (sys.executable, "-m", "pytest", "-q")
# The tests that judge the change are the ones on main before it: the agent's own new test
# file is not run (and, without a trusted ref, would make the run not count).
OBSERVE = ("observe", "test-run", "claim.json", "--trusted-ref")
NEGATIVE_TEST = "from calc import add\n\n\ndef test_negative():\n    assert add(-1, -2) == -3\n"


def claim(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIM), *args], cwd=repo, env=ENV, capture_output=True, text=True, check=False
    )


def verify(repo: Path) -> tuple[int, dict[str, Any]]:
    done = claim(repo, "verify", "claim.json", "--json")
    result: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, result


def test_a_claim_is_verified_then_superseded_then_refuted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    main = head_commit(repo)  # resolved before the agent works: a name is the agent's to move
    started = claim(repo, "new", "claim.json", "--task-id", "fix-add", "--outcome", "Fixed add()")
    assert started.returncode == 0, started.stderr

    # the agent fixes the bug and adds a test
    write_files(repo, {"calc.py": CALC, "tests/test_negative.py": NEGATIVE_TEST})
    captured = claim(repo, "capture-git", "claim.json")
    assert captured.returncode == 0, captured.stderr
    assert "recorded m1: file_write calc.py" in captured.stdout
    assert "recorded m2: file_write tests/test_negative.py" in captured.stdout

    observed = claim(repo, *OBSERVE, main, "--", *PYTEST)
    assert observed.returncode == 0, observed.stderr
    assert "recorded e1: test_run exit code 0, 2 passed" in observed.stdout

    # what the run wrote (bytecode, pytest's cache) is not an edit after it
    again = claim(repo, "capture-git", "claim.json")
    assert "nothing to record" in again.stdout, again.stdout

    shown = claim(repo, "verify", "claim.json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert shown.stdout.startswith("VERIFIED")

    # an edit after the test run: the run no longer speaks for the code
    write_files(repo, {"calc.py": CALC + "# tidied up\n"})
    assert claim(repo, "capture-git", "claim.json").returncode == 0
    code, result = verify(repo)
    assert (code, result["state"]) == (1, "unverified")
    (e1,) = result["evidence"]
    assert [reason["code"] for reason in e1["reasons"]] == ["superseded"]

    # the agent breaks the code; the next observed run contradicts the claim
    write_files(repo, {"calc.py": CALC_BUGGY})
    assert claim(repo, "capture-git", "claim.json").returncode == 0
    observed = claim(repo, *OBSERVE, main, "--", *PYTEST)
    assert observed.returncode == 0, observed.stderr
    assert "exit code 1" in observed.stdout
    code, result = verify(repo)
    assert (code, result["state"]) == (2, "refuted")
    assert {"code": "contradicted", "evidence": "e2"} in result["unmet"]
