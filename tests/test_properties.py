"""Properties of the verifier over generated claims (hypothesis).

The claims are small (0-5 mutations over 3 targets, 0-8 evidence items of the 3 check types) and
their values are drawn from small pools, so matches and mismatches, equal instants, stale and
future evidence, supersession and premature evidence all occur often.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from completion_claim import Claim, Policy, Verdict, parse_claim, verify
from completion_claim.timefmt import format_time

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
T0 = datetime(2026, 8, 27, 18, 0, tzinfo=UTC)
WINDOW_MS = 600_000
TARGETS = ("accounts/4471", "src/billing.py", "svc/billing")
KINDS = ("file_write", "state_write", "deploy")
CHECK_TYPES = ("test_run", "endpoint_health", "state_readback")
CHECK_FOR_KIND = {
    "file_write": "test_run",
    "state_write": "state_readback",
    "deploy": "endpoint_health",
}
ABSENT = "<absent>"
"""A pool entry meaning: leave the member out."""

# Per check type: the expectation and observation that make an item support, drawn most of the
# time, and the others: a mismatch (contradicts), nothing asserted or a status-only or zero-test
# check (not discriminating), nothing observed (a failed observation).
GOOD_EXPECTED: dict[str, Any] = {
    "state_readback": {"zip": "94107"},
    "endpoint_health": {"status": 200, "body": {"/version": "2"}},
    "test_run": {"exit_code": 0, "failed": 0},
}
OTHER_EXPECTED: dict[str, list[Any]] = {
    "state_readback": [{"zip": 94107}, {}, ABSENT],
    "endpoint_health": [{"status": 200}, ABSENT],
    "test_run": [{"exit_code": 0}, {}, ABSENT],
}
GOOD_OBSERVED: dict[str, Any] = {
    "state_readback": {"zip": "94107", "city": "SF"},
    "endpoint_health": {"status": 200, "body": {"/version": "2"}},
    "test_run": {"exit_code": 0, "passed": 3, "failed": 0},
}
OTHER_OBSERVED: dict[str, list[Any]] = {
    "state_readback": [{"zip": "10001"}, None, ABSENT],
    "endpoint_health": [
        {"status": 200, "body": {"/version": "1"}},
        {"status": 503},
        ABSENT,
    ],
    "test_run": [
        {"exit_code": 1, "passed": 2, "failed": 1},
        {"exit_code": 0, "passed": 0, "failed": 0},
        ABSENT,
    ],
}
BASELINES: dict[str, list[Any]] = {
    "state_readback": [{"zip": "94107"}, {"zip": "10001"}],
    "endpoint_health": [{"status": 200, "body": {"/version": "1"}}],
    "test_run": [{"exit_code": 1, "passed": 0, "failed": 3}],
}


def ts(ms: int) -> str:
    return format_time(T0 + timedelta(milliseconds=ms))


def ms_of(text: str) -> int:
    return round((datetime.fromisoformat(text) - T0).total_seconds() * 1000)


# Coarse times collide often (equal instants are where the ordering rules bite); fine ones don't.
instants = st.one_of(st.integers(0, 20).map(lambda n: n * 15_000), st.integers(0, WINDOW_MS // 2))
# Mostly shortly after the mutation; sometimes at the same instant or before it (premature).
delays = st.sampled_from(["after", "after", "after", "after", "same", "before"]).flatmap(
    lambda when: {
        "after": st.integers(1, 60_000),
        "same": st.just(0),
        "before": st.integers(-10_000, -1),
    }[when]
)


def mostly(good: Any, others: list[Any]) -> st.SearchStrategy[Any]:
    """``good`` seven times in ten, else one of ``others``."""
    return st.integers(0, 9).flatmap(lambda n: st.just(good) if n < 7 else st.sampled_from(others))


@st.composite
def mutations(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(0, 5))
    return [
        {
            "id": f"m{i}",
            "kind": draw(st.sampled_from(KINDS)),
            "target": draw(st.sampled_from(TARGETS)),
            "at": ts(draw(instants)),
        }
        for i in range(count)
    ]


@st.composite
def evidence_item(
    draw: st.DrawFn, muts: list[dict[str, Any]], eid: str, kind: str | None = None
) -> dict[str, Any]:
    """Usually aimed at one mutation (its check type, shortly after it), sometimes at random."""
    ids = [m["id"] for m in muts]
    if muts and draw(st.integers(0, 3)) > 0:
        aim = draw(st.sampled_from(muts))
        check_type = CHECK_FOR_KIND[aim["kind"]]
        also = draw(st.sampled_from(ids)) if draw(st.integers(0, 3)) == 0 else aim["id"]
        covers = [aim["id"], also]
        at_ms = ms_of(aim["at"]) + draw(delays)
        target = aim["target"]
    else:
        check_type = draw(st.sampled_from(CHECK_TYPES))
        covers = draw(st.lists(st.sampled_from(ids), max_size=2)) if ids else []
        at_ms = draw(instants)
        target = draw(st.sampled_from(TARGETS))
    item: dict[str, Any] = {
        "id": eid,
        "check_type": check_type,
        "target": target,
        "at": ts(at_ms),
        "covers": list(dict.fromkeys(covers)),
        "verifier": {
            "id": "observer/1",
            "kind": kind or draw(st.sampled_from(("independent",) * 3 + ("self_attested",))),
        },
    }
    expected = draw(mostly(GOOD_EXPECTED[check_type], OTHER_EXPECTED[check_type]))
    observed = draw(mostly(GOOD_OBSERVED[check_type], OTHER_OBSERVED[check_type]))
    if expected != ABSENT:
        item["expected"] = expected
    if observed != ABSENT:
        item["observed_value"] = observed
    if draw(st.integers(0, 5)) == 0:
        item["details"] = {"baseline": draw(st.sampled_from(BASELINES[check_type]))}
    return item


@st.composite
def claims(draw: st.DrawFn) -> dict[str, Any]:
    muts = draw(mutations())
    items = [draw(evidence_item(muts, f"e{i}")) for i in range(draw(st.integers(0, 8)))]
    doc: dict[str, Any] = {
        "spec_version": "0.1",
        "task": {"id": "t1"},
        "claimed_outcome": "done",
        "mutations": muts,
        "evidence": items,
    }
    if draw(st.booleans()):
        doc["policy"] = {
            "id": "p",
            "requires": draw(st.lists(st.sampled_from(CHECK_TYPES), unique=True, max_size=2)),
            "max_age_s": draw(st.sampled_from([120, 300, 900])),
        }
    return doc


# Evidence ends near WINDOW_MS / 2 + 60 s: decisions fall mostly after it, sometimes before some
# of it (from the future), and sometimes long enough after it to make it stale.
decision_times = st.integers(WINDOW_MS // 4, WINDOW_MS).map(
    lambda ms: T0 + timedelta(milliseconds=ms)
)


def decide(doc: dict[str, Any], at: datetime, policy: Policy | None = None) -> Verdict:
    claim: Claim = parse_claim(doc)
    return verify(claim, at, policy)


def with_evidence(doc: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    return {**doc, "evidence": items}


def is_self_attested(item: dict[str, Any]) -> bool:
    return bool(item["verifier"]["kind"] == "self_attested")


# --- rule 1: self-attested evidence changes nothing -----------------------------------------------


@SETTINGS
@given(doc=claims(), at=decision_times)
def test_removing_self_attested_evidence_never_changes_the_state(
    doc: dict[str, Any], at: datetime
) -> None:
    independent = [item for item in doc["evidence"] if not is_self_attested(item)]
    assert decide(with_evidence(doc, independent), at).state == decide(doc, at).state


@SETTINGS
@given(doc=claims(), at=decision_times, data=st.data())
def test_adding_self_attested_evidence_never_changes_the_state(
    doc: dict[str, Any], at: datetime, data: st.DataObject
) -> None:
    extra = data.draw(
        st.lists(
            evidence_item(doc["mutations"], "placeholder", kind="self_attested"),
            min_size=1,
            max_size=3,
        )
    )
    for n, item in enumerate(extra):
        item["id"] = f"self{n}"
    position = data.draw(st.integers(0, len(doc["evidence"])))
    items = [*doc["evidence"][:position], *extra, *doc["evidence"][position:]]
    assert decide(with_evidence(doc, items), at).state == decide(doc, at).state


# --- rule 4: nothing independent and observed, nothing verified -----------------------------------


@SETTINGS
@given(doc=claims(), at=decision_times)
def test_verified_rests_on_a_qualifying_independent_observation(
    doc: dict[str, Any], at: datetime
) -> None:
    verdict = decide(doc, at)
    if verdict.state != "verified":
        return
    by_id = {item["id"]: item for item in doc["evidence"]}
    supporting = [r for r in verdict.evidence if r.counts and r.supports]
    assert supporting, "verified without a supporting qualifying item"
    for result in supporting:
        item = by_id[result.evidence]
        assert not is_self_attested(item)
        assert "observed_value" in item


@SETTINGS
@given(doc=claims(), at=decision_times, data=st.data())
def test_without_independent_observations_nothing_is_verified(
    doc: dict[str, Any], at: datetime, data: st.DataObject
) -> None:
    """Make every item self-attested or unobserved (each chosen at random): never verified."""
    items = []
    for original in doc["evidence"]:
        item = {**original, "verifier": dict(original["verifier"])}
        if data.draw(st.booleans()):
            item["verifier"]["kind"] = "self_attested"
        else:
            item.pop("observed_value", None)
        items.append(item)
    verdict = decide(with_evidence(doc, items), at)
    assert verdict.state != "verified"
    assert not any(r.counts and (r.supports or r.contradicts) for r in verdict.evidence)


# --- rule 5: time only takes evidence away --------------------------------------------------------


@SETTINGS
@given(doc=claims(), later_ms=st.integers(0, 2 * WINDOW_MS), data=st.data())
def test_a_later_decision_never_turns_unverified_into_verified(
    doc: dict[str, Any], later_ms: int, data: st.DataObject
) -> None:
    """From a decision time at or after every observation, waiting only makes evidence staler.

    (Before an observation's own time it is ``from_future``; waiting for it to happen may of course
    verify the claim, which is why the first decision time is drawn after the last observation.)
    """
    last_ms = max((ms_of(item["at"]) for item in doc["evidence"]), default=0)
    first = T0 + timedelta(milliseconds=data.draw(st.integers(last_ms, last_ms + WINDOW_MS)))
    later = first + timedelta(milliseconds=later_ms)
    if decide(doc, first).state == "unverified":
        assert decide(doc, later).state != "verified"


# --- rule 3: an uncovered mutation blocks verification --------------------------------------------


@SETTINGS
@given(
    doc=claims(),
    at=decision_times,
    kind=st.sampled_from(KINDS),
    target=st.sampled_from(TARGETS),
    delay_ms=st.integers(0, WINDOW_MS),
)
def test_adding_an_uncovered_mutation_never_yields_verified(
    doc: dict[str, Any], at: datetime, kind: str, target: str, delay_ms: int
) -> None:
    times = [m["at"] for m in doc["mutations"]] + [i["at"] for i in doc["evidence"]]
    latest = max((datetime.fromisoformat(x) for x in times), default=T0)
    extra = {
        "id": "m-new",
        "kind": kind,
        "target": target,
        "at": format_time(latest + timedelta(milliseconds=delay_ms)),
    }
    verdict = decide({**doc, "mutations": [*doc["mutations"], extra]}, at)
    assert verdict.state != "verified"
    assert any(u.code == "mutation_uncovered" and u.mutation == "m-new" for u in verdict.unmet)


# --- determinism: list order does not matter ------------------------------------------------------


@SETTINGS
@given(doc=claims(), at=decision_times, data=st.data())
def test_list_order_never_changes_the_verdict(
    doc: dict[str, Any], at: datetime, data: st.DataObject
) -> None:
    shuffled = dict(doc)
    shuffled["mutations"] = data.draw(st.permutations(doc["mutations"]))
    shuffled["evidence"] = [
        {**item, "covers": data.draw(st.permutations(item["covers"]))}
        for item in data.draw(st.permutations(doc["evidence"]))
    ]
    if "policy" in doc:
        requires = data.draw(st.permutations(doc["policy"]["requires"]))
        shuffled["policy"] = {**doc["policy"], "requires": requires}
    original, reordered = decide(doc, at), decide(shuffled, at)
    assert reordered.state == original.state
    assert reordered.to_json() == original.to_json()


# --- rule 6: only a qualifying independent contradiction refutes ----------------------------------


@SETTINGS
@given(doc=claims(), at=decision_times)
def test_refuted_rests_on_a_qualifying_independent_contradiction(
    doc: dict[str, Any], at: datetime
) -> None:
    verdict = decide(doc, at)
    contradicting = [r.evidence for r in verdict.evidence if r.counts and r.contradicts]
    by_id = {item["id"]: item for item in doc["evidence"]}
    assert (verdict.state == "refuted") == bool(contradicting)
    for ref in contradicting:
        assert not is_self_attested(by_id[ref])
        assert "observed_value" in by_id[ref]


# --- coverage by kind: a check speaks only for the changes it can observe ------------------------


@SETTINGS
@given(doc=claims(), at=decision_times)
def test_a_mutation_is_covered_only_by_a_check_type_that_may_cover_its_kind(
    doc: dict[str, Any], at: datetime
) -> None:
    verdict = decide(doc, at)
    kinds = {m["id"]: m["kind"] for m in doc["mutations"]}
    by_id = {item["id"]: item for item in doc["evidence"]}
    for cover in verdict.coverage:
        may = CHECK_FOR_KIND[kinds[cover.mutation]]
        assert all(by_id[ref]["check_type"] == may for ref in cover.covered_by)
        # A supporting item of another check type that names it is told apart, not dropped.
        mismatched = {
            r.evidence
            for r in verdict.evidence
            if r.supports and cover.mutation in by_id[r.evidence]["covers"] and r.check_type != may
        }
        assert mismatched <= {r.evidence for r in cover.not_counted}
