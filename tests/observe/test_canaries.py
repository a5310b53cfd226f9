"""The observer's canaries: real pytest and unittest runs in the sandbox where the code under test
patches the runner or disarms the assertions (attack 133), and the same runs done honestly."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run
from completion_claim.observe.canaries import judged
from completion_claim.observe.runners.base import Canaries, Canary
from completion_claim.observe.runners.pytest import Pytest
from completion_claim.observe.runners.results import tally
from completion_claim.observe.runners.unittest import Unittest
from tests.fixtures.projects import CALC, CALC_BUGGY, TEST_CALC, head_commit, make_repo, write_files
from tests.observe.runners.observing import observed

PYTEST = (sys.executable, "-m", "pytest", "-q")
UNITTEST = (sys.executable, "-m", "unittest")
UNITTEST_CALC = """import unittest

from calc import add


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""
UNITTEST_TESTS = {"tests/__init__.py": "", "tests/test_calc.py": UNITTEST_CALC}
# Every test pytest runs "passes" without running, by an assignment to a class's attribute:
# no audit event, so the runtime monitor does not see it (finding 3's swap of a code object is
# the monitor's: test_python_monitor.py).
PATCHES_PYTEST = "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n"
# A disarmed assertion: assigning an attribute of an ordinary class raises no audit event.
DISARMS_UNITTEST = "import unittest\nunittest.TestCase.assertEqual = lambda self, *a, **k: None\n"
# The reporter's assertEqual swapped back for unittest's own (attack 170), and a result equal to
# anything, which the reporter's would have failed.
UNDOES_THE_GUARD = (
    "import unittest\n\n"
    "guard = unittest.TestCase.assertEqual\n"
    "unittest.TestCase.assertEqual = guard.__closure__[0].cell_contents\n\n\n"
    "class _Result(int):\n"
    "    def __eq__(self, other):\n"
    "        return True\n\n"
    "    __hash__ = int.__hash__\n\n\n"
)


def _verdict(claim: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    run(["verify", str(claim), "--json"])
    state: str = json.loads(capsys.readouterr().out)["state"]
    return state


def _judged(
    claim: Path, repo: Path, command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], str]:
    item = observed(claim, repo, "--trusted-ref", head_commit(repo), "--", *command)
    return item, _verdict(claim, capsys)


@pytest.mark.parametrize(
    ("tests", "command", "broken"),
    [
        ({"tests/test_calc.py": TEST_CALC}, PYTEST, PATCHES_PYTEST + CALC_BUGGY),
        (UNITTEST_TESTS, UNITTEST, DISARMS_UNITTEST + CALC_BUGGY),
        (
            UNITTEST_TESTS,
            UNITTEST,
            UNDOES_THE_GUARD + CALC_BUGGY.replace("return a - b", "return _Result(a - b)"),
        ),
    ],
    ids=["pytest-runner-patched", "unittest-assertion-disarmed", "unittest-equality-guard-undone"],
)
def test_attack_133_a_runner_the_code_made_pass_everything_is_caught_by_the_canaries(
    tmp_path: Path,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    tests: dict[str, str],
    command: tuple[str, ...],
    broken: str,
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, **tests})
    write_files(repo, {"calc.py": broken})

    item, state = _judged(claim, repo, command, capsys)

    # The project's tests "passed" (the broken add() was never checked) ...
    assert set(item["observed_value"]["tests"].values()) == {"passed"}
    # ... and the canary that must fail did not: the report is not an honest run's.
    assert item["observed_value"]["canaries"] == "forged"
    wrong = item["details"]["canaries"]["wrong"]
    assert {(w["planted"], w["reported"]) for w in wrong} == {("skipped", "failed")}
    assert state != "verified"


@pytest.mark.parametrize(
    ("tests", "command"),
    [
        ({"tests/test_calc.py": TEST_CALC}, PYTEST),
        (UNITTEST_TESTS, UNITTEST),
    ],
    ids=["pytest", "unittest"],
)
def test_attack_133_control_the_honest_fix_verifies_with_its_canaries_held(
    tmp_path: Path,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    tests: dict[str, str],
    command: tuple[str, ...],
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, **tests})
    write_files(repo, {"calc.py": CALC})

    item, state = _judged(claim, repo, command, capsys)

    assert item["observed_value"]["canaries"] == "held"
    assert item["expected"]["canaries"] == "held"
    assert item["observed_value"]["exit_code"] == 0
    # The counts are the project's own: no canary among them.
    assert not any("canary" in name for name in item["observed_value"]["tests"])
    assert item["observed_value"]["failed"] == 0
    assert state == "verified"


def test_canary_names_and_values_are_drawn_for_each_run() -> None:
    words = iter(f"{n:012x}" for n in range(100))
    first = Pytest().canaries(PYTEST, [], lambda: next(words))
    second = Pytest().canaries(PYTEST, [], lambda: next(words))

    assert {c.name for c in first.tests}.isdisjoint(c.name for c in second.tests)
    assert first.beside_plugin.keys().isdisjoint(second.beside_plugin)
    unittest = Unittest().canaries(UNITTEST, [], lambda: next(words))
    # unittest's second must-fail canary compares a value equal to anything (attack 170).
    for canaries, failing in ((first, 1), (unittest, 2)):
        assert [c.passes for c in canaries.tests].count(False) == failing
        assert [c.passes for c in canaries.tests].count(True) == 2


PLANTED = Canaries({}, (Canary("c::passes", True), Canary("c::fails", False)))
PASSES, FAILS = ("c::passes", "passed", ""), ("c::fails", "failed", "")


def test_a_report_with_every_canary_as_planted_holds_and_loses_them_from_its_counts() -> None:
    results = tally(
        [("t::a", "passed", ""), ("c::passes", "passed", ""), ("c::fails", "failed", "no")]
    )

    kept, details = judged(results, PLANTED)

    assert details == {"planted": 2, "state": "held"}
    assert kept.counts == {
        "passed": 1,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
        "tests": {"t::a": "passed"},
    }
    assert kept.failures == []


@pytest.mark.parametrize(
    ("reported", "wrong"),
    [
        (
            [("c::passes", "passed", ""), ("c::fails", "passed", "")],
            ("c::fails", "failed", "passed"),
        ),
        ([("c::fails", "failed", "")], ("c::passes", "passed", "missing")),
        (
            [("c::passes", "skipped", ""), ("c::fails", "failed", "")],
            ("c::passes", "passed", "skipped"),
        ),
    ],
    ids=["must-fail-passed", "must-pass-missing", "must-pass-skipped"],
)
def test_a_canary_missing_or_with_the_other_outcome_makes_the_report_forged(
    reported: list[tuple[str, str, str]], wrong: tuple[str, str, str]
) -> None:
    _, details = judged(tally([("t::a", "passed", ""), *reported]), PLANTED)

    assert details["state"] == "forged"
    assert [(w["test"], w["planted"], w["reported"]) for w in details["wrong"]] == [wrong]


def test_a_run_with_no_report_leaves_the_canaries_unreported() -> None:
    from completion_claim.observe.runners.results import no_counts

    assert judged(no_counts("killed"), PLANTED)[1]["state"] == "unreported"


# jest's and vitest's: added to each test file, named without it, the must-fail one reported
# passed (test.failing, test.fails).
IN_EACH_FILE = Canaries(
    {},
    (
        Canary("k > passes", True, in_each_file=True),
        Canary("k > fails", False, reported="passed", in_each_file=True),
    ),
)


def _in(file: str, fails: str = "passed") -> list[tuple[str, str, str]]:
    return [(f"{file}::k > passes", "passed", ""), (f"{file}::k > fails", fails, "")]


def test_canaries_in_each_file_hold_when_every_file_that_ran_a_test_reports_them() -> None:
    cases = [("a.test.js::adds", "passed", ""), *_in("a.test.js"),
             ("b.test.js::subtracts", "failed", "no"), *_in("b.test.js"),
             ("c.test.js::c.test.js", "error", "could not load")]  # fmt: skip

    kept, details = judged(tally(cases), IN_EACH_FILE)

    assert details == {"planted": 2, "state": "held"}
    assert kept.counts["tests"] == {"a.test.js::adds": "passed", "b.test.js::subtracts": "failed",
                                    "c.test.js::c.test.js": "error"}  # fmt: skip
    assert (kept.counts["passed"], kept.counts["failed"]) == (1, 1)
    assert [f["test"] for f in kept.failures] == ["b.test.js::subtracts", "c.test.js::c.test.js"]


@pytest.mark.parametrize(
    ("cases", "wrong"),
    [
        (
            [("a.test.js::adds", "passed", ""), *_in("a.test.js", fails="failed")],
            ("a.test.js::k > fails", "passed", "failed"),
        ),
        (
            [("a.test.js::adds", "passed", ""), *_in("a.test.js"), ("b.test.js::x", "passed", "")],
            ("b.test.js::k > fails", "passed", "missing"),
        ),
    ],
    ids=["must-fail-passed", "missing-from-one-file"],
)
def test_a_canary_of_each_file_wrong_or_missing_in_one_file_makes_the_report_forged(
    cases: list[tuple[str, str, str]], wrong: tuple[str, str, str]
) -> None:
    _, details = judged(tally(cases), IN_EACH_FILE)

    assert details["state"] == "forged"
    assert (wrong[0], wrong[1], wrong[2]) in [
        (w["test"], w["planted"], w["reported"]) for w in details["wrong"]
    ]
