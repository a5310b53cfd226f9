"""The runners' shared results: a test the runner was to run twice and reported once."""

from __future__ import annotations

from completion_claim.observe.runners.results import ran_twice, tally


def test_a_repeated_test_reported_once_is_not_taken_as_passed() -> None:
    """The runner adds the second run itself (the code under test shares its process): a
    report naming the test once is no proof the second run happened (attack 176)."""
    results = tally([("f::a", "passed", ""), ("f::b", "passed", ""), ("f::b", "passed", "")])

    kept, once = ran_twice(results, ["f::a", "f::b"])

    assert once == ["f::a"]
    assert kept.counts["tests"] == {"f::a": "skipped", "f::b": "passed"}
    assert (kept.counts["passed"], kept.counts["skipped"]) == (1, 1)  # each test once


def test_a_repeated_test_that_failed_either_run_stays_failed() -> None:
    results = tally([("f::a", "passed", ""), ("f::a", "failed", "again")])

    kept, once = ran_twice(results, ["f::a"])

    assert (once, kept.counts["tests"]) == ([], {"f::a": "failed"})
    assert (kept.counts["passed"], kept.counts["failed"]) == (0, 1)
