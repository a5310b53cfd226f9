"""The readable report says why a mutation is not covered, in words."""

from __future__ import annotations

from completion_claim import verify
from completion_claim.report import render_report

from .builders import at, build, evidence, mutation


def test_report_explains_a_check_that_may_not_cover_a_mutations_kind() -> None:
    claim = build([mutation(kind="file_write", target="src/calc.py")], [evidence(id="e1")])
    report = render_report(claim, verify(claim, at(20)))
    assert "NOT COVERED" in report
    assert "e1: its check type may not cover mutation m1's kind (state_readback may not" in report


def test_report_describes_new_codes_in_words() -> None:
    item = evidence(
        id="e1",
        check_type="test_run",
        expected={"exit_code": 0},
        observed_value={"exit_code": 0, "passed": 1},
        details={"test_config_changed": ["conftest.py"]},
    )
    claim = build([mutation(kind="file-write", target="src/calc.py")], [item])
    report = render_report(claim, verify(claim, at(20)))
    assert "the observer saw the protected test files or test settings changed" in report
    assert "mutation m1 is of a kind no check type may cover" in report


def test_report_says_why_a_recorded_attempt_observed_nothing() -> None:
    """An observer run with --record-failure keeps its error in details.error; the report shows
    it beside the item, so "no observation" is never left unexplained."""
    failed = evidence(id="e1", details={"error": "connect to 127.0.0.1:5432:\n Connection refused"})
    del failed["observed_value"]
    claim = build([mutation()], [failed])
    report = render_report(claim, verify(claim, at(20)))
    assert "e1  state_readback by ci/1 (independent), no observation" in report
    assert "      could not observe: connect to 127.0.0.1:5432: Connection refused\n" in report
