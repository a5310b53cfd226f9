"""The readable report says why a mutation is not covered, in words."""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import pytest

from completion_claim import parse_claim, verify
from completion_claim.report import (
    INDEPENDENCE_CODES,
    describe_unmet,
    next_steps,
    render_report,
)
from completion_claim.trust import check_signatures
from completion_claim.verify import Unmet

from .builders import at, build, claim_doc, evidence, mutation


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


# --- the header in signed mode (issue 11, item 9) -------------------------------------------------


def test_signed_header_counts_the_items_proven_when_none_qualified() -> None:
    """An unsigned item under the operator's signed policy: the report must not say
    "independence proven", since no item was."""
    from .signing import SIGNED_POLICY, judge

    doc = claim_doc([mutation()], [evidence(id="e1"), evidence(id="e2", t=12)])
    verdict = judge(doc)
    assert verdict.state == "unverified"
    report = render_report(parse_claim(doc), verdict, "c.json", SIGNED_POLICY)
    assert "independence proven" not in report
    assert "  policy signed-ops, signed mode; 0 of 2 items proven, decided at " in report


def test_signed_header_counts_a_proven_item_beside_an_unproven_one() -> None:
    from .signing import genuine_doc, judge

    doc = genuine_doc()
    doc["mutations"].append(mutation("m2", kind="deploy", target="web"))
    doc["evidence"].append(evidence(id="e2", t=12, covers=["m2"], check_type="endpoint_health"))
    verdict = judge(doc)
    assert verdict.state == "unverified"
    assert "signed mode; 1 of 2 items proven" in render_report(parse_claim(doc), verdict)


def test_a_verified_signed_header_still_says_independence_proven() -> None:
    from .signing import genuine_doc, judge

    doc = genuine_doc()
    verdict = judge(doc)
    assert verdict.state == "verified"
    assert ", independence proven, " in render_report(parse_claim(doc), verdict)


def test_independence_codes_are_rule_ones_findings() -> None:
    from completion_claim.trust.evidence import FINDING_CODES

    rule_one = {*FINDING_CODES, "self_attested", "signatures_not_checked"}
    assert frozenset(rule_one) == INDEPENDENCE_CODES


# --- next steps ---------------------------------------------------------------------------------


def steps_for(
    doc: dict[str, Any], decided: float = 20, source: str = "c.json", **kwargs: Any
) -> list[str]:
    claim = parse_claim(doc)
    verdict = verify(claim, at(decided), kwargs.get("policy"), signatures=check_signatures)
    assert verdict.state != "verified"
    steps = next_steps(claim, verdict, source, kwargs.get("policy"))
    report = render_report(claim, verdict, source, kwargs.get("policy"))
    assert report.endswith("Next steps\n" + "".join(f"  - {s}\n" for s in steps))
    return steps


def test_a_verified_report_has_no_next_steps() -> None:
    claim = build()
    verdict = verify(claim, at(20))
    assert verdict.state == "verified"
    assert next_steps(claim, verdict) == []
    assert "Next steps" not in render_report(claim, verdict)


def test_contradicted_points_at_the_evidence_and_its_mismatch() -> None:
    doc = claim_doc(
        evidence_items=[
            evidence(
                id="rb",
                target="sqlite:///shop.db table accounts where id=4471",
                observed_value={"billing_zip": "10001"},
            )
        ]
    )
    assert steps_for(doc) == [
        "look at rb: its state_readback observation of sqlite:///shop.db table accounts where "
        'id=4471 differs at billing_zip: expected "94107", observed "10001"; fix that, then '
        "observe again",
        "observe: claim observe readback c.json sqlite:///shop.db --table TABLE "
        "--key COLUMN=VALUE --expect FIELD=VALUE --covers m1",
    ]


def test_no_evidence_gives_the_command_for_each_mutations_kind() -> None:
    doc = claim_doc(
        [
            mutation("m1", kind="file_write", target="calc.py"),
            mutation("m2", kind="deploy", target="web"),
            mutation("m3", kind="file_write", target="util.py"),
        ],
        [],
    )
    assert steps_for(doc, source="my claim.json") == [
        "observe: claim observe endpoint 'my claim.json' URL --expect-json POINTER=VALUE "
        "--covers m2",
        "observe: claim observe test-run 'my claim.json' --covers m1,m3 -- TEST-COMMAND",
    ]


def test_no_evidence_and_no_mutations_says_to_record_the_change_first() -> None:
    doc = claim_doc([], [])
    assert steps_for(doc, source="stdin") == [
        "record what the agent changed (claim mutate CLAIM ...), then observe"
    ]


def test_mutation_uncovered_reuses_the_test_command_of_an_earlier_run() -> None:
    run_item = evidence(
        id="e1",
        check_type="test_run",
        target="python -m pytest -q",
        covers=["m1"],
        expected={"exit_code": 0},
        observed_value={"exit_code": 0, "passed": 3, "failed": 0},
    )
    doc = claim_doc(
        [
            mutation("m1", kind="file_write", target="calc.py"),
            mutation("m2", t=-5, kind="file_write", target="util.py"),
        ],
        [run_item],
    )
    verdict = verify(parse_claim(doc), at(20))
    assert [u.code for u in verdict.unmet] == ["mutation_uncovered"]
    assert steps_for(doc) == [
        "observe: claim observe test-run c.json --covers m2 -- python -m pytest -q"
    ]


def test_self_attested_asks_for_an_outside_observation() -> None:
    doc = claim_doc(
        evidence_items=[evidence(id="e1", verifier={"id": "a", "kind": "self_attested"})]
    )
    steps = steps_for(doc)
    assert steps[0] == "e1 is the agent's own report: observe from outside the agent"
    assert steps[-1].startswith("observe: claim observe readback c.json URL ")


def test_stale_says_observe_again() -> None:
    steps = steps_for(claim_doc(evidence_items=[evidence(id="e1")]), decided=1000)
    assert steps[0] == "e1 is older than the policy's max_age_s: observe again"
    assert steps[-1].endswith("--covers m1")


@pytest.mark.parametrize(
    ("evidence_at", "mutation_at", "code"),
    [(0, 0, "premature"), (10, 15, "superseded")],
)
def test_premature_and_superseded_say_observe_after_the_last_change(
    evidence_at: float, mutation_at: float, code: str
) -> None:
    mutations = [mutation("m1"), mutation("m2", t=mutation_at)]
    covers = ["m1", "m2"] if code == "premature" else ["m1"]
    doc = claim_doc(mutations, [evidence(id="e1", t=evidence_at, covers=covers)])
    verdict = verify(parse_claim(doc), at(20))
    assert {f.code for r in verdict.evidence for f in r.reasons} == {code}
    steps = steps_for(doc)
    assert steps[0] == "e1 predates mutation m2: observe after the last change"
    assert steps[-1].endswith("--covers m1,m2")


def test_kind_not_covered_points_at_the_policys_covered_by() -> None:
    doc = claim_doc([mutation(kind="file_write", target="src/calc.py")], [evidence(id="e1")])
    steps = steps_for(doc)
    assert steps[0].startswith("e1 may not cover mutation m1 (state_readback may not cover a ")
    assert steps[0].endswith(
        "the policy's covered_by says which check types may cover a 'file_write' mutation"
    )
    assert steps[-1] == "observe: claim observe test-run c.json --covers m1 -- TEST-COMMAND"


def test_mutation_kind_unmapped_asks_for_the_kind_or_the_policy() -> None:
    doc = claim_doc([mutation(kind="file-write")], [evidence(id="e1", covers=[])])
    assert (
        "mutation m1 is of kind 'file-write', which no check type may cover: correct the kind, "
        "or map it in the policy's covered_by"
    ) in steps_for(doc)


GATES = {"id": "gate", "requires": [], "max_age_s": 300, "require_mutations": True,
         "protected_targets": ["claim.toml"]}  # fmt: skip


def test_no_mutations_asks_for_the_change() -> None:
    doc = claim_doc([], [evidence(id="e1", covers=[])], policy=GATES)
    assert steps_for(doc) == [
        "nothing was changed, and the policy requires a change: make the change the task asks "
        "for (or record it: claim mutate / claim capture-git), then observe"
    ]


def test_protected_target_changed_asks_to_undo_it() -> None:
    changed = mutation(kind="state_write", target="claim.toml")
    doc = claim_doc([changed], [evidence(id="e1", target="claim.toml")], policy=GATES)
    assert steps_for(doc) == [
        "mutation m1 changed claim.toml, which the policy protects: undo that change; no "
        "evidence can cover it"
    ]


def test_an_uncaptured_change_asks_for_a_readable_work_tree() -> None:
    doc = claim_doc([mutation(kind="uncaptured", target=".")], [], policy=GATES)
    assert (
        "mutation m1: the change to . could not be captured; make it readable (no link out of "
        "the work tree, file names git can record), then capture and observe again"
    ) in steps_for(doc)


def test_requirement_unmet_gives_the_required_observation() -> None:
    doc = claim_doc(
        [mutation(kind="deploy", target="web")],
        [
            evidence(
                id="e1",
                check_type="endpoint_health",
                target="GET https://web.test/v",
                expected={"status": 200, "json": {"/build": "42"}},
                observed_value={"status": 200, "json": {"/build": "42"}},
            )
        ],
        policy={"id": "p", "requires": ["endpoint_health", "test_run"], "max_age_s": 300},
    )
    assert steps_for(doc) == ["observe: claim observe test-run c.json --covers '' -- TEST-COMMAND"]


def test_no_observation_quotes_the_recorded_error() -> None:
    failed = evidence(id="e1", details={"error": "Connection refused"})
    del failed["observed_value"]
    steps = steps_for(claim_doc(evidence_items=[failed]))
    assert steps[0] == (
        "e1 could not observe (Connection refused): make accounts/4471 reachable, observe again"
    )


def test_signed_mode_commands_carry_a_sign_key() -> None:
    from .signing import SIGNED_POLICY

    steps = steps_for(claim_doc(evidence_items=[evidence(id="e1")]), policy=SIGNED_POLICY)
    assert steps[0].startswith("e1: not signed: signed mode counts only evidence a trusted ")
    assert steps[-1].endswith("--covers m1 --sign-key OBSERVER-KEY")
    run_item = evidence(
        id="e1",
        check_type="test_run",
        target="pytest -q",
        expected={"exit_code": 0},
        observed_value={"exit_code": 0, "passed": 3, "failed": 0},
    )
    doc = claim_doc([mutation(kind="file_write", target="calc.py")], [run_item])
    assert steps_for(doc, policy=SIGNED_POLICY)[-1] == (
        "observe: claim observe test-run c.json --covers m1 --sign-key OBSERVER-KEY -- pytest -q"
    )


def test_a_caller_that_guides_in_its_own_terms_can_leave_the_steps_out() -> None:
    claim = build([mutation()], [])
    verdict = verify(claim, at(20))
    assert "Next steps" in render_report(claim, verdict)
    assert "Next steps" not in render_report(claim, verdict, steps=False)


def test_every_unmet_code_the_verifier_gives_reads_as_prose() -> None:
    """The report's (and so the gate's) Unmet section is sentences, never a bare code."""
    source = inspect.getsource(importlib.import_module("completion_claim.verify"))
    codes = set(re.findall(r'Unmet\(\s*"([a-z_]+)"', source))
    codes |= set(re.findall(r'Unmet\(\s*code="([a-z_]+)"', source))
    assert {"no_mutations", "contradicted", "requirement_unmet"} <= codes
    for code in codes | {"mutation_uncovered", "mutation_kind_unmapped"}:
        text = describe_unmet(Unmet(code, mutation="m1", check_type="test_run", evidence="e1"))
        assert text != code
        assert " " in text
