"""``python -m unittest``, run by the observer's own unittest command line: each test's outcome
through the observer's channel, real runs in the sandbox."""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from completion_claim.observe.runners import runner_for
from completion_claim.observe.runners.unittest import Unittest
from tests.fixtures.projects import head_commit, make_repo, write_files
from tests.observe.runners.observing import observed

CALC_BUGGY = "def add(a, b):\n    return a - b\n"
CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = """import unittest

from calc import add


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_add_zero(self):
        self.assertEqual(add(2, 0), 2)
"""
# Every outcome unittest has, once each.
TEST_SHAPES = """import unittest

from calc import add


class TestShapes(unittest.TestCase):
    def test_passes(self):
        self.assertEqual(add(2, 0), 2)

    def test_fails(self):
        self.assertEqual(add(2, 3), 5, "2 + 3")

    def test_errors(self):
        raise RuntimeError("no calculator today")

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(add(1, 1), 2)

    @unittest.expectedFailure
    def test_unexpected_success(self):
        self.assertEqual(add(1, 0), 1)

    def test_subtests(self):
        for value in (0, 1):
            with self.subTest(value=value):
                self.assertEqual(add(value, value), 2 * value)


class TestBrokenSetUp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no database")

    def test_never_runs(self):
        pass
"""
UNITTEST = (sys.executable, "-m", "unittest")
UNITTEST_RUNNER = Unittest()


def test_python_dash_m_unittest_is_unittests() -> None:
    assert runner_for(["python3", "-m", "unittest", "discover", "-s", "tests"]).name == "unittest"
    assert runner_for([sys.executable, "-m", "unittest"]).name == "unittest"
    assert runner_for(["python", "-m", "pytest"]).name == "pytest"
    assert runner_for(["python", "unittest"]).name == "pytest"  # a script: the fallback


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("tests/test_calc.py", True),
        ("pkg/tests.py", True),
        ("test.py", True),
        ("pkg/testing.py", False),  # loaded by test*.py, yet a name code has: a protect glob
        ("unittest.py", True),
        ("lib/unittest/__init__.py", True),
        ("sitecustomize.py", True),
        ("calc.py", False),
        ("pkg/contest.py", False),
    ],
)
def test_what_unittest_discovers_and_what_would_replace_it_is_protected(
    path: str, protected: bool
) -> None:
    assert UNITTEST_RUNNER.protected(path.encode()) is protected


KEY = b"k" * 64


def record(seq: int, **fields: Any) -> bytes:
    body = json.dumps({"seq": seq, **fields}, separators=(",", ":")).encode()
    return hmac.new(KEY, body, hashlib.sha256).hexdigest().encode() + b" " + body + b"\n"


PASSED = {"test": "t.T::a", "outcome": "passed", "message": ""}
FAILED = {"test": "t.T::b", "outcome": "failed", "message": "boom\nmore"}
END = {"end": True}


def test_records_bound_in_order_and_ended_count() -> None:
    stream = record(0, **PASSED) + record(1, **FAILED) + record(2, **FAILED) + record(3, **END)
    results = UNITTEST_RUNNER.channel_results(stream, KEY)
    assert results.counts == {
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
        "tests": {"t.T::a": "passed", "t.T::b": "failed"},
    }
    assert results.failures == [{"test": "t.T::b", "outcome": "failed", "message": "boom"}]


@pytest.mark.parametrize(
    ("stream", "why"),
    [
        (b"", "unittest reported nothing"),
        (record(0, **PASSED), "unittest did not reach its run's end"),
        (record(0, **END) + record(1, **FAILED), "record 2 follows the run's end"),
        (b"0" * 64 + b' {"seq":0,"end":true}\n', "record 1 is not bound to this run"),
        (record(0, **{**PASSED, "outcome": "won"}) + record(1, **END), "unknown outcome 'won'"),
        (record(0, **{**PASSED, "node": "x"}) + record(1, **END), "is not a test's outcome"),
    ],
    ids=["empty", "no-end", "after-end", "unbound", "unknown-outcome", "extra-field"],
)
def test_records_that_cannot_be_counted_are_no_counts(stream: bytes, why: str) -> None:
    results = UNITTEST_RUNNER.channel_results(stream, KEY)
    assert (results.counts, results.failures) == ({}, [])
    assert why in results.none_because


def test_each_outcome_is_reported_under_its_junit_name(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/__init__.py": "",
                                         "tests/test_shapes.py": TEST_SHAPES})  # fmt: skip

    item = observed(claim, repo, "--", *UNITTEST, "-v")

    observed_value = item["observed_value"]
    assert observed_value["exit_code"] == 1
    assert observed_value["tests"] == {
        "tests.test_shapes.TestShapes::test_passes": "passed",
        "tests.test_shapes.TestShapes::test_fails": "failed",
        "tests.test_shapes.TestShapes::test_errors": "error",
        "tests.test_shapes.TestShapes::test_skipped": "skipped",
        "tests.test_shapes.TestShapes::test_expected_failure": "skipped",
        "tests.test_shapes.TestShapes::test_unexpected_success": "failed",
        "tests.test_shapes.TestShapes::test_subtests": "failed",
        "setUpClass (tests.test_shapes.TestBrokenSetUp)::": "error",
    }
    failures = {failure["test"]: failure["message"] for failure in item["details"]["failures"]}
    assert failures["tests.test_shapes.TestShapes::test_fails"] == (
        "AssertionError: -1 != 5 : 2 + 3"
    )
    assert failures["tests.test_shapes.TestShapes::test_errors"] == (
        "RuntimeError: no calculator today"
    )
    assert failures["setUpClass (tests.test_shapes.TestBrokenSetUp)::"] == (
        "RuntimeError: no database"
    )
    assert item["details"]["runner"] == "unittest"
    assert item["details"]["argv"][0] == sys.executable
    assert item["details"]["argv"][1].startswith("/run/claim/plugin/claim_report_")
    assert item["details"]["argv"][2:] == ["-v"]
    assert item["expected"] == {"exit_code": 0, "failed": 0, "errors": 0, "canaries": "held"}


def test_named_modules_and_a_module_that_fails_to_import(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC,
                                         "test_broken.py": "import missing_module\n"})  # fmt: skip

    item = observed(claim, repo, "--", *UNITTEST, "test_calc", "test_broken")

    assert item["observed_value"]["exit_code"] == 1
    assert item["observed_value"]["tests"] == {
        "test_calc.TestCalc::test_add": "passed",
        "test_calc.TestCalc::test_add_zero": "passed",
        "unittest.loader._FailedTest::test_broken": "error",
    }


def test_an_honest_run_with_no_tests_is_not_a_passing_run(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})

    item = observed(claim, repo, "--", *UNITTEST)

    assert item["observed_value"]["passed"] == 0
    assert item["observed_value"]["exit_code"] == 5  # unittest's "no tests ran"


EXITS_EARLY = CALC + "import os\nos._exit(0)\n"
FORGES = (
    CALC_BUGGY
    + """import os
for fd in range(3, 64):
    try:
        os.write(fd, b'0' * 64 + b' {"seq":0,"test":"t.T::a","outcome":"passed","message":""}\\n')
        os.write(fd, b'0' * 64 + b' {"seq":1,"end":true}\\n')
    except OSError:
        pass
os._exit(0)
"""
)


@pytest.mark.parametrize(
    ("code", "why"),
    [(EXITS_EARLY, "did not reach its run's end"), (FORGES, "not bound to this run")],
    ids=["os-exit", "forged-records"],
)
def test_attack_47_the_code_under_test_cannot_forge_unittests_report(
    tmp_path: Path, claim: Path, code: str, why: str
) -> None:
    """The defences of attack 47, for unittest: the code under test, imported by the trusted
    test, ends the run with exit code 0 before unittest's run returns, or writes records to
    every descriptor first."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "test_calc.py": TEST_CALC})
    write_files(repo, {"calc.py": code})

    item = observed(claim, repo, "--", *UNITTEST)

    assert item["observed_value"] == {"exit_code": 0, "canaries": "unreported"}
    assert why in item["details"]["no_counts"]


def test_a_unittest_module_in_the_work_tree_does_not_replace_unittest(
    tmp_path: Path, claim: Path
) -> None:
    """The reporter imports the standard library's unittest before the run's folder is on the
    path; and the shadow is a protected path (restored, or a change that does not count)."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "test_calc.py": TEST_CALC})
    base = head_commit(repo)
    write_files(repo, {"unittest.py": "import sys\nprint('all green')\nsys.exit(0)\n"})

    item = observed(claim, repo, "--", *UNITTEST)
    assert item["observed_value"]["tests"]["test_calc.TestCalc::test_add"] == "failed"
    assert item["details"]["test_config_changed"] == ["unittest.py"]

    item = observed(claim, repo, "--trusted-ref", base, "--", *UNITTEST)
    assert item["details"]["protected_restored"]["removed"] == ["unittest.py"]
