"""The reason written for the agent: what failed and how, what is not covered, what counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from completion_claim import parse_claim, verify
from completion_claim.gate.reason import MAX_LINE, agent_reason, node_id
from completion_claim.model import parse_policy
from tests.builders import at, claim_doc, evidence, mutation

PASSING = {"exit_code": 0, "passed": 2, "failed": 0, "errors": 0, "skipped": 0}
FAILING = {"exit_code": 1, "passed": 1, "failed": 1, "errors": 0, "skipped": 0}


def run_item(observed: dict[str, Any], **details: Any) -> dict[str, Any]:
    return evidence(
        check_type="test_run", target="python -m pytest -q", expected={"exit_code": 0},
        observed_value=observed, details={"test_config_changed": [], **details},
    )  # fmt: skip


def file_write(mid: str = "m1", target: str = "calc.py") -> dict[str, Any]:
    return mutation(mid, kind="file_write", target=target, digest="sha256:00")


def reason_for(document: dict[str, Any], root: Path) -> str:
    claim = parse_claim(document)
    return agent_reason(claim, verify(claim, at(20)), root)


def test_a_verified_claim_has_no_reason(tmp_path: Path) -> None:
    assert reason_for(claim_doc([file_write()], [run_item(PASSING)]), tmp_path) == ""


def test_a_failed_test_is_named_by_its_node_id_with_its_first_failure_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("")
    failures = [{"test": "tests.test_calc::test_add", "outcome": "failed",
                 "message": "assert -1 == 5"},
                {"test": "tests.test_calc::test_zero", "outcome": "error",
                 "message": "fixture 'db' not found"}]  # fmt: skip
    document = claim_doc([file_write()], [run_item(FAILING, failures=failures)])
    assert reason_for(document, tmp_path) == (
        "tests/test_calc.py::test_add failed: assert -1 == 5\n"
        "tests/test_calc.py::test_zero errored: fixture 'db' not found"
    )


def test_a_failed_run_without_a_report_says_how_it_differed(tmp_path: Path) -> None:
    item = run_item({"exit_code": 2}, output_tail=["ERROR: file or directory not found: x"])
    assert reason_for(claim_doc([file_write()], [item]), tmp_path) == (
        "calc.py (file_write) is covered by no passing test_run: the test run exited 2 and "
        "reported no tests (last output: ERROR: file or directory not found: x); what counts: "
        "a passing test_run of the configured tests after your last edit"
    )


def test_a_run_without_a_report_says_why_the_observer_counted_nothing(tmp_path: Path) -> None:
    """The observer's own word on the report (a Rust target without libtest's harness), before
    the output's last line."""
    why = "the test binary plain was built without the observer's canaries"
    item = run_item({"exit_code": 101}, output_tail=["error: 1 target failed"], no_counts=why)
    assert reason_for(claim_doc([file_write()], [item]), tmp_path) == (
        "calc.py (file_write) is covered by no passing test_run: the test run exited 101 and "
        f"reported no tests ({why}; last output: error: 1 target failed); what counts: "
        "a passing test_run of the configured tests after your last edit"
    )


def test_a_parametrized_case_gone_under_its_name_says_which_cases_ran_instead(
    tmp_path: Path,
) -> None:
    """pytest names a case from its values: data of the code that the change altered renames it
    (an honest fix is then blocked, and told why), and the names the function ran under are
    said."""
    seen = {"tests.test_calc::test_named[plus]": "failed", "tests.test_calc::test_add": "passed"}
    tests = {"tests.test_calc::test_named[sum]": "passed", "tests.test_calc::test_add": "passed"}
    counts = {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}
    item = run_item({"exit_code": 0, **counts, "tests": tests}, baseline_tests=seen)
    item["expected"] = {"exit_code": 0, "tests": dict.fromkeys(seen, "passed")}
    assert reason_for(claim_doc([file_write()], [item]), tmp_path).endswith(
        "tests.test_calc::test_named[plus] failed before you started and is now not run at all "
        "(test_named ran as [sum]: a case named from values the change altered is another test "
        "to the baseline): make it run and pass"
    )


def test_changed_tests_are_named_and_said_not_to_count(tmp_path: Path) -> None:
    item = run_item(PASSING, test_config_changed=["tests/test_calc.py"])
    reason = reason_for(claim_doc([file_write()], [item]), tmp_path)
    assert reason == (
        "calc.py (file_write) is covered by no passing test_run: you changed "
        "tests/test_calc.py; changes to tests do not count; what counts: a passing test_run "
        "of the configured tests after your last edit"
    )


def test_an_observer_failure_names_the_check_and_its_error(tmp_path: Path) -> None:
    failed = evidence(
        target="postgresql://reader@db/test table accounts where id=4471",
        details={"error": "cannot connect: connection refused"},
    )
    del failed["observed_value"]
    reason = reason_for(claim_doc([mutation()], [failed]), tmp_path)
    assert reason.splitlines()[0] == (
        "the readback of postgresql://reader@db/test table accounts where id=4471 could not "
        "run: cannot connect: connection refused"
    )


def test_a_value_that_held_before_the_change_is_explained(tmp_path: Path) -> None:
    item = evidence(details={"baseline": {"billing_zip": "94107"}})
    reason = reason_for(claim_doc([mutation()], [item]), tmp_path)
    assert reason.startswith(
        "accounts/4471 (state_write) is covered by no passing state_readback: accounts/4471 "
        "already had the expected value before you started"
    )


def test_a_readback_contradiction_says_where_it_differs(tmp_path: Path) -> None:
    item = evidence(observed_value={"billing_zip": "10001"})
    assert reason_for(claim_doc([mutation()], [item]), tmp_path) == (
        'the readback of accounts/4471 failed: billing_zip: expected "94107", observed "10001"'
    )


def test_a_change_no_check_observed_says_what_would_count(tmp_path: Path) -> None:
    document = claim_doc([file_write(), mutation("m2", t=1)], [evidence(t=10, covers=["m2"])])
    assert reason_for(document, tmp_path) == (
        "calc.py (file_write) is covered by no passing test_run: no check of that type observed "
        "it; what counts: a passing test_run of the configured tests after your last edit"
    )


def test_the_gates_rules_are_worded_from_the_verdicts_codes(tmp_path: Path) -> None:
    gate = parse_policy(
        {"id": "gate", "requires": [], "max_age_s": 300, "require_mutations": True,
         "protected_targets": ["claim.toml"]}
    )  # fmt: skip
    changed = parse_claim(claim_doc([file_write(target="claim.toml")], [run_item(PASSING)]))
    assert agent_reason(changed, verify(changed, at(20), gate), tmp_path) == (
        "you changed claim.toml, the gate's configuration: restore it; it is the operator's, "
        "not yours to change"
    )
    nothing = parse_claim(claim_doc([], [{**run_item(PASSING), "covers": []}]))
    assert agent_reason(nothing, verify(nothing, at(20), gate), tmp_path) == (
        "nothing changed in the work tree: make the change the task asks for, then stop"
    )
    unread = parse_claim(claim_doc([mutation(kind="uncaptured", target=".")], []))
    assert (
        agent_reason(
            unread, verify(unread, at(20), gate), tmp_path, "a link leaves the work tree: x"
        ).splitlines()[0]
        == "the gate could not read your change: a link leaves the work tree: x"
    )


def test_the_reason_is_bounded(tmp_path: Path) -> None:
    failures = [{"test": f"t::test_{n}", "outcome": "failed", "message": "x" * 1000}
                for n in range(50)]  # fmt: skip
    reason = reason_for(claim_doc([file_write()], [run_item(FAILING, failures=failures)]), tmp_path)
    lines = reason.splitlines()
    assert len(lines) == 13
    assert lines[-1] == "... and 38 more"
    assert all(len(line) <= MAX_LINE for line in lines)


def test_a_report_name_becomes_a_node_id_only_for_a_file_that_exists(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    assert node_id("tests.test_x.TestA::test_b[1]", tmp_path) == "tests/test_x.py::TestA::test_b[1]"
    assert node_id("tests.test_y::test_b", tmp_path) == "tests.test_y::test_b"


def test_a_test_to_run_twice_that_ran_once_says_so(tmp_path: Path) -> None:
    """A Node runner reported the start's failing test once (attack 176): not "skipped", which
    the agent would look for in the tests."""
    name = "test/calc.test.js::calc > adds"
    observed = PASSING | {"tests": {name: "skipped"}}
    item = run_item(observed, baseline_tests={name: "failed"}, ran_once=[name])
    item["expected"] = {"exit_code": 0, "tests": {name: "passed"}}

    assert reason_for(claim_doc([file_write()], [item]), tmp_path) == (
        f"{name} failed before you started and ran once where the observer runs it twice: "
        "make it run and pass both times"
    )
