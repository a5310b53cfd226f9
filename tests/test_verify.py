"""The verifier, rule by rule (DESIGN.md section 4). Each rule has its own named tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from completion_claim import Policy, verify
from completion_claim.model import BUILTIN_POLICY
from completion_claim.verify import Verdict

from .builders import at, build, evidence, mutation

DECIDE = at(20)


def codes(verdict: Verdict) -> list[str]:
    return [u.code for u in verdict.unmet]


def reasons(verdict: Verdict, ref: str = "evidence[0]") -> list[str]:
    result = next(r for r in verdict.evidence if r.evidence == ref)
    return [f.code for f in result.reasons]


def test_baseline_independent_timely_matching_readback_is_verified() -> None:
    verdict = verify(build(), DECIDE)
    assert verdict.state == "verified"
    assert verdict.unmet == ()
    assert verdict.coverage[0].covered_by == ("evidence[0]",)


# --- rule 1: self-attested evidence never satisfies ------------------------------------------


class TestRule1SelfAttested:
    def test_self_attested_support_does_not_verify(self) -> None:
        item = evidence(verifier={"id": "agent", "kind": "self_attested"})
        verdict = verify(build(evidence_items=[item]), DECIDE)
        assert verdict.state == "unverified"
        assert reasons(verdict) == ["self_attested"]

    def test_self_attested_contradiction_does_not_refute(self) -> None:
        item = evidence(
            verifier={"id": "agent", "kind": "self_attested"},
            observed_value={"billing_zip": "00000"},
        )
        verdict = verify(build(evidence_items=[item]), DECIDE)
        assert verdict.state == "unverified"
        assert verdict.evidence[0].observation == "differs"

    def test_self_attested_item_is_recorded_beside_independent_one(self) -> None:
        items = [
            evidence(id="e1"),
            evidence(id="e2", verifier={"id": "a", "kind": "self_attested"}),
        ]
        verdict = verify(build(evidence_items=items), DECIDE)
        assert verdict.state == "verified"
        assert verdict.coverage[0].covered_by == ("e1",)
        assert [r.evidence for r in verdict.coverage[0].not_counted] == ["e2"]


# --- rule 2: strictly after the last covered mutation -----------------------------------------


class TestRule2AfterMutation:
    def test_evidence_before_the_mutation_is_premature(self) -> None:
        verdict = verify(build([mutation(t=10)], [evidence(t=5)]), DECIDE)
        assert verdict.state == "unverified"
        assert reasons(verdict) == ["premature"]

    def test_evidence_at_the_same_instant_is_premature(self) -> None:
        verdict = verify(build([mutation(t=10)], [evidence(t=10)]), DECIDE)
        assert reasons(verdict) == ["premature"]

    def test_one_microsecond_after_counts(self) -> None:
        verdict = verify(build([mutation(t=10)], [evidence(t=10.000001)]), DECIDE)
        assert verdict.state == "verified"

    def test_latest_of_several_covered_mutations_decides(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 12, target="accounts/9")]
        verdict = verify(build(muts, [evidence(t=11, covers=["m1", "m2"])]), DECIDE)
        result = verdict.evidence[0]
        assert [(f.code, f.mutation) for f in result.reasons] == [("premature", "m2")]

    def test_offsets_are_compared_as_instants(self) -> None:
        # 20:00:05+02:00 is 18:00:05Z: before the mutation at 18:00:10Z.
        item = evidence(at="2026-08-27T20:00:05+02:00")
        verdict = verify(build([mutation(t=10)], [item]), DECIDE)
        assert reasons(verdict) == ["premature"]

    def test_premature_contradiction_does_not_refute(self) -> None:
        item = evidence(t=5, observed_value={"billing_zip": "1"})
        verdict = verify(build([mutation(t=10)], [item]), DECIDE)
        assert verdict.state == "unverified"


# --- supersession -----------------------------------------------------------------------------


class TestSupersession:
    def test_later_mutation_on_same_target_supersedes(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 15)]
        verdict = verify(build(muts, [evidence(t=10, covers=["m1"])]), DECIDE)
        assert [(f.code, f.mutation) for f in verdict.evidence[0].reasons] == [("superseded", "m2")]
        assert verdict.state == "unverified"

    def test_mutation_at_the_same_instant_supersedes(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 10)]
        verdict = verify(build(muts, [evidence(t=10, covers=["m1"])]), DECIDE)
        assert "superseded" in reasons(verdict)

    def test_later_mutation_on_other_target_does_not_supersede_readback(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 15, target="accounts/9")]
        items = [evidence(t=10, covers=["m1"], id="e1"), evidence(t=16, covers=["m2"], id="e2")]
        verdict = verify(build(muts, items), DECIDE)
        assert verdict.state == "verified"

    def test_test_run_is_superseded_by_any_later_file_write(self) -> None:
        muts = [
            mutation("m1", 0, kind="file_write", target="src/a.py"),
            mutation("m2", 15, kind="file_write", target="docs/readme.md"),
        ]
        run = evidence(
            t=10,
            covers=["m1"],
            check_type="test_run",
            target="pytest",
            expected={"exit_code": 0},
            observed_value={"exit_code": 0, "passed": 3, "failed": 0, "errors": 0},
        )
        verdict = verify(build(muts, [run]), DECIDE)
        assert [(f.code, f.mutation) for f in verdict.evidence[0].reasons] == [("superseded", "m2")]

    def test_later_state_write_does_not_supersede_test_run(self) -> None:
        muts = [
            mutation("m1", 0, kind="file_write", target="src/a.py"),
            mutation("m2", 15, kind="state_write", target="accounts/1"),
        ]
        run = evidence(
            t=10,
            covers=["m1"],
            check_type="test_run",
            target="pytest",
            expected={"exit_code": 0},
            observed_value={"exit_code": 0, "passed": 3},
        )
        verdict = verify(build(muts, [run]), DECIDE)
        assert reasons(verdict) == []


# --- rule 3: every mutation covered -----------------------------------------------------------


class TestRule3Coverage:
    def test_uncovered_mutation_leaves_claim_unverified(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 1, target="accounts/9")]
        verdict = verify(build(muts, [evidence(t=10, covers=["m1"])]), DECIDE)
        assert verdict.state == "unverified"
        assert codes(verdict) == ["mutation_uncovered"]
        assert verdict.unmet[0].mutation == "m2"

    def test_partial_coverage_is_shown_per_mutation(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 1, target="accounts/9")]
        verdict = verify(build(muts, [evidence(t=10, covers=["m1"])]), DECIDE)
        by_mutation = {c.mutation: c.covered_by for c in verdict.coverage}
        assert by_mutation == {"m1": ("evidence[0]",), "m2": ()}

    def test_task_level_evidence_covers_no_mutation(self) -> None:
        verdict = verify(build([mutation(t=0)], [evidence(t=10, covers=[])]), DECIDE)
        assert verdict.state == "unverified"
        assert codes(verdict) == ["mutation_uncovered"]

    def test_task_level_evidence_satisfies_claim_without_mutations(self) -> None:
        verdict = verify(build([], [evidence(t=10, covers=[])]), DECIDE)
        assert verdict.state == "verified"

    def test_task_level_evidence_must_postdate_every_mutation(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 12, target="x")]
        items = [
            evidence(t=13, covers=["m1"], id="e1"),
            evidence(t=13, covers=["m2"], id="e2"),
            evidence(t=11, covers=[], id="e3"),
        ]
        verdict = verify(build(muts, items), DECIDE)
        assert reasons(verdict, "e3") == ["premature"]


# --- rule 4: absence is unverified ------------------------------------------------------------


class TestRule4Absence:
    def test_claim_without_evidence_is_unverified(self) -> None:
        verdict = verify(build(evidence_items=[]), DECIDE)
        assert verdict.state == "unverified"
        assert codes(verdict) == ["no_evidence", "mutation_uncovered"]

    def test_claim_without_evidence_or_mutations_is_unverified(self) -> None:
        verdict = verify(build([], []), DECIDE)
        assert verdict.state == "unverified"
        assert codes(verdict) == ["no_evidence"]

    def test_failed_observation_is_not_evidence(self) -> None:
        item = evidence()
        del item["observed_value"]
        verdict = verify(build(evidence_items=[item]), DECIDE)
        assert verdict.state == "unverified"
        assert reasons(verdict) == ["no_observation"]
        assert verdict.evidence[0].observation == "absent"

    def test_only_non_qualifying_evidence_is_unverified(self) -> None:
        verdict = verify(build(evidence_items=[evidence(t=-5)]), DECIDE)
        assert codes(verdict) == ["no_supporting_evidence", "mutation_uncovered"]


# --- rule 5: stale evidence is absent ---------------------------------------------------------


class TestRule5Freshness:
    def test_older_than_max_age_is_stale(self) -> None:
        verdict = verify(build(), at(10 + 300.5))
        assert verdict.state == "unverified"
        assert reasons(verdict) == ["stale"]

    def test_exactly_max_age_counts(self) -> None:
        assert verify(build(), at(10 + 300)).state == "verified"

    def test_one_microsecond_over_max_age_is_stale(self) -> None:
        assert verify(build(), at(10 + 300.000001)).state == "unverified"

    def test_fractional_max_age_is_exact(self) -> None:
        policy = Policy("p", (), 0.5)
        assert verify(build(), at(10.5), policy).state == "verified"
        assert verify(build(), at(10.500001), policy).state == "unverified"

    def test_stale_contradiction_does_not_refute(self) -> None:
        item = evidence(observed_value={"billing_zip": "0"})
        assert verify(build(evidence_items=[item]), at(1000)).state == "unverified"

    def test_evidence_dated_after_the_decision_is_not_counted(self) -> None:
        verdict = verify(build(), at(5))
        assert reasons(verdict) == ["from_future"]

    def test_evidence_dated_exactly_at_the_decision_counts(self) -> None:
        assert verify(build(), at(10)).state == "verified"


# --- rule 6: refuted needs a qualifying contradiction -----------------------------------------


class TestRule6Refuted:
    def test_independent_timely_contradiction_refutes(self) -> None:
        item = evidence(observed_value={"billing_zip": "10001"})
        verdict = verify(build(evidence_items=[item]), DECIDE)
        assert verdict.state == "refuted"
        assert codes(verdict)[0] == "contradicted"
        assert verdict.coverage[0].contradicted_by == ("evidence[0]",)

    def test_contradiction_wins_over_support(self) -> None:
        items = [evidence(id="ok"), evidence(id="bad", observed_value={"billing_zip": "1"})]
        verdict = verify(build(evidence_items=items), DECIDE)
        assert verdict.state == "refuted"
        assert verdict.unmet[0].evidence == "bad"

    def test_missing_record_observed_as_null_refutes(self) -> None:
        item = evidence(observed_value=None)
        assert verify(build(evidence_items=[item]), DECIDE).state == "refuted"

    def test_missing_evidence_is_unverified_not_refuted(self) -> None:
        assert verify(build(evidence_items=[]), DECIDE).state == "unverified"

    def test_non_discriminating_contradiction_does_not_refute(self) -> None:
        item = evidence(expected={}, observed_value={"billing_zip": "1"})
        assert verify(build(evidence_items=[item]), DECIDE).state == "unverified"


# --- qualification 6 and 7: observation, check type, discriminating -------------------------


class TestDiscriminating:
    @pytest.mark.parametrize("expected", [{}, [], ""])
    def test_empty_expectation_asserts_nothing(self, expected: object) -> None:
        verdict = verify(build(evidence_items=[evidence(expected=expected)]), DECIDE)
        assert reasons(verdict) == ["not_discriminating"]

    def test_null_expectation_asserts_absence_after_a_deletion(self) -> None:
        item = evidence(expected=None, observed_value=None)
        assert verify(build(evidence_items=[item]), DECIDE).state == "verified"
        item = evidence(expected=None, observed_value={"billing_zip": "94107"})
        assert verify(build(evidence_items=[item]), DECIDE).state == "refuted"

    def test_endpoint_padding_status_with_empty_members_is_not_discriminating(self) -> None:
        item = evidence(
            check_type="endpoint_health",
            expected={"status": 200, "json": {}, "headers": {}},
            observed_value={"status": 200, "json": {}, "headers": {}},
        )
        assert reasons(verify(build(evidence_items=[item]), DECIDE)) == ["not_discriminating"]

    def test_absent_expectation_asserts_nothing(self) -> None:
        item = evidence()
        del item["expected"]
        assert reasons(verify(build(evidence_items=[item]), DECIDE)) == ["not_discriminating"]

    def test_endpoint_asserting_only_status_is_not_discriminating(self) -> None:
        item = evidence(
            check_type="endpoint_health",
            expected={"status": 200},
            observed_value={"status": 200},
        )
        verdict = verify(build(evidence_items=[item]), DECIDE)
        assert reasons(verdict) == ["not_discriminating"]

    def test_endpoint_asserting_build_id_is_discriminating(self) -> None:
        item = evidence(
            check_type="endpoint_health",
            expected={"status": 200, "json": {"/build": "b2"}},
            observed_value={"status": 200, "json": {"/build": "b2"}},
        )
        deploy = mutation(kind="deploy", target="svc/billing")
        assert verify(build([deploy], [item]), DECIDE).state == "verified"

    def test_test_run_with_zero_tests_is_not_discriminating(self) -> None:
        item = evidence(
            check_type="test_run",
            expected={"exit_code": 0},
            observed_value={"exit_code": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 2},
        )
        assert reasons(verify(build(evidence_items=[item]), DECIDE)) == ["not_discriminating"]

    def test_baseline_that_already_met_expectation_is_not_discriminating(self) -> None:
        item = evidence(details={"baseline": {"billing_zip": "94107"}})
        assert reasons(verify(build(evidence_items=[item]), DECIDE)) == ["not_discriminating"]

    def test_baseline_that_differed_keeps_the_check_discriminating(self) -> None:
        item = evidence(details={"baseline": {"billing_zip": "10001"}})
        assert verify(build(evidence_items=[item]), DECIDE).state == "verified"

    def test_unknown_check_type_does_not_qualify(self) -> None:
        item = evidence(check_type="dom_assertion")
        verdict = verify(build(evidence_items=[item]), DECIDE)
        assert verdict.state == "unverified"
        assert reasons(verdict) == ["unknown_check_type"]


# --- policy -----------------------------------------------------------------------------------


class TestPolicy:
    def test_requirement_without_supporting_item_is_unmet(self) -> None:
        policy = Policy("strict", ("test_run", "state_readback"), 300)
        verdict = verify(build(), DECIDE, policy)
        assert verdict.state == "unverified"
        assert [(u.code, u.check_type) for u in verdict.unmet] == [
            ("requirement_unmet", "test_run")
        ]

    def test_operator_policy_replaces_embedded_one(self) -> None:
        embedded = {"id": "lenient", "requires": [], "max_age_s": 100000}
        claim = build(policy=embedded)
        assert verify(claim, at(5000)).state == "verified"
        operator = Policy("operator", (), 300)
        verdict = verify(claim, at(5000), operator)
        assert verdict.state == "unverified"
        assert verdict.policy_id == "operator"

    def test_builtin_policy_applies_when_none_is_given(self) -> None:
        verdict = verify(build(), DECIDE)
        assert verdict.policy_id == BUILTIN_POLICY.id
        assert verify(build(), at(10 + 301)).state == "unverified"

    def test_requirement_met_by_task_level_item(self) -> None:
        items = [
            evidence(id="e1"),
            evidence(
                id="e2",
                covers=[],
                check_type="endpoint_health",
                expected={"json": {"/v": 2}},
                observed_value={"json": {"/v": 2}},
            ),
        ]
        policy = Policy("p", ("endpoint_health",), 300)
        assert verify(build(evidence_items=items), DECIDE, policy).state == "verified"


# --- determinism ------------------------------------------------------------------------------


def test_same_inputs_same_verdict_in_any_list_order() -> None:
    muts = [mutation("m1", 0), mutation("m2", 1, target="x"), mutation("m3", 2, target="y")]
    items = [
        evidence(t=10, covers=["m1"], id="a"),
        evidence(t=10, covers=["m3", "m2"], id="b", target="x"),
        evidence(t=3, covers=["m2"], id="c", verifier={"id": "x", "kind": "self_attested"}),
    ]
    forward = verify(build(muts, items), DECIDE).to_json()
    items[1]["covers"].reverse()
    backward = verify(build(muts[::-1], items[::-1]), DECIDE).to_json()
    assert forward == backward


def test_decision_time_in_another_offset_is_the_same_instant() -> None:
    local = DECIDE.astimezone(timezone(timedelta(hours=-7)))
    assert verify(build(), local).to_json() == verify(build(), DECIDE).to_json()


def test_naive_decision_time_is_rejected() -> None:
    with pytest.raises(ValueError, match="UTC offset"):
        verify(build(), datetime(2026, 8, 27, 18, 0, 20))


def test_verdict_never_reads_the_documents_own_verdict() -> None:
    claim = build(evidence_items=[], verdict={"state": "verified", "unmet": []})
    assert verify(claim, DECIDE).state == "unverified"


def test_verdict_reason_is_one_sentence() -> None:
    for claim in (build(), build(evidence_items=[]), build(evidence_items=[evidence(t=-1)])):
        reason = verify(claim, DECIDE).reason
        assert reason.endswith(".")
        assert "\n" not in reason


def test_verdict_json_shape() -> None:
    data = verify(build(), datetime(2026, 8, 27, 18, 0, 20, tzinfo=UTC)).to_json()
    assert data["decided_at"] == "2026-08-27T18:00:20Z"
    assert data["independence"] == "declared"
    assert set(data) == {
        "state",
        "unmet",
        "reason",
        "decided_at",
        "policy_id",
        "independence",
        "coverage",
        "evidence",
    }


# --- "passes when nothing was checked": the failures witness fixed in 2026 ------------------


class TestNothingCheckedNeverPasses:
    def test_empty_policy_and_empty_claim_is_unverified(self) -> None:
        verdict = verify(build([], []), DECIDE, Policy("empty", (), 300))
        assert verdict.state == "unverified"

    def test_empty_step_evidence_that_asserts_nothing_is_unverified(self) -> None:
        item = evidence(expected={}, observed_value={})
        assert verify(build(evidence_items=[item]), DECIDE).state == "unverified"

    @pytest.mark.parametrize("contradiction_first", [True, False])
    def test_every_item_is_evaluated_not_only_the_last(self, contradiction_first: bool) -> None:
        items = [evidence(id="ok"), evidence(id="bad", observed_value={"billing_zip": "1"})]
        if contradiction_first:
            items.reverse()
        assert verify(build(evidence_items=items), DECIDE).state == "refuted"

    def test_supporting_item_for_one_mutation_does_not_verify_the_others(self) -> None:
        muts = [mutation("m1", 0), mutation("m2", 1, target="b"), mutation("m3", 2, target="c")]
        verdict = verify(build(muts, [evidence(t=10, covers=["m1"])]), DECIDE)
        assert verdict.state == "unverified"
        assert [u.mutation for u in verdict.unmet] == ["m2", "m3"]
