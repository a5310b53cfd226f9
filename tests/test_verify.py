"""The verifier, rule by rule (docs/spec.md section 4). Each rule has its own named tests."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import completion_claim
from completion_claim import InvalidDocument, Policy, parse_policy, verify
from completion_claim.checks import CHECK_TYPES
from completion_claim.model import BUILTIN_COVERED_BY, BUILTIN_POLICY, KNOWN_CHECK_TYPES
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
        item = evidence(check_type="visual_diff")
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


# --- coverage by kind: a check speaks only for the changes it can observe ---------------------

CODE_EDIT: dict[str, Any] = {"kind": "file_write", "target": "src/calc.py"}


def run_item(t: float = 10, covers: list[str] | None = None, **over: Any) -> dict[str, Any]:
    doc = evidence(
        t=t,
        covers=covers,
        check_type="test_run",
        target="pytest -q",
        expected={"exit_code": 0},
        observed_value={"exit_code": 0, "passed": 3, "failed": 0, "errors": 0},
    )
    doc.update(over)
    return doc


def not_counted_for(verdict: Verdict, mutation_id: str) -> dict[str, list[str]]:
    cover = next(c for c in verdict.coverage if c.mutation == mutation_id)
    return {r.evidence: [f.code for f in r.reasons] for r in cover.not_counted}


def with_knobs(**members: Any) -> Policy:
    return parse_policy({"id": "ops", "requires": [], "max_age_s": 300, **members})


def test_attack_07_one_readback_does_not_cover_code_edits() -> None:
    muts = [mutation("m1", 0, **CODE_EDIT), mutation("m2", 1)]
    verdict = verify(build(muts, [evidence(t=10, covers=["m1", "m2"], id="e1")]), DECIDE)
    assert verdict.state == "unverified"
    assert [(u.code, u.mutation) for u in verdict.unmet] == [("mutation_uncovered", "m1")]
    assert not_counted_for(verdict, "m1") == {"e1": ["kind_not_covered"]}
    assert "state_readback may not cover a file_write" in verdict.reason


def test_attack_07_control_each_check_covers_its_own_kind() -> None:
    muts = [mutation("m1", 0, **CODE_EDIT), mutation("m2", 1)]
    items = [run_item(covers=["m1"], id="e1"), evidence(t=10, covers=["m2"], id="e2")]
    verdict = verify(build(muts, items), DECIDE)
    assert verdict.state == "verified"
    assert {c.mutation: c.covered_by for c in verdict.coverage} == {"m1": ("e1",), "m2": ("e2",)}


class TestRuleCoverageByKind:
    def test_rule_coverage_by_kind_builtin_map(self) -> None:
        assert dict(BUILTIN_COVERED_BY) == {
            "file_write": ("test_run",),
            "deploy": ("endpoint_health",),
            "state_write": ("state_readback",),
            "ui_action": ("dom_assertion", "state_readback"),
        }

    def test_rule_coverage_by_kind_test_run_does_not_cover_a_record_write(self) -> None:
        verdict = verify(build([mutation()], [run_item(id="e1")]), DECIDE)
        assert codes(verdict) == ["mutation_uncovered"]
        (finding,) = next(r for r in verdict.coverage[0].not_counted).reasons
        assert finding.mutation == "m1"
        assert (
            finding.detail == "test_run may not cover a 'state_write' mutation, only state_readback"
        )

    def test_rule_coverage_by_kind_item_still_counts_for_its_own_kind(self) -> None:
        muts = [mutation("m1", 0, **CODE_EDIT), mutation("m2", 1)]
        verdict = verify(build(muts, [evidence(covers=["m1", "m2"], id="e1")]), DECIDE)
        assert verdict.evidence[0].counts
        assert {c.mutation: c.covered_by for c in verdict.coverage} == {"m1": (), "m2": ("e1",)}

    def test_rule_coverage_by_kind_policy_entry_replaces_builtin_one(self) -> None:
        policy = with_knobs(covered_by={"state_write": ["test_run"]})
        claim = build([mutation()], [run_item(id="e1"), evidence(id="e2")])
        verdict = verify(claim, DECIDE, policy)
        assert verdict.coverage[0].covered_by == ("e1",)
        assert not_counted_for(verdict, "m1") == {"e2": ["kind_not_covered"]}

    def test_rule_coverage_by_kind_other_kinds_keep_builtin_entry(self) -> None:
        policy = with_knobs(covered_by={"deploy": ["test_run"]})
        assert verify(build(), DECIDE, policy).state == "verified"

    def test_rule_coverage_by_kind_unmapped_kind_is_named(self) -> None:
        typo = mutation(kind="file-write", target="src/calc.py")
        verdict = verify(build([typo], [run_item(id="e1")]), DECIDE)
        assert verdict.state == "unverified"
        assert [(u.code, u.mutation) for u in verdict.unmet] == [("mutation_kind_unmapped", "m1")]
        assert "no check type may cover ('file-write')" in verdict.reason
        assert not_counted_for(verdict, "m1") == {"e1": ["kind_not_covered"]}

    def test_rule_coverage_by_kind_policy_can_map_a_new_kind(self) -> None:
        dns = mutation(kind="dns_change", target="dns/billing")
        item = evidence(
            check_type="endpoint_health",
            expected={"json": {"/v": 2}},
            observed_value={"json": {"/v": 2}},
        )
        claim = build([dns], [item])
        assert codes(verify(claim, DECIDE)) == ["mutation_kind_unmapped"]
        policy = with_knobs(covered_by={"dns_change": ["endpoint_health"]})
        assert verify(claim, DECIDE, policy).state == "verified"

    def test_rule_coverage_by_kind_contradiction_of_another_kind_still_refutes(self) -> None:
        failing = run_item(observed_value={"exit_code": 1, "passed": 2, "failed": 1, "errors": 0})
        verdict = verify(build([mutation()], [failing]), DECIDE)
        assert verdict.state == "refuted"
        assert verdict.coverage[0].contradicted_by == ("evidence[0]",)

    def test_rule_coverage_by_kind_item_failing_other_rules_lists_both(self) -> None:
        late = run_item(t=5, id="e1")  # premature too
        verdict = verify(build([mutation(t=8)], [late]), DECIDE)
        assert not_counted_for(verdict, "m1") == {"e1": ["premature", "kind_not_covered"]}

    def test_rule_coverage_by_kind_unknown_check_type_in_policy_is_invalid(self) -> None:
        with pytest.raises(InvalidDocument) as caught:
            parse_policy(
                {"id": "p", "requires": [], "max_age_s": 1, "covered_by": {"file_write": ["x"]}},
                "policy",
            )
        assert str(caught.value).startswith("policy.covered_by.file_write[0]: unknown check type")

    def test_rule_coverage_by_kind_registry_and_known_names_agree(self) -> None:
        assert sorted(CHECK_TYPES) == sorted(KNOWN_CHECK_TYPES)


# --- min_tests: a test run is a test run -----------------------------------------------------


class TestRuleMinTests:
    def code_claim(self, observed: object) -> Any:
        return build([mutation(**CODE_EDIT)], [run_item(observed_value=observed)])

    def test_rule_min_tests_exit_code_only_is_a_build_not_a_test_run(self) -> None:
        verdict = verify(self.code_claim({"exit_code": 0}), DECIDE)
        assert verdict.state == "unverified"
        (finding,) = verdict.evidence[0].reasons
        assert finding.code == "not_discriminating"
        assert "no test counts" in str(finding.detail)

    def test_rule_min_tests_zero_allows_a_build_check(self) -> None:
        claim = self.code_claim({"exit_code": 0})
        assert verify(claim, DECIDE, with_knobs(min_tests=0)).state == "verified"

    def test_rule_min_tests_counts_passed_failed_and_errors(self) -> None:
        observed = {"exit_code": 1, "passed": 1, "failed": 1, "errors": 1, "skipped": 9}
        claim = self.code_claim(observed)
        assert verify(claim, DECIDE, with_knobs(min_tests=3)).state == "refuted"
        verdict = verify(claim, DECIDE, with_knobs(min_tests=4))
        assert verdict.state == "unverified"
        assert (
            verdict.evidence[0].reasons[0].detail == "3 tests executed; the policy's min_tests is 4"
        )

    def test_rule_min_tests_default_is_one(self) -> None:
        one = {"exit_code": 0, "passed": 1}
        assert verify(self.code_claim(one), DECIDE).state == "verified"
        assert BUILTIN_POLICY.min_tests == 1

    @pytest.mark.parametrize("count", ["3", True, -1, 2.5, None])
    def test_rule_min_tests_malformed_count_is_no_count(self, count: object) -> None:
        claim = self.code_claim({"exit_code": 0, "passed": 5, "failed": count})
        verdict = verify(claim, DECIDE, with_knobs(min_tests=0))
        assert reasons(verdict) == ["not_discriminating"]

    @pytest.mark.parametrize("value", [-1, True, 1.5, "1", 10**9 + 1, 1e300])
    def test_rule_min_tests_out_of_range_is_invalid(self, value: object) -> None:
        with pytest.raises(InvalidDocument) as caught:
            with_knobs(min_tests=value)
        assert caught.value.path == "min_tests"
        assert len(str(caught.value)) < 120


# --- test_config_changed: the agent's edits to its own tests do not decide the run ------------


class TestRuleTestConfigChanged:
    def run_with(self, record: object) -> Any:
        item = run_item(details={"test_config_changed": record})
        return build([mutation(**CODE_EDIT)], [item])

    def test_rule_test_config_changed_run_does_not_count(self) -> None:
        verdict = verify(self.run_with(["conftest.py", "pytest.ini", "a.py", "b.py"]), DECIDE)
        assert verdict.state == "unverified"
        (finding,) = verdict.evidence[0].reasons
        assert finding.code == "test_config_changed"
        assert finding.detail == "changed: 'conftest.py', 'pytest.ini', 'a.py' and 1 more"

    def test_rule_test_config_changed_allowed_by_policy(self) -> None:
        claim = self.run_with(["conftest.py"])
        assert verify(claim, DECIDE, with_knobs(allow_test_changes=True)).state == "verified"

    def test_rule_test_config_changed_empty_record_counts(self) -> None:
        assert verify(self.run_with([]), DECIDE).state == "verified"

    @pytest.mark.parametrize("record", ["conftest.py", [1], {"conftest.py": "sha256:00"}, None])
    def test_rule_test_config_changed_malformed_record_fails_closed(self, record: object) -> None:
        assert reasons(verify(self.run_with(record), DECIDE)) == ["test_config_changed"]

    def test_rule_test_config_changed_failing_run_does_not_refute(self) -> None:
        item = run_item(
            details={"test_config_changed": ["conftest.py"]},
            observed_value={"exit_code": 1, "passed": 2, "failed": 1, "errors": 0},
        )
        assert verify(build([mutation(**CODE_EDIT)], [item]), DECIDE).state == "unverified"

    def test_rule_test_config_changed_is_read_for_test_runs_only(self) -> None:
        item = evidence(details={"test_config_changed": ["conftest.py"]})
        assert verify(build(evidence_items=[item]), DECIDE).state == "verified"


# --- numbers the verifier does arithmetic on ------------------------------------------------


def test_ten_year_max_age_decided_in_year_one_does_not_overflow() -> None:
    start = datetime(1, 1, 1, tzinfo=UTC)
    claim = build([mutation(at="0001-01-01T00:00:00Z")], [evidence(at="0001-01-01T00:00:10Z")])
    policy = with_knobs(max_age_s=315_576_000)
    assert verify(claim, start + timedelta(seconds=20), policy).state == "verified"


def test_an_id_that_looks_like_a_position_with_unicode_digits_is_only_a_name() -> None:
    verdict = verify(build(evidence_items=[evidence(id="evidence[\u00b2]")]), DECIDE)
    assert verdict.state == "verified"


# --- the gate's rules, as the policy's: require_mutations, protected_targets, uncaptured -------


def task_level_green() -> dict[str, Any]:
    return evidence(covers=[])


class TestRuleRequireMutations:
    def test_rule_require_mutations_an_empty_claim_is_unverified_however_green(self) -> None:
        claim = build([], [task_level_green()])
        assert verify(claim, DECIDE).state == "verified"  # v0.1: the default keeps its meaning
        verdict = verify(claim, DECIDE, with_knobs(require_mutations=True))
        assert (verdict.state, codes(verdict)) == ("unverified", ["no_mutations"])
        assert verdict.reason == (
            "Unverified: the claim records no change, and the policy requires one "
            "(require_mutations)."
        )

    def test_rule_require_mutations_a_claim_with_a_covered_change_verifies(self) -> None:
        assert verify(build(), DECIDE, with_knobs(require_mutations=True)).state == "verified"

    def test_rule_require_mutations_comes_after_absence(self) -> None:
        verdict = verify(build([], []), DECIDE, with_knobs(require_mutations=True))
        assert codes(verdict) == ["no_evidence", "no_mutations"]
        assert verdict.reason == (
            "No evidence was recorded, so nothing proves the claim. The claim records no "
            "change, and the policy requires one (require_mutations)."
        )

    def test_rule_require_mutations_is_true_or_false(self) -> None:
        with pytest.raises(InvalidDocument, match="require_mutations: expected true or false"):
            with_knobs(require_mutations=1)


class TestRuleProtectedTargets:
    def code_claim(self, *targets: str) -> Any:
        muts = [mutation(f"m{i}", 0, kind="file_write", target=t) for i, t in enumerate(targets)]
        return build(muts, [run_item(covers=[m["id"] for m in muts], id="e1")])

    def test_rule_protected_targets_a_covered_change_to_one_is_unverified(self) -> None:
        claim = self.code_claim("calc.py", "claim.toml")
        assert verify(claim, DECIDE).state == "verified"
        verdict = verify(claim, DECIDE, with_knobs(protected_targets=["claim.toml"]))
        assert verdict.state == "unverified"
        assert [(u.code, u.mutation) for u in verdict.unmet] == [("protected_target_changed", "m1")]
        assert verdict.reason == (
            "Unverified: mutation m1 is a change to a target the policy protects (claim.toml)."
        )

    def test_rule_protected_targets_match_exactly(self) -> None:
        claim = self.code_claim("./claim.toml", "ops/claim.toml", "Claim.toml")
        assert verify(claim, DECIDE, with_knobs(protected_targets=["claim.toml"])).state == (
            "verified"
        )

    def test_rule_protected_targets_any_kind_by_id(self) -> None:
        muts = [mutation("m2", 0), mutation("m1", 1)]
        claim = build(muts, [evidence(t=10, covers=["m1", "m2"])])
        verdict = verify(claim, DECIDE, with_knobs(protected_targets=["accounts/4471"]))
        assert [(u.code, u.mutation) for u in verdict.unmet] == [
            ("protected_target_changed", "m1"),
            ("protected_target_changed", "m2"),
        ]

    def test_rule_protected_targets_a_contradiction_still_refutes(self) -> None:
        failing = run_item(observed_value={"exit_code": 1, "passed": 2, "failed": 1, "errors": 0})
        claim = build([mutation(kind="file_write", target="claim.toml")], [failing])
        verdict = verify(claim, DECIDE, with_knobs(protected_targets=["claim.toml"]))
        assert verdict.state == "refuted"
        assert "protected_target_changed" in codes(verdict)

    def test_rule_protected_targets_are_non_empty_strings(self) -> None:
        with pytest.raises(InvalidDocument, match=r"protected_targets\[0\]: must not be empty"):
            with_knobs(protected_targets=[""])


class TestRuleUncaptured:
    def test_rule_uncaptured_a_change_that_could_not_be_captured_is_never_covered(
        self,
    ) -> None:
        uncaptured = mutation(kind="uncaptured", target=".")
        verdict = verify(build([uncaptured], [run_item(id="e1")]), DECIDE)
        assert verdict.state == "unverified"
        assert [(u.code, u.mutation) for u in verdict.unmet] == [("mutation_kind_unmapped", "m1")]
        assert verdict.reason == (
            "Unverified: mutation m1 is a change that could not be captured (.), which nothing "
            "may cover."
        )

    def test_rule_uncaptured_without_evidence_says_so(self) -> None:
        verdict = verify(build([mutation(kind="uncaptured", target=".")], []), DECIDE)
        assert codes(verdict) == ["no_evidence", "mutation_kind_unmapped"]
        assert verdict.reason.endswith(
            "Mutation m1 is a change that could not be captured (.), which nothing may cover."
        )


# --- the core stands alone ----------------------------------------------------------------------

CORE = ("model.py", "verify.py", "match.py", "timefmt.py", "_json.py", "public_key.py")
PACKAGE = Path(completion_claim.__file__).parent


@pytest.mark.parametrize(
    "module", [*CORE, *(f"checks/{p.name}" for p in sorted((PACKAGE / "checks").glob("*.py")))]
)
def test_the_core_imports_nothing_from_outside_it(module: str) -> None:
    """The verifier receives signature checking as a parameter, as it receives the clock: no
    module of the core imports trust/, an observer, the gate, the service or the command line."""
    tree = ast.parse((PACKAGE / module).read_text())
    imported = [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    outside = ("trust", "observe", "gate", "service", "cli", "batch")
    assert not [name for name in imported if name.split(".")[0] in outside]
