"""Write the conformance vectors to ``conformance/vectors/`` (``make vectors``).

Every vector is a claim (or raw claim bytes), an optional operator policy, a decision time and the
outcome docs/spec.md (sections 2 to 5) demands. The claims are built from small helpers; the
expected outcomes are written here by hand from it, never computed by running the verifier
(that would only prove the verifier agrees with itself).

Numbering is the order of ``_vectors()``: append new vectors at the end so numbers stay stable.
Running the script twice writes identical files; files it no longer produces are deleted.
"""

from __future__ import annotations

import base64
import copy
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

VECTOR_DIR = Path(__file__).resolve().parent / "vectors"

Json = Any
_ABSENT: Any = object()
"""Marks a member to leave out of a built object (distinct from JSON null)."""

# --- building blocks --------------------------------------------------------------------------

DAY = "2026-08-27"
AT = f"{DAY}T18:02:00Z"
"""The usual decision time: one minute after the usual evidence, two after the usual write."""


def t(clock: str) -> str:
    """``t("01:30")`` is 18:01:30Z on the vectors' day; fractions may follow the seconds."""
    return f"{DAY}T18:{clock}Z"


ZIP = {"billing_zip": "94107"}
OTHER_ZIP = {"billing_zip": "10001"}
RECORD = "accounts/4471"
PASSING = {"exit_code": 0, "passed": 42, "failed": 0, "errors": 0, "skipped": 1}
FAILING = {"exit_code": 1, "passed": 41, "failed": 1, "errors": 0, "skipped": 1}
EXPECT_GREEN = {"exit_code": 0, "failed": 0}
VERSION_EXPECTED = {"status": 200, "body": {"/version": "1.4.2"}}
VERSION_OBSERVED = {"status": 200, "body": {"/version": "1.4.2", "/uptime_s": 3}}
VERSION_OLD = {"status": 200, "body": {"/version": "1.4.1", "/uptime_s": 86400}}


def mutation(
    mid: str = "m1", target: str = RECORD, at: str = t("00:00"), kind: str = "state_write"
) -> dict[str, Json]:
    return {"id": mid, "kind": kind, "target": target, "at": at}


def evidence(
    check_type: str,
    target: str,
    at: str,
    covers: Sequence[str],
    expected: Json = _ABSENT,
    observed: Json = _ABSENT,
    *,
    kind: str = "independent",
    eid: str | None = None,
    details: Json = _ABSENT,
) -> dict[str, Json]:
    item: dict[str, Json] = {
        "check_type": check_type,
        "target": target,
        "at": at,
        "covers": list(covers),
        "verifier": {
            "id": "agent/1.0" if kind == "self_attested" else "ci-gate/0.3",
            "kind": kind,
        },
    }
    if eid is not None:
        item["id"] = eid
    if expected is not _ABSENT:
        item["expected"] = expected
    if observed is not _ABSENT:
        item["observed_value"] = observed
    if details is not _ABSENT:
        item["details"] = details
    return item


def readback(
    covers: Sequence[str] = ("m1",),
    at: str = t("01:00"),
    expected: Json = ZIP,
    observed: Json = ZIP,
    *,
    target: str = RECORD,
    kind: str = "independent",
    eid: str | None = None,
    details: Json = _ABSENT,
) -> dict[str, Json]:
    return evidence(
        "state_readback",
        target,
        at,
        covers,
        expected,
        observed,
        kind=kind,
        eid=eid,
        details=details,
    )


def run_tests(
    covers: Sequence[str] = ("m1",),
    at: str = t("01:00"),
    expected: Json = EXPECT_GREEN,
    observed: Json = PASSING,
    *,
    kind: str = "independent",
    eid: str | None = None,
) -> dict[str, Json]:
    return evidence("test_run", "pytest -q", at, covers, expected, observed, kind=kind, eid=eid)


def health(
    covers: Sequence[str] = ("m1",),
    at: str = t("01:00"),
    expected: Json = VERSION_EXPECTED,
    observed: Json = VERSION_OBSERVED,
    *,
    eid: str | None = None,
    details: Json = _ABSENT,
) -> dict[str, Json]:
    return evidence(
        "endpoint_health",
        "https://billing.example/healthz",
        at,
        covers,
        expected,
        observed,
        eid=eid,
        details=details,
    )


def policy(pid: str = "ops", requires: Sequence[str] = (), max_age_s: float = 300) -> Json:
    return {"id": pid, "requires": list(requires), "max_age_s": max_age_s}


def claim(
    mutations: Sequence[Json] = (),
    items: Sequence[Json] = (),
    embedded: Json = _ABSENT,
    **extra: Json,
) -> dict[str, Json]:
    doc: dict[str, Json] = {
        "spec_version": "0.1",
        "task": {"id": "task-4471", "description": "Update the billing address on account 4471"},
        "claimed_outcome": "Done.",
        "mutations": list(mutations),
        "evidence": list(items),
    }
    if embedded is not _ABSENT:
        doc["policy"] = embedded
    doc.update(extra)
    return doc


def simple() -> dict[str, Json]:
    """One write, one timely independent readback that matches: verified at ``AT``."""
    return claim([mutation()], [readback()])


def changed(doc: Json, path: Sequence[str | int], value: Json = _ABSENT) -> Json:
    """A deep copy of ``doc`` with the member at ``path`` replaced (or removed, without value)."""
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    if value is _ABSENT:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def nested(levels: int) -> Json:
    """A free-form value made of ``levels`` nested objects (one level: ``{"k": "leaf"}``)."""
    value: Json = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


RAW = "@@RAW@@"


def raw_text(doc: Json, raw: str) -> str:
    """Serialise ``doc`` and splice ``raw`` in where the string ``RAW`` stands."""
    return json.dumps(doc, indent=1).replace(json.dumps(RAW), raw)


FORMAT_NOTE_EXAMPLE: dict[str, Json] = {
    "spec_version": "0.1",
    "task": {"id": "deploy-4471", "description": "Update the billing address on account 4471"},
    "claimed_outcome": "Updated the billing address on account 4471.",
    "mutations": [
        {"id": "m1", "kind": "state_write", "target": "accounts/4471", "at": "2026-08-27T18:04:02Z"}
    ],
    "evidence": [
        {
            "check_type": "state_readback",
            "target": "accounts/4471",
            "expected": {"billing_zip": "94107"},
            "observed_value": {"billing_zip": "94107"},
            "at": "2026-08-27T18:04:09Z",
            "covers": ["m1"],
            "verifier": {"id": "gitreal-gate/0.3", "kind": "independent"},
        }
    ],
    "policy": {"id": "default", "requires": ["state_readback"], "max_age_s": 300},
    "verdict": {
        "state": "verified",
        "unmet": [],
        "reason": None,
        "decided_at": "2026-08-27T18:04:10Z",
    },
}

# --- the vector record ------------------------------------------------------------------------

NOT_COUNTED = ("mutation_uncovered", "no_supporting_evidence")
"""The usual unmet list when the only evidence for the only mutation does not count."""


def vector(
    slug: str,
    description: str,
    rules: Sequence[str],
    *,
    claim: Json = _ABSENT,
    claim_text: str | None = None,
    claim_bytes: bytes | None = None,
    operator: Json = _ABSENT,
    policy_text: str | None = None,
    at: str = AT,
    state: str,
    unmet: Sequence[str] = (),
    error_path: str | None = None,
    findings: dict[str, list[str]] | None = None,
    policy_id: str | None = None,
    schema_can_express: bool = True,
) -> tuple[str, dict[str, Json]]:
    body: dict[str, Json] = {"description": description, "rules": list(rules), "at": at}
    sources = [claim is not _ABSENT, claim_text is not None, claim_bytes is not None]
    assert sum(sources) == 1, slug
    if claim is not _ABSENT:
        body["claim"] = claim
    elif claim_text is not None:
        body["claim_text"] = claim_text
    else:
        assert claim_bytes is not None
        body["claim_base64"] = base64.b64encode(claim_bytes).decode("ascii")
    if operator is not _ABSENT:
        body["policy"] = operator
    if policy_text is not None:
        body["policy_text"] = policy_text
    expect: dict[str, Json] = {"state": state}
    if state == "invalid":
        assert error_path is not None, slug
        assert not unmet, slug
        expect["error_path"] = error_path
    else:
        assert error_path is None, slug
        expect["unmet"] = sorted(unmet)
    if findings is not None:
        expect["findings"] = {ref: sorted(codes) for ref, codes in findings.items()}
    if policy_id is not None:
        expect["policy_id"] = policy_id
    body["expect"] = expect
    if not schema_can_express:
        body["schema_can_express"] = False
    return slug, body


# --- the vectors ------------------------------------------------------------------------------


def _vectors() -> Iterator[tuple[str, dict[str, Json]]]:
    yield from _basics()
    yield from _independence()
    yield from _ordering()
    yield from _task_level_and_coverage()
    yield from _freshness()
    yield from _observation()
    yield from _discriminating()
    yield from _satisfies()
    yield from _supersession()
    yield from _policy()
    yield from _refuted()
    yield from _document()
    yield from _invalid_json()
    yield from _invalid_structure()
    yield from _invalid_time()
    yield from _invalid_semantic()
    yield from _invalid_policy()
    yield from _absence_and_precision()
    # Issue 7: appended last so that every earlier number stays as it was.
    yield from _coverage_by_kind()
    yield from _min_tests()
    yield from _test_changes()
    yield from _invalid_knobs()
    # Issue 12: appended last so that every earlier number stays as it was.
    yield from _dom_assertion()
    # Issue 17: the gate's own rules as the policy's, then what a person can see on a page;
    # appended last so that every earlier number stays as it was.
    yield from _gate_rules()
    yield from _dom_visibility()


def _absence_and_precision() -> Iterator[tuple[str, dict[str, Json]]]:
    deletion = mutation(kind="state_write")
    yield vector(
        "expected-null-verifies-a-deletion",
        "expected null asserts the record is absent: a readback that finds none supports.",
        ["qualify-7", "satisfies"],
        claim=claim([deletion], [readback(expected=None, observed=None)]),
        state="verified",
    )
    yield vector(
        "expected-null-contradicted-by-a-record",
        "expected null, but the record is still there: refuted.",
        ["qualify-7", "satisfies", "rule6"],
        claim=claim([deletion], [readback(expected=None, observed=ZIP)]),
        state="refuted",
        unmet=["contradicted", *NOT_COUNTED],
    )
    yield vector(
        "endpoint-status-padded-with-empty-members",
        "Empty json/headers members assert nothing beside the status.",
        ["qualify-7"],
        claim=claim(
            [mutation(target="svc/billing", kind="deploy")],
            [
                health(
                    expected={"status": 200, "json": {}, "headers": {}},
                    observed={"status": 200, "json": {}, "headers": {}},
                    eid="e1",
                )
            ],
        ),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["not_discriminating"]},
    )
    yield vector(
        "time-fraction-beyond-nanoseconds",
        "RFC 3339 allows any number of fraction digits; they are read to the microsecond.",
        ["qualify-2", "time"],
        claim=changed(simple(), ["evidence", 0, "at"], "2026-08-27T18:01:00.123456789012Z"),
        state="verified",
    )


def _basics() -> Iterator[tuple[str, dict[str, Json]]]:
    yield vector(
        "format-note-example",
        "The format note's own example verifies at its own decided_at.",
        ["rule1", "rule2", "rule3", "policy", "satisfies", "example"],
        claim=FORMAT_NOTE_EXAMPLE,
        at="2026-08-27T18:04:10Z",
        state="verified",
        policy_id="default",
    )
    yield vector(
        "format-note-example-at-max-age",
        "The format note's example decided exactly max_age_s (300 s) after its readback.",
        ["rule5", "qualify-4", "example"],
        claim=FORMAT_NOTE_EXAMPLE,
        at="2026-08-27T18:09:09Z",
        state="verified",
    )
    yield vector(
        "format-note-example-stale",
        "The format note's example decided 301 s after its readback: stale, so absent.",
        ["rule5", "qualify-4", "policy", "example"],
        claim=FORMAT_NOTE_EXAMPLE,
        at="2026-08-27T18:09:10Z",
        state="unverified",
        unmet=[*NOT_COUNTED, "requirement_unmet"],
    )
    yield vector(
        "no-mutations-no-evidence",
        "An empty claim is unproven, not passed.",
        ["rule4"],
        claim=claim(),
        state="unverified",
        unmet=["no_evidence"],
    )
    yield vector(
        "mutation-without-evidence",
        "A write with no evidence at all is unverified and uncovered.",
        ["rule3", "rule4"],
        claim=claim([mutation()]),
        state="unverified",
        unmet=["mutation_uncovered", "no_evidence"],
    )
    yield vector(
        "single-independent-readback",
        "One write covered by one timely, independent, matching readback verifies.",
        ["rule1", "rule2", "rule3", "satisfies"],
        claim=simple(),
        state="verified",
        policy_id="completion-claim/builtin",
    )


def _independence() -> Iterator[tuple[str, dict[str, Json]]]:
    yield vector(
        "self-attested-support-only",
        "The agent's own matching readback never satisfies anything.",
        ["rule1", "qualify-1"],
        claim=claim([mutation()], [readback(kind="self_attested", eid="e1")]),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["self_attested"]},
    )
    yield vector(
        "self-attested-contradiction-does-not-refute",
        "A self-attested contradiction is reported but does not refute.",
        ["rule1", "rule6", "qualify-1"],
        claim=claim([mutation()], [readback(observed=OTHER_ZIP, kind="self_attested", eid="e1")]),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["self_attested"]},
    )
    yield vector(
        "self-attested-contradiction-beside-independent-support",
        "An independent support verifies even when the agent reports a contradiction.",
        ["rule1", "rule6"],
        claim=claim(
            [mutation()],
            [
                readback(eid="e1"),
                readback(observed=OTHER_ZIP, kind="self_attested", eid="e2"),
            ],
        ),
        state="verified",
        findings={"e1": [], "e2": ["self_attested"]},
    )
    yield vector(
        "self-attested-test-run-cannot-meet-requirement",
        "A required test_run reported only by the agent leaves the requirement unmet.",
        ["rule1", "qualify-1", "policy"],
        claim=claim(
            [mutation()],
            [readback(), run_tests(covers=[], kind="self_attested")],
            embedded=policy("needs-tests", ["test_run"]),
        ),
        state="unverified",
        unmet=["requirement_unmet"],
        policy_id="needs-tests",
    )
    yield vector(
        "self-attested-and-premature-both-reported",
        "An item failing two conditions reports both reasons.",
        ["rule1", "rule2", "qualify-1", "qualify-2"],
        claim=claim(
            [mutation()], [readback(at="2026-08-27T17:59:00Z", kind="self_attested", eid="e1")]
        ),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["premature", "self_attested"]},
    )


def _ordering() -> Iterator[tuple[str, dict[str, Json]]]:
    def one(
        slug: str, description: str, m_at: str, e_at: str, ok: bool, tags: list[str], at: str = AT
    ) -> Any:
        return vector(
            slug,
            description,
            ["rule2", "qualify-2", *tags],
            claim=claim([mutation(at=m_at)], [readback(at=e_at, eid="e1")]),
            at=at,
            state="verified" if ok else "unverified",
            unmet=() if ok else NOT_COUNTED,
            findings={"e1": [] if ok else ["premature"]},
        )

    yield one(
        "readback-before-write",
        "A readback that predates the write proves nothing about it.",
        t("00:00"),
        "2026-08-27T17:59:00Z",
        False,
        [],
    )
    yield one(
        "readback-same-instant-as-write",
        "Evidence must be strictly after the write: the same instant is premature.",
        t("00:00"),
        t("00:00"),
        False,
        ["time"],
    )
    yield one(
        "readback-one-millisecond-after-write",
        "One millisecond after the write is strictly after.",
        t("00:00"),
        t("00:00.001"),
        True,
        ["time"],
    )
    yield one(
        "readback-one-millisecond-before-write",
        "Sub-second precision: 18:00:00.499 is before 18:00:00.500.",
        t("00:00.500"),
        t("00:00.499"),
        False,
        ["time"],
    )
    yield one(
        "readback-one-microsecond-after-write",
        "Sub-second precision to the microsecond: .123457 is after .123456.",
        t("00:00.123456"),
        t("00:00.123457"),
        True,
        ["time"],
    )
    yield one(
        "offsets-later-instant-written-earlier",
        "13:00:01-05:00 is after 20:00:00+02:00 (instants are compared, not strings).",
        f"{DAY}T20:00:00+02:00",
        f"{DAY}T13:00:01-05:00",
        True,
        ["time"],
    )
    yield one(
        "offsets-earlier-instant-written-later",
        "19:59:59+02:00 is before 18:00:00Z although it reads later.",
        t("00:00"),
        f"{DAY}T19:59:59+02:00",
        False,
        ["time"],
    )
    yield one(
        "offsets-same-instant",
        "23:30:00+05:30 is the same instant as 18:00:00Z, so premature.",
        t("00:00"),
        f"{DAY}T23:30:00+05:30",
        False,
        ["time"],
    )
    yield one(
        "offset-minus-zero-after",
        "An offset of -00:00 names a UTC instant; one second later is after.",
        f"{DAY}T18:00:00-00:00",
        t("00:01"),
        True,
        ["time"],
    )
    yield one(
        "offset-minus-zero-same-instant",
        "18:00:00-00:00 is the same instant as 18:00:00Z, so premature.",
        t("00:00"),
        f"{DAY}T18:00:00-00:00",
        False,
        ["time"],
    )
    yield one(
        "lowercase-t-and-z",
        "RFC 3339 allows lower-case t and z.",
        f"{DAY}t18:00:00z",
        f"{DAY}t18:01:00z",
        True,
        ["time"],
    )
    yield one(
        "nine-fraction-digits",
        "A nanosecond-precision write time (.123456789) before a .123457 readback.",
        t("00:00.123456789"),
        t("00:00.123457"),
        True,
        ["time"],
    )
    yield one(
        "leap-day",
        "29 February 2028 is a real date.",
        "2028-02-29T12:00:00Z",
        "2028-02-29T12:01:00Z",
        True,
        ["time"],
        "2028-02-29T12:02:00Z",
    )
    two = [mutation("m1", RECORD), mutation("m2", "accounts/9", t("01:30"))]
    yield vector(
        "covers-two-before-latest",
        "Evidence covering two writes must postdate the later one.",
        ["rule2", "qualify-2"],
        claim=claim(two, [readback(["m1", "m2"], t("01:00"), eid="e1")]),
        state="unverified",
        unmet=["mutation_uncovered", "mutation_uncovered", "no_supporting_evidence"],
        findings={"e1": ["premature"]},
    )
    yield vector(
        "covers-two-after-both",
        "Evidence after both writes it covers covers both.",
        ["rule2", "rule3", "qualify-2", "coverage"],
        claim=claim(two, [readback(["m1", "m2"], t("01:45"), eid="e1")]),
        state="verified",
        findings={"e1": []},
    )


def _task_level_and_coverage() -> Iterator[tuple[str, dict[str, Json]]]:
    yield vector(
        "task-level-no-mutations",
        "With no mutations, one qualifying task-level support verifies.",
        ["task-level", "rule4"],
        claim=claim([], [readback(covers=[])]),
        state="verified",
    )
    yield vector(
        "task-level-same-instant-as-last-mutation",
        "Task-level evidence must postdate every mutation; the same instant does not.",
        ["task-level", "qualify-2"],
        claim=claim([mutation()], [readback(covers=[], at=t("00:00"), eid="e1")]),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["premature"]},
    )
    yield vector(
        "task-level-covers-no-mutation",
        "Task-level evidence supports the claim but covers no mutation.",
        ["task-level", "rule3", "coverage"],
        claim=claim([mutation()], [readback(covers=[], eid="e1")]),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": []},
    )
    yield vector(
        "task-level-before-a-later-mutation",
        "A task-level test run before the last (other-target) mutation is premature.",
        ["task-level", "qualify-2", "policy"],
        claim=claim(
            [mutation("m1", RECORD), mutation("m2", "accounts/9", t("01:30"))],
            [
                readback(["m1"], t("01:00"), eid="e1"),
                readback(["m2"], t("01:45"), target="accounts/9", eid="e2"),
                run_tests([], t("01:00"), eid="e3"),
            ],
            embedded=policy("needs-tests", ["test_run"]),
        ),
        state="unverified",
        unmet=["requirement_unmet"],
        findings={"e1": [], "e2": [], "e3": ["premature"]},
    )
    yield vector(
        "task-level-meets-requirement",
        "A qualifying task-level test run satisfies a required check type.",
        ["task-level", "policy"],
        claim=claim(
            [mutation()],
            [readback(), run_tests([], t("01:30"))],
            embedded=policy("both", ["state_readback", "test_run"]),
        ),
        state="verified",
        policy_id="both",
    )
    yield vector(
        "partial-coverage",
        "Two writes, one covered: partial coverage stays unverified.",
        ["rule3", "coverage"],
        claim=claim(
            [mutation("m1"), mutation("m2", "accounts/9", t("00:30"))],
            [readback(["m1"])],
        ),
        state="unverified",
        unmet=["mutation_uncovered"],
    )
    yield vector(
        "each-mutation-own-evidence",
        "Each of two writes covered by its own readback verifies.",
        ["rule3", "coverage"],
        claim=claim(
            [mutation("m1"), mutation("m2", "accounts/9", t("00:30"))],
            [readback(["m1"]), readback(["m2"], target="accounts/9")],
        ),
        state="verified",
    )
    yield vector(
        "second-mutation-covered-only-by-stale",
        "A mutation whose only evidence is stale is uncovered.",
        ["rule3", "rule5", "coverage", "qualify-4"],
        claim=claim(
            [mutation("m1"), mutation("m2", "accounts/9", t("00:10"))],
            [
                readback(["m1"], t("01:30"), eid="e1"),
                readback(["m2"], t("00:50"), target="accounts/9", eid="e2"),
            ],
        ),
        at=t("06:00"),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": [], "e2": ["stale"]},
    )


def _freshness() -> Iterator[tuple[str, dict[str, Json]]]:
    def aged(slug: str, description: str, at: str, ok: bool, *, observed: Json = ZIP) -> Any:
        return vector(
            slug,
            description,
            ["rule5", "qualify-4"],
            claim=claim([mutation()], [readback(observed=observed, eid="e1")]),
            at=at,
            state="verified" if ok else "unverified",
            unmet=() if ok else NOT_COUNTED,
            findings={"e1": [] if ok else ["stale"]},
        )

    yield aged(
        "stale-by-one-second",
        "Evidence 301 s old under max_age_s 300 is absent.",
        t("06:01"),
        False,
    )
    yield aged(
        "age-exactly-max-age-counts",
        "Evidence exactly max_age_s old still counts.",
        t("06:00"),
        True,
    )
    yield aged(
        "age-max-plus-one-microsecond",
        "One microsecond past max_age_s is stale.",
        t("06:00.000001"),
        False,
    )
    yield aged(
        "stale-contradiction-does-not-refute",
        "A stale contradiction is reported, not refuting.",
        t("06:01"),
        False,
        observed=OTHER_ZIP,
    )
    for slug, at, ok in [
        ("fractional-max-age-equal", t("01:00.5"), True),
        ("fractional-max-age-exceeded", t("01:00.501"), False),
    ]:
        yield vector(
            slug,
            "max_age_s may be fractional: 0.5 s " + ("exactly (counts)." if ok else "+ 1 ms."),
            ["rule5", "qualify-4", "policy", "time"],
            claim=simple(),
            operator=policy("tight", max_age_s=0.5),
            at=at,
            state="verified" if ok else "unverified",
            unmet=() if ok else NOT_COUNTED,
            policy_id="tight",
        )

    def future(slug: str, description: str, e_at: str, at: str, ok: bool, **kw: Json) -> Any:
        return vector(
            slug,
            description,
            ["qualify-5", "time"],
            claim=claim([mutation()], [readback(at=e_at, eid="e1", **kw)]),
            at=at,
            state="verified" if ok else "unverified",
            unmet=() if ok else NOT_COUNTED,
            findings={"e1": [] if ok else ["from_future"]},
        )

    yield future(
        "evidence-after-decision-time",
        "Evidence dated after the decision is ignored.",
        t("01:00"),
        t("00:30"),
        False,
    )
    yield future(
        "evidence-at-decision-instant",
        "Evidence dated at the decision instant counts.",
        t("01:00"),
        t("01:00"),
        True,
    )
    yield future(
        "evidence-one-microsecond-after-decision",
        "One microsecond after the decision is from the future.",
        t("01:00.000001"),
        t("01:00"),
        False,
    )
    yield future(
        "evidence-after-decision-other-offsets",
        "20:01:00+02:00 is after a decision at 13:00:59-05:00.",
        f"{DAY}T20:01:00+02:00",
        f"{DAY}T13:00:59-05:00",
        False,
    )
    yield future(
        "future-contradiction-does-not-refute",
        "A contradiction dated after the decision does not refute.",
        t("01:00"),
        t("00:30"),
        False,
        observed=OTHER_ZIP,
    )


def _observation() -> Iterator[tuple[str, dict[str, Json]]]:
    yield vector(
        "failed-observation",
        "Evidence without observed_value (the observation failed) is unverified, not refuted.",
        ["qualify-6", "rule4"],
        claim=claim([mutation()], [readback(observed=_ABSENT, eid="e1")]),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["no_observation"]},
    )
    yield vector(
        "failed-observation-beside-support",
        "A failed observation does not spoil a qualifying support of the same write.",
        ["qualify-6"],
        claim=claim([mutation()], [readback(observed=_ABSENT), readback(at=t("01:10"))]),
        state="verified",
    )
    yield vector(
        "observed-null-missing-record",
        "A missing record (observed null) is an observation, and it contradicts.",
        ["qualify-6", "rule6", "satisfies"],
        claim=claim([mutation()], [readback(observed=None)]),
        state="refuted",
        unmet=["contradicted", *NOT_COUNTED],
    )
    yield vector(
        "unknown-check-type",
        "A check type this verifier does not know (visual_diff) does not qualify.",
        ["qualify-6"],
        claim=claim(
            [mutation()],
            [evidence("visual_diff", "https://app/", t("01:00"), ["m1"], ZIP, ZIP, eid="e1")],
        ),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["unknown_check_type"]},
    )
    yield vector(
        "unknown-check-type-contradiction-does-not-refute",
        "A contradiction from an unknown check type does not refute.",
        ["qualify-6", "rule6"],
        claim=claim(
            [mutation()],
            [
                readback(),
                evidence("visual_diff", "https://app/", t("01:00"), ["m1"], ZIP, OTHER_ZIP),
            ],
        ),
        state="verified",
    )
    yield vector(
        "requirement-of-unknown-check-type",
        "A policy requiring an unknown check type can never be satisfied.",
        ["qualify-6", "policy"],
        claim=claim(
            [mutation()],
            [readback(), evidence("visual_diff", "https://app/", t("01:00"), ["m1"], ZIP, ZIP)],
        ),
        operator=policy("visual", ["visual_diff"]),
        state="unverified",
        unmet=["requirement_unmet"],
    )


def _discriminating() -> Iterator[tuple[str, dict[str, Json]]]:
    def blind(slug: str, description: str, item: Json, m: Json = None, *tags: str) -> Any:
        return vector(
            slug,
            description,
            ["qualify-7", *tags],
            claim=claim([m or mutation()], [item]),
            state="unverified",
            unmet=NOT_COUNTED,
            findings={"e1": ["not_discriminating"]},
        )

    deploy = mutation(target="svc/billing", kind="deploy")
    code = mutation(target="src/billing.py", kind="file_write")
    yield blind(
        "expected-absent",
        "Evidence without expected asserts nothing.",
        readback(expected=_ABSENT, eid="e1"),
    )
    yield blind(
        "expected-empty-object",
        "An empty expected object asserts nothing.",
        readback(expected={}, eid="e1"),
    )
    yield blind(
        "expected-empty-array",
        "An empty expected array asserts nothing.",
        readback(expected=[], observed=[], eid="e1"),
    )
    yield blind(
        "expected-empty-mismatch-does-not-refute",
        "An empty expectation cannot contradict, whatever was observed.",
        readback(expected={}, observed="unexpected", eid="e1"),
        None,
        "rule6",
    )
    yield blind(
        "endpoint-status-only",
        "A health check asserting only the status says nothing.",
        health(expected={"status": 200}, eid="e1"),
        deploy,
    )
    yield blind(
        "endpoint-status-only-503-does-not-refute",
        "A status-only check that saw 503 is not discriminating, so it cannot refute.",
        health(expected={"status": 200}, observed={"status": 503}, eid="e1"),
        deploy,
        "rule6",
    )
    yield blind(
        "endpoint-baseline-already-met",
        "The pre-deploy baseline already showed the asserted version.",
        health(eid="e1", details={"baseline": VERSION_OBSERVED}),
        deploy,
    )
    yield blind(
        "test-run-zero-tests-executed",
        "A green run of zero tests could not have failed.",
        run_tests(
            observed={"exit_code": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}, eid="e1"
        ),
        code,
    )
    yield blind(
        "test-run-all-skipped",
        "Every test skipped means none executed.",
        run_tests(
            observed={"exit_code": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 7}, eid="e1"
        ),
        code,
    )
    yield blind(
        "test-run-zero-tests-failure-does-not-refute",
        "A run that executed no test cannot refute either (exit 5, nothing collected).",
        run_tests(observed={"exit_code": 5, "passed": 0, "failed": 0, "errors": 0}, eid="e1"),
        code,
        "rule6",
    )
    yield blind(
        "readback-baseline-already-met",
        "details.baseline already satisfied expected: the write changed nothing observable.",
        readback(eid="e1", details={"baseline": ZIP}),
    )
    yield vector(
        "readback-baseline-differs",
        "details.baseline differed from expected: the readback could have failed.",
        ["qualify-7"],
        claim=claim([mutation()], [readback(details={"baseline": OTHER_ZIP})]),
        state="verified",
    )
    yield vector(
        "endpoint-asserts-version",
        "A health check asserting the deployed version discriminates.",
        ["qualify-7", "satisfies"],
        claim=claim([deploy], [health()]),
        state="verified",
    )
    yield vector(
        "endpoint-baseline-differs",
        "The pre-deploy baseline showed the old version: discriminating.",
        ["qualify-7"],
        claim=claim([deploy], [health(details={"baseline": VERSION_OLD})]),
        state="verified",
    )
    yield vector(
        "endpoint-version-mismatch",
        "The endpoint still serves the old version: refuted.",
        ["qualify-7", "rule6"],
        claim=claim([deploy], [health(observed=VERSION_OLD)]),
        state="refuted",
        unmet=["contradicted", *NOT_COUNTED],
    )
    yield vector(
        "test-run-passing",
        "Tests executed and passed after the edit: verified.",
        ["qualify-7", "rule2"],
        claim=claim([code], [run_tests()]),
        state="verified",
    )
    yield vector(
        "test-run-failing",
        "Tests executed after the edit and one failed: refuted.",
        ["qualify-7", "rule6"],
        claim=claim([code], [run_tests(observed=FAILING)]),
        state="refuted",
        unmet=["contradicted", *NOT_COUNTED],
    )


def _satisfies() -> Iterator[tuple[str, dict[str, Json]]]:
    def case(slug: str, description: str, expected: Json, observed: Json, ok: bool) -> Any:
        return vector(
            slug,
            description,
            ["satisfies"] + ([] if ok else ["rule6"]),
            claim=claim([mutation()], [readback(expected=expected, observed=observed)]),
            state="verified" if ok else "refuted",
            unmet=() if ok else ["contradicted", *NOT_COUNTED],
        )

    yield case(
        "string-is-not-number",
        '"94107" is not 94107.',
        {"billing_zip": "94107"},
        {"billing_zip": 94107},
        False,
    )
    yield case(
        "number-is-not-string",
        '94107 is not "94107".',
        {"billing_zip": 94107},
        {"billing_zip": "94107"},
        False,
    )
    yield case("true-is-not-one", "true is not 1.", {"active": True}, {"active": 1}, False)
    yield case("zero-is-not-false", "0 is not false.", {"retries": 0}, {"retries": False}, False)
    yield case(
        "integer-equals-float",
        "1 equals 1.0 and 2.0 equals 2 (one JSON number type).",
        {"count": 1, "total": 2.0},
        {"count": 1.0, "total": 2},
        True,
    )
    yield case(
        "nested-subset",
        "Nested objects match as a recursive subset.",
        {"address": {"zip": "94107"}},
        {"id": 4471, "address": {"zip": "94107", "city": "San Francisco"}},
        True,
    )
    yield case(
        "nested-mismatch",
        "A mismatch deep inside a nested object contradicts.",
        {"address": {"zip": "94107"}},
        {"address": {"zip": "94108"}},
        False,
    )
    yield case(
        "extra-observed-keys",
        "Extra observed keys are allowed.",
        ZIP,
        {"billing_zip": "94107", "city": "San Francisco", "id": 4471},
        True,
    )
    yield case(
        "expected-key-missing",
        "Every expected key must be present in the observation.",
        {"billing_zip": "94107", "country": "US"},
        ZIP,
        False,
    )
    yield case(
        "expected-null-key-missing",
        "An expected null is not satisfied by a missing key.",
        {"deleted_at": None},
        {"id": 4471},
        False,
    )
    yield case(
        "expected-null-key-present",
        "An expected null is satisfied by an observed null.",
        {"deleted_at": None},
        {"deleted_at": None, "id": 4471},
        True,
    )
    yield case(
        "array-superset-not-equal",
        "Arrays must be equal: a longer array contradicts.",
        {"tags": ["a", "b"]},
        {"tags": ["a", "b", "c"]},
        False,
    )
    yield case(
        "array-order-matters",
        "Arrays must be equal: the same items reordered contradict.",
        {"tags": ["a", "b"]},
        {"tags": ["b", "a"]},
        False,
    )
    yield case(
        "array-equal", "Equal arrays satisfy.", {"tags": ["a", "b"]}, {"tags": ["a", "b"]}, True
    )
    yield case(
        "array-of-objects-exact",
        "Objects inside arrays must be equal, not a subset.",
        {"items": [{"sku": "A"}]},
        {"items": [{"sku": "A", "qty": 1}]},
        False,
    )
    yield case(
        "scalar-expected",
        "A scalar expectation must equal the observation.",
        "94107",
        "94107",
        True,
    )
    yield case(
        "object-expected-array-observed",
        "An object is not satisfied by an array.",
        ZIP,
        [ZIP],
        False,
    )
    yield case(
        "strings-compare-by-code-point",
        "Strings are equal only code point by code point "
        "(precomposed vs decomposed e-acute differ).",
        {"city": "Mal\u00e9"},
        {"city": "Male\u0301"},
        False,
    )


def _supersession() -> Iterator[tuple[str, dict[str, Json]]]:
    same_target = [mutation("m1"), mutation("m2", at=t("01:30"))]
    yield vector(
        "superseded-by-later-write-same-target",
        "A readback followed by another write to the same record no longer covers the first.",
        ["supersession", "qualify-3", "rule3"],
        claim=claim(
            same_target, [readback(["m1"], eid="e1"), readback(["m2"], t("01:45"), eid="e2")]
        ),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "superseded-by-write-at-same-instant",
        "A write to the same record at the readback's own instant supersedes it.",
        ["supersession", "qualify-3", "time"],
        claim=claim(
            [mutation("m1"), mutation("m2", at=t("01:00"))],
            [readback(["m1"], eid="e1"), readback(["m2"], t("01:45"), eid="e2")],
        ),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "later-readback-covers-both-writes",
        "A readback after the second write, covering both, verifies; the first is superseded.",
        ["supersession", "qualify-3", "coverage"],
        claim=claim(
            same_target, [readback(["m1"], eid="e1"), readback(["m1", "m2"], t("01:45"), eid="e2")]
        ),
        state="verified",
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "superseded-contradiction-does-not-refute",
        "A contradiction superseded by a later write to the same record does not refute.",
        ["supersession", "rule6"],
        claim=claim(
            same_target,
            [
                readback(["m1"], observed=OTHER_ZIP, eid="e1"),
                readback(["m1", "m2"], t("01:45"), eid="e2"),
            ],
        ),
        state="verified",
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "other-target-write-does-not-supersede",
        "A later write to a different record does not supersede.",
        ["supersession", "qualify-3"],
        claim=claim(
            [mutation("m1"), mutation("m2", "accounts/9", t("01:30"))],
            [
                readback(["m1"], eid="e1"),
                readback(["m2"], t("01:45"), target="accounts/9", eid="e2"),
            ],
        ),
        state="verified",
        findings={"e1": [], "e2": []},
    )
    yield vector(
        "superseded-by-other-kind-same-target",
        "Any later mutation of the same target supersedes, whatever its kind.",
        ["supersession", "qualify-3"],
        claim=claim(
            [
                mutation("m1", "config/app.json"),
                mutation("m2", "config/app.json", t("01:30"), "file_write"),
            ],
            [readback(["m1"], target="config/app.json", eid="e1")],
        ),
        state="unverified",
        unmet=["mutation_uncovered", "mutation_uncovered", "no_supporting_evidence"],
        findings={"e1": ["superseded"]},
    )
    yield vector(
        "covered-later-write-is-premature-not-superseded",
        "A later write that the item itself covers makes it premature, not superseded.",
        ["supersession", "qualify-2", "qualify-3"],
        claim=claim(same_target, [readback(["m1", "m2"], eid="e1")]),
        state="unverified",
        unmet=["mutation_uncovered", "mutation_uncovered", "no_supporting_evidence"],
        findings={"e1": ["premature"]},
    )
    edits = [
        mutation("m1", "src/billing.py", kind="file_write"),
        mutation("m2", "docs/notes.md", t("01:30"), "file_write"),
    ]
    yield vector(
        "test-run-superseded-by-later-file-write",
        "A test run before the claim's final file modification (another file) no longer counts.",
        ["supersession", "qualify-3", "rule3"],
        claim=claim(edits, [run_tests(["m1"], eid="e1"), run_tests(["m2"], t("01:45"), eid="e2")]),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "test-run-after-final-file-write",
        "A test run after the final file modification, covering both edits, verifies.",
        ["supersession", "qualify-3", "coverage"],
        claim=claim(
            edits, [run_tests(["m1"], eid="e1"), run_tests(["m1", "m2"], t("01:45"), eid="e2")]
        ),
        state="verified",
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "test-run-file-write-at-run-instant",
        "A file write at the test run's own instant supersedes the run.",
        ["supersession", "qualify-3", "time"],
        claim=claim(
            [edits[0], mutation("m2", "docs/notes.md", t("01:00"), "file_write")],
            [run_tests(["m1"], eid="e1"), run_tests(["m2"], t("01:45"), eid="e2")],
        ),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "superseded-failing-test-run-does-not-refute",
        "A failing run before a later edit is superseded: it does not refute the passing rerun.",
        ["supersession", "rule6"],
        claim=claim(
            edits,
            [
                run_tests(["m1"], observed=FAILING, eid="e1"),
                run_tests(["m1", "m2"], t("01:45"), eid="e2"),
            ],
        ),
        state="verified",
        findings={"e1": ["superseded"], "e2": []},
    )
    yield vector(
        "test-run-covering-later-edit-is-premature",
        "A run that covers an edit made after it is premature, not superseded.",
        ["supersession", "qualify-2", "qualify-3"],
        claim=claim(
            [edits[0], mutation("m2", "src/invoice.py", t("01:30"), "file_write")],
            [run_tests(["m1", "m2"], eid="e1")],
        ),
        state="unverified",
        unmet=["mutation_uncovered", "mutation_uncovered", "no_supporting_evidence"],
        findings={"e1": ["premature"]},
    )
    yield vector(
        "test-run-not-superseded-by-state-write",
        "Only file writes supersede a test run on other targets; a later state_write does not.",
        ["supersession", "qualify-3"],
        claim=claim(
            [edits[0], mutation("m2", RECORD, t("01:30"))],
            [run_tests(["m1"], eid="e1"), readback(["m2"], t("01:45"), eid="e2")],
        ),
        state="verified",
        findings={"e1": [], "e2": []},
    )
    yield vector(
        "readback-not-superseded-by-other-file-write",
        "A readback is not superseded by a later file write to another target.",
        ["supersession", "qualify-3"],
        claim=claim(
            [mutation("m1"), mutation("m2", "src/billing.py", t("01:30"), "file_write")],
            [readback(["m1"], eid="e1"), run_tests(["m2"], t("01:45"), eid="e2")],
        ),
        state="verified",
        findings={"e1": [], "e2": []},
    )


def _policy() -> Iterator[tuple[str, dict[str, Json]]]:
    builtin = "completion-claim/builtin"
    yield vector(
        "builtin-policy-max-age",
        "With no policy anywhere, the built-in one applies: evidence 300 s old counts.",
        ["policy", "rule5"],
        claim=simple(),
        at=t("06:00"),
        state="verified",
        policy_id=builtin,
    )
    yield vector(
        "builtin-policy-stale",
        "With no policy anywhere, the built-in max_age_s of 300 makes 301 s stale.",
        ["policy", "rule5"],
        claim=simple(),
        at=t("06:01"),
        state="unverified",
        unmet=NOT_COUNTED,
        policy_id=builtin,
    )
    yield vector(
        "builtin-policy-requires-nothing",
        "The built-in policy requires no check type.",
        ["policy"],
        claim=claim([mutation(target="svc/billing", kind="deploy")], [health()]),
        state="verified",
        policy_id=builtin,
    )
    yield vector(
        "embedded-policy-requirement",
        "Without an operator policy, the claim's own requirement applies.",
        ["policy"],
        claim=changed(simple(), ["policy"], policy("needs-tests", ["test_run"])),
        state="unverified",
        unmet=["requirement_unmet"],
        policy_id="needs-tests",
    )
    yield vector(
        "operator-policy-replaces-embedded-requirement",
        "The operator's policy replaces the embedded one, dropping its requirement.",
        ["policy"],
        claim=changed(simple(), ["policy"], policy("needs-tests", ["test_run"])),
        operator=policy("ops"),
        state="verified",
        policy_id="ops",
    )
    yield vector(
        "operator-policy-stricter",
        "The agent cannot choose its own bar: the operator's requirements apply.",
        ["policy"],
        claim=changed(simple(), ["policy"], policy("lenient")),
        operator=policy("ops", ["state_readback", "test_run"]),
        state="unverified",
        unmet=["requirement_unmet"],
        policy_id="ops",
    )
    yield vector(
        "operator-policy-shorter-max-age",
        "The operator's max_age_s (30) replaces the claim's (3600): 60 s old is stale.",
        ["policy", "rule5"],
        claim=changed(simple(), ["policy"], policy("lenient", max_age_s=3600)),
        operator=policy("ops", max_age_s=30),
        state="unverified",
        unmet=NOT_COUNTED,
        policy_id="ops",
    )
    yield vector(
        "operator-policy-longer-max-age",
        "The operator's max_age_s (600) replaces the claim's (60) even when laxer.",
        ["policy", "rule5"],
        claim=changed(simple(), ["policy"], policy("strict", max_age_s=60)),
        operator=policy("ops", max_age_s=600),
        at=t("03:00"),
        state="verified",
        policy_id="ops",
    )
    yield vector(
        "two-requirements-unmet",
        "Each required check type without a qualifying support is listed.",
        ["policy"],
        claim=simple(),
        operator=policy("ops", ["test_run", "endpoint_health", "state_readback"]),
        state="unverified",
        unmet=["requirement_unmet", "requirement_unmet"],
    )
    yield vector(
        "requirement-met-mutation-uncovered",
        "Meeting the policy does not excuse an uncovered mutation.",
        ["policy", "rule3", "coverage"],
        claim=claim([mutation("m1"), mutation("m2", "accounts/9", t("00:30"))], [readback(["m1"])]),
        operator=policy("ops", ["state_readback"]),
        state="unverified",
        unmet=["mutation_uncovered"],
    )
    yield vector(
        "requirement-only-stale",
        "A required test run that is stale does not meet the requirement.",
        ["policy", "rule5"],
        claim=claim([mutation()], [readback(at=t("01:30")), run_tests([], t("00:30"))]),
        operator=policy("ops", ["test_run"]),
        at=t("06:00"),
        state="unverified",
        unmet=["requirement_unmet"],
    )
    yield vector(
        "requirement-and-contradiction",
        "A failing required test run refutes and leaves everything else unmet too.",
        ["policy", "rule6"],
        claim=claim(
            [mutation(target="src/billing.py", kind="file_write")], [run_tests(observed=FAILING)]
        ),
        operator=policy("ops", ["test_run"]),
        state="refuted",
        unmet=["contradicted", *NOT_COUNTED, "requirement_unmet"],
    )


def _refuted() -> Iterator[tuple[str, dict[str, Json]]]:
    yield vector(
        "contradiction-beside-support",
        "One qualifying contradiction refutes even next to a qualifying support.",
        ["rule6"],
        claim=claim([mutation()], [readback(), readback(at=t("01:10"), observed=OTHER_ZIP)]),
        state="refuted",
        unmet=["contradicted"],
    )
    yield vector(
        "two-contradictions",
        "Each qualifying contradiction is listed.",
        ["rule6"],
        claim=claim(
            [mutation()],
            [readback(observed=OTHER_ZIP), readback(at=t("01:10"), observed=None)],
        ),
        state="refuted",
        unmet=["contradicted", "contradicted", *NOT_COUNTED],
    )
    yield vector(
        "contradiction-on-second-mutation",
        "One write verified, the other contradicted: refuted.",
        ["rule6", "coverage"],
        claim=claim(
            [mutation("m1"), mutation("m2", "accounts/9", t("00:30"))],
            [readback(["m1"]), readback(["m2"], target="accounts/9", observed=OTHER_ZIP)],
        ),
        state="refuted",
        unmet=["contradicted", "mutation_uncovered"],
    )
    yield vector(
        "task-level-contradiction-refutes",
        "A qualifying task-level contradiction refutes.",
        ["rule6", "task-level"],
        claim=claim(
            [mutation(target="src/billing.py", kind="file_write")],
            [run_tests(), run_tests([], t("01:10"), observed=FAILING)],
        ),
        state="refuted",
        unmet=["contradicted"],
    )


def _document() -> Iterator[tuple[str, dict[str, Json]]]:
    yield vector(
        "embedded-verdict-is-ignored",
        "A claim that calls itself verified but has no evidence is unverified.",
        ["rule4", "recomputed"],
        claim=changed(
            claim([mutation()]),
            ["verdict"],
            {"state": "verified", "unmet": [], "reason": None, "decided_at": AT},
        ),
        state="unverified",
        unmet=["mutation_uncovered", "no_evidence"],
    )
    yield vector(
        "embedded-verdict-refuted-is-ignored",
        "An embedded verdict saying refuted does not change a verified claim.",
        ["recomputed"],
        claim=changed(simple(), ["verdict"], {"state": "refuted", "anything": [1, {"x": None}]}),
        state="verified",
    )
    full = simple()
    full["mutations"][0]["digest"] = "sha256:" + "ab" * 32
    full["evidence"][0].update(
        id="e1",
        subject="sha256:" + "cd" * 32,
        details={"duration_ms": 12, "baseline": OTHER_ZIP},
        attestation={
            "payloadType": "application/vnd.in-toto+json",
            "payload": "",
            "signatures": [],
        },
    )
    yield vector(
        "all-optional-members",
        "Every optional extension member (digest, id, subject, details, attestation) is accepted.",
        ["document"],
        claim=full,
        state="verified",
        findings={"e1": []},
    )
    yield vector(
        "spec-version-newer-minor",
        "An unknown minor version of major 0 is read.",
        ["document"],
        claim=changed(simple(), ["spec_version"], "0.2"),
        state="verified",
    )
    yield vector(
        "expected-nested-64-levels",
        "A free-form value nested exactly 64 levels is accepted.",
        ["document"],
        claim=claim([mutation()], [readback(expected=nested(64), observed=nested(64))]),
        state="verified",
    )
    mixed = claim(
        [
            mutation("m1", "src/billing.py", t("00:00"), "file_write"),
            mutation("m2", RECORD, t("00:10")),
            mutation("m3", "svc/billing", t("00:20"), "deploy"),
        ],
        [
            run_tests(["m1"], t("00:30"), eid="e1"),
            readback(["m2", "m1"], t("00:40"), eid="e2"),
            health(["m3"], t("00:50"), eid="e3"),
            run_tests([], t("00:55"), observed=FAILING, kind="self_attested", eid="e4"),
            readback(["m2"], "2026-08-27T17:59:00Z", observed=OTHER_ZIP, eid="e5"),
        ],
        embedded=policy("all-three", ["test_run", "state_readback", "endpoint_health"]),
    )
    reordered = copy.deepcopy(mixed)
    reordered["mutations"].reverse()
    reordered["evidence"].reverse()
    for item in reordered["evidence"]:
        item["covers"].reverse()
    reordered["policy"]["requires"].reverse()
    for slug, doc in [("order-a", mixed), ("order-b", reordered)]:
        yield vector(
            f"list-order-verified-{slug}",
            "Three writes, three check types, noise that does not count; list order is irrelevant.",
            ["order", "coverage", "policy"],
            claim=doc,
            state="verified",
            findings={"e1": [], "e2": [], "e3": [], "e4": ["self_attested"], "e5": ["premature"]},
        )
    contra = copy.deepcopy(mixed)
    contra["evidence"].append(readback(["m2"], t("01:00"), observed=OTHER_ZIP, eid="e6"))
    contra_reordered = copy.deepcopy(contra)
    contra_reordered["mutations"].reverse()
    contra_reordered["evidence"].reverse()
    for slug, doc in [("order-a", contra), ("order-b", contra_reordered)]:
        yield vector(
            f"list-order-refuted-{slug}",
            "The same claim with one late qualifying contradiction is refuted in any order.",
            ["order", "rule6"],
            claim=doc,
            state="refuted",
            unmet=["contradicted"],
        )


def _invalid(
    slug: str, description: str, path: str, *, schema: bool = True, **source: Any
) -> tuple[str, dict[str, Json]]:
    return vector(
        slug,
        description,
        ["invalid"],
        state="invalid",
        error_path=path,
        schema_can_express=schema,
        **source,
    )


def _invalid_json() -> Iterator[tuple[str, dict[str, Json]]]:
    text = json.dumps(simple(), indent=1)
    yield _invalid(
        "not-json-truncated",
        "Truncated JSON is invalid.",
        "",
        claim_text=text[: len(text) // 2],
        schema=False,
    )
    yield _invalid(
        "not-json-prose",
        "Prose is not a claim.",
        "",
        claim_text="Done! All tests pass.",
        schema=False,
    )
    yield _invalid(
        "empty-document", "An empty document is invalid.", "", claim_text="", schema=False
    )
    yield _invalid(
        "trailing-data",
        "Data after the JSON value is invalid.",
        "",
        claim_text=text + "\n{}",
        schema=False,
    )
    for slug, root in [
        ("root-array", "[]"),
        ("root-string", '"verified"'),
        ("root-null", "null"),
        ("root-number", "42"),
        ("root-true", "true"),
        ("root-array-of-claim", "[" + text + "]"),
    ]:
        yield _invalid(slug, f"A non-object root ({slug[5:]}) is invalid.", "", claim_text=root)
    yield _invalid(
        "duplicate-key-top-level",
        "A member named twice is invalid JSON for a claim.",
        "",
        claim_text=text[:-1].rstrip() + ',\n "evidence": []\n}',
        schema=False,
    )
    yield _invalid(
        "duplicate-key-in-free-form-value",
        "Duplicate keys are rejected inside free-form values too.",
        "",
        claim_text=raw_text(
            claim([mutation()], [readback(observed=RAW)]),
            '{"billing_zip": "10001", "billing_zip": "94107"}',
        ),
        schema=False,
    )
    for slug, raw in [
        ("nan", "NaN"),
        ("infinity", "Infinity"),
        ("negative-infinity", "-Infinity"),
        ("number-overflowing-to-infinity", "1e999"),
    ]:
        yield _invalid(
            f"number-{slug}" if not slug.startswith("number") else slug,
            f"{raw} is not a JSON number (or not a finite one).",
            "",
            claim_text=raw_text(claim([mutation()], [readback(observed={"n": RAW})]), raw),
            schema=False,
        )
    valid = json.dumps(simple()).encode("utf-8")
    for slug, bad, what in [
        ("invalid-utf8-byte", b"\xff", "a 0xFF byte"),
        ("invalid-utf8-overlong", b"\xc0\xaf", "an overlong encoding"),
        ("invalid-utf8-surrogate", b"\xed\xa0\x80", "an encoded surrogate"),
        ("invalid-utf8-truncated-sequence", b"\xe2\x82", "a truncated multi-byte sequence"),
    ]:
        yield _invalid(
            slug,
            f"A document containing {what} is not UTF-8.",
            "",
            claim_bytes=valid.replace(b"Done.", b"Done" + bad),
            schema=False,
        )
    yield _invalid(
        "utf16-document",
        "A UTF-16 document is not UTF-8 JSON.",
        "",
        claim_bytes=json.dumps(simple()).encode("utf-16-le"),
        schema=False,
    )


def _invalid_structure() -> Iterator[tuple[str, dict[str, Json]]]:
    base = changed(simple(), ["policy"], policy("p"))
    missing: list[tuple[str, list[str | int]]] = [
        ("spec_version", ["spec_version"]),
        ("task", ["task"]),
        ("task.id", ["task", "id"]),
        ("claimed_outcome", ["claimed_outcome"]),
        ("mutations", ["mutations"]),
        ("evidence", ["evidence"]),
        ("mutations[0].id", ["mutations", 0, "id"]),
        ("mutations[0].kind", ["mutations", 0, "kind"]),
        ("mutations[0].target", ["mutations", 0, "target"]),
        ("mutations[0].at", ["mutations", 0, "at"]),
        ("evidence[0].check_type", ["evidence", 0, "check_type"]),
        ("evidence[0].target", ["evidence", 0, "target"]),
        ("evidence[0].at", ["evidence", 0, "at"]),
        ("evidence[0].covers", ["evidence", 0, "covers"]),
        ("evidence[0].verifier", ["evidence", 0, "verifier"]),
        ("evidence[0].verifier.id", ["evidence", 0, "verifier", "id"]),
        ("evidence[0].verifier.kind", ["evidence", 0, "verifier", "kind"]),
        ("policy.id", ["policy", "id"]),
        ("policy.requires", ["policy", "requires"]),
        ("policy.max_age_s", ["policy", "max_age_s"]),
    ]
    for path, parts in missing:
        slug = "missing-" + path.replace("[0]", "").replace(".", "-").replace("_", "-")
        yield _invalid(
            slug, f"The required member {path} is missing.", path, claim=changed(base, parts)
        )
    wrong: list[tuple[str, str, str, list[str | int], Json]] = [
        (
            "spec-version-major-1",
            "Major version 1 is unknown.",
            "spec_version",
            ["spec_version"],
            "1.0",
        ),
        (
            "spec-version-non-ascii-digit",
            "Version numbers are ASCII digits: 0.\u00b2 (superscript two) is not a version.",
            "spec_version",
            ["spec_version"],
            "0.\u00b2",
        ),
        (
            "spec-version-number",
            "spec_version must be a string.",
            "spec_version",
            ["spec_version"],
            0.1,
        ),
        ("task-not-object", "task must be an object.", "task", ["task"], "task-4471"),
        (
            "task-id-number",
            "task.id must be a string, not a number.",
            "task.id",
            ["task", "id"],
            4471,
        ),
        (
            "claimed-outcome-null",
            "claimed_outcome must be a string, not null.",
            "claimed_outcome",
            ["claimed_outcome"],
            None,
        ),
        (
            "mutations-object",
            "mutations must be an array.",
            "mutations",
            ["mutations"],
            {"m1": mutation()},
        ),
        (
            "mutation-id-number",
            "A mutation id must be a string.",
            "mutations[0].id",
            ["mutations", 0, "id"],
            1,
        ),
        (
            "mutation-at-epoch-number",
            "A timestamp must be an RFC 3339 string, not a number.",
            "mutations[0].at",
            ["mutations", 0, "at"],
            1787853600,
        ),
        (
            "evidence-item-not-object",
            "An evidence item must be an object.",
            "evidence[0]",
            ["evidence", 0],
            "readback ok",
        ),
        (
            "covers-string",
            "covers must be an array, not a string.",
            "evidence[0].covers",
            ["evidence", 0, "covers"],
            "m1",
        ),
        (
            "covers-item-number",
            "covers must hold mutation ids (strings).",
            "evidence[0].covers[0]",
            ["evidence", 0, "covers", 0],
            1,
        ),
        (
            "verifier-string",
            "verifier must be an object.",
            "evidence[0].verifier",
            ["evidence", 0, "verifier"],
            "independent",
        ),
        (
            "verifier-kind-bool",
            "verifier.kind must be a string.",
            "evidence[0].verifier.kind",
            ["evidence", 0, "verifier", "kind"],
            True,
        ),
        (
            "max-age-bool",
            "A boolean is not a number: max_age_s true is invalid.",
            "policy.max_age_s",
            ["policy", "max_age_s"],
            True,
        ),
        (
            "max-age-string",
            "max_age_s must be a number, not a string.",
            "policy.max_age_s",
            ["policy", "max_age_s"],
            "300",
        ),
        (
            "requires-string",
            "requires must be an array.",
            "policy.requires",
            ["policy", "requires"],
            "state_readback",
        ),
        (
            "requires-item-number",
            "requires must hold check type names.",
            "policy.requires[0]",
            ["policy", "requires"],
            [1],
        ),
        (
            "policy-not-object",
            "An embedded policy must be an object.",
            "policy",
            ["policy"],
            "default",
        ),
        (
            "verdict-string",
            "An embedded verdict must be an object.",
            "verdict",
            ["verdict"],
            "verified",
        ),
        (
            "unknown-member-top-level",
            "An unknown top-level member (a score) is rejected.",
            "confidence",
            ["confidence"],
            0.93,
        ),
        (
            "unknown-member-evidence",
            "A mistyped evidence member (observed) is rejected.",
            "evidence[0].observed",
            ["evidence", 0, "observed"],
            ZIP,
        ),
        (
            "unknown-member-verifier",
            "An unknown verifier member is rejected.",
            "evidence[0].verifier.trusted",
            ["evidence", 0, "verifier", "trusted"],
            True,
        ),
        (
            "unknown-member-policy",
            "An unknown policy member must not silently lower the bar.",
            "policy.min_evidence",
            ["policy", "min_evidence"],
            0,
        ),
        (
            "unknown-member-task",
            "An unknown task member is rejected.",
            "task.owner",
            ["task", "owner"],
            "agent",
        ),
        (
            "unknown-member-mutation",
            "An unknown mutation member is rejected.",
            "mutations[0].when",
            ["mutations", 0, "when"],
            t("00:00"),
        ),
        (
            "unknown-verifier-kind",
            "verifier.kind must be independent or self_attested.",
            "evidence[0].verifier.kind",
            ["evidence", 0, "verifier", "kind"],
            "human",
        ),
        (
            "verifier-kind-wrong-case",
            "verifier.kind is case-sensitive.",
            "evidence[0].verifier.kind",
            ["evidence", 0, "verifier", "kind"],
            "Independent",
        ),
        ("max-age-zero", "max_age_s 0 is invalid.", "policy.max_age_s", ["policy", "max_age_s"], 0),
        (
            "max-age-negative",
            "A negative max_age_s is invalid.",
            "policy.max_age_s",
            ["policy", "max_age_s"],
            -300,
        ),
        (
            "max-age-negative-fraction",
            "max_age_s -0.5 is invalid.",
            "policy.max_age_s",
            ["policy", "max_age_s"],
            -0.5,
        ),
    ]
    for slug, description, path, parts, value in wrong:
        yield _invalid(slug, description, path, claim=changed(base, parts, value))


def _invalid_time() -> Iterator[tuple[str, dict[str, Json]]]:
    for slug, description, where, value, schema in [
        (
            "naive-mutation-time",
            "A timestamp without a UTC offset is invalid.",
            "mutations[0].at",
            "2026-08-27T18:00:00",
            True,
        ),
        (
            "naive-evidence-time",
            "A naive evidence timestamp is invalid.",
            "evidence[0].at",
            "2026-08-27T18:01:00.250",
            True,
        ),
        ("date-only", "A date without a time is invalid.", "evidence[0].at", "2026-08-27", True),
        ("unparseable-time", "Words are not a timestamp.", "evidence[0].at", "yesterday", True),
        (
            "offset-without-colon",
            "RFC 3339 offsets need a colon (+02:00, not +0200).",
            "evidence[0].at",
            "2026-08-27T20:01:00+0200",
            True,
        ),
        (
            "empty-fraction",
            "A decimal point without digits is invalid.",
            "evidence[0].at",
            "2026-08-27T18:01:00.Z",
            True,
        ),
        (
            "impossible-february-30",
            "30 February does not exist.",
            "mutations[0].at",
            "2026-02-30T18:00:00Z",
            False,
        ),
        (
            "impossible-february-29-common-year",
            "2026 is not a leap year.",
            "mutations[0].at",
            "2026-02-29T18:00:00Z",
            False,
        ),
        (
            "impossible-month-13",
            "There is no month 13.",
            "mutations[0].at",
            "2026-13-01T18:00:00Z",
            False,
        ),
        ("impossible-hour-24", "Hours run 00-23.", "evidence[0].at", "2026-08-27T24:00:00Z", False),
        (
            "impossible-minute-60",
            "Minutes run 00-59.",
            "evidence[0].at",
            "2026-08-27T18:60:00Z",
            False,
        ),
        (
            "impossible-offset-hour",
            "An offset of +24:00 is not a UTC offset.",
            "evidence[0].at",
            "2026-08-27T18:01:00+24:00",
            False,
        ),
        (
            "non-ascii-digits",
            "RFC 3339 digits are ASCII: full-width digits are invalid.",
            "evidence[0].at",
            "\uff12\uff10\uff12\uff16-08-27T18:01:00Z",
            True,
        ),
    ]:
        field = "mutations" if where.startswith("mutations") else "evidence"
        yield _invalid(
            slug,
            description,
            where,
            schema=schema,
            claim=changed(simple(), [field, 0, "at"], value),
        )


def _invalid_semantic() -> Iterator[tuple[str, dict[str, Json]]]:
    # The JSON Schema cannot express uniqueness of ids, references or depth limits.
    two = claim(
        [mutation("m1"), mutation("m1", "accounts/9", t("00:30"))],
        [readback(["m1"])],
    )
    yield _invalid(
        "duplicate-mutation-id",
        "Two mutations with the same id are invalid.",
        "mutations[1].id",
        claim=two,
        schema=False,
    )
    yield _invalid(
        "duplicate-evidence-id",
        "Two evidence items with the same id are invalid.",
        "evidence[1].id",
        schema=False,
        claim=claim([mutation()], [readback(eid="e1"), readback(at=t("01:10"), eid="e1")]),
    )
    yield _invalid(
        "covers-unknown-mutation",
        "covers naming no mutation of the claim is invalid.",
        "evidence[0].covers[0]",
        schema=False,
        claim=claim([mutation()], [readback(["m9"])]),
    )
    yield _invalid(
        "covers-unknown-mutation-second",
        "The unknown id is reported where it stands.",
        "evidence[0].covers[1]",
        schema=False,
        claim=claim([mutation()], [readback(["m1", "m2"])]),
    )
    yield _invalid(
        "covers-mutation-of-empty-claim",
        "covers cannot name anything without mutations.",
        "evidence[0].covers[0]",
        schema=False,
        claim=claim([], [readback(["m1"])]),
    )
    for field, slug in [("expected", "expected"), ("observed_value", "observed")]:
        yield _invalid(
            f"{slug}-nested-65-levels",
            f"A free-form {field} nested deeper than 64 levels is invalid.",
            f"evidence[0].{field}",
            schema=False,
            claim=changed(simple(), ["evidence", 0, field], nested(65)),
        )
    yield _invalid(
        "details-nested-65-levels",
        "details nested deeper than 64 levels is invalid.",
        "evidence[0].details",
        schema=False,
        claim=changed(simple(), ["evidence", 0, "details"], nested(65)),
    )
    yield _invalid(
        "verdict-nested-65-levels",
        "An embedded verdict nested too deep is invalid.",
        "verdict",
        schema=False,
        claim=changed(simple(), ["verdict"], nested(65)),
    )
    yield _invalid(
        "array-nested-65-levels",
        "Arrays count as nesting levels too.",
        "evidence[0].observed_value",
        schema=False,
        claim=changed(simple(), ["evidence", 0, "observed_value"], json.loads("[" * 65 + "]" * 65)),
    )


def _invalid_policy() -> Iterator[tuple[str, dict[str, Json]]]:
    def bad(slug: str, description: str, path: str, *, schema: bool = True, **src: Any) -> Any:
        name, body = vector(
            "operator-policy-" + slug,
            description,
            ["invalid", "policy"],
            claim=simple(),
            state="invalid",
            error_path=path,
            schema_can_express=schema,
            **src,
        )
        return name, body

    yield bad(
        "not-json",
        "An operator policy that is not JSON is invalid.",
        "",
        policy_text="requires: [test_run]",
        schema=False,
    )
    yield bad(
        "duplicate-key",
        "A policy naming max_age_s twice is invalid.",
        "",
        policy_text='{"id": "ops", "requires": [], "max_age_s": 300, "max_age_s": 0}',
        schema=False,
    )
    yield bad("root-array", "An operator policy must be an object.", "", operator=["test_run"])
    yield bad(
        "max-age-zero",
        "An operator policy with max_age_s 0 is invalid.",
        "max_age_s",
        operator=policy("ops", max_age_s=0),
    )
    yield bad(
        "max-age-bool",
        "A boolean max_age_s in an operator policy is invalid.",
        "max_age_s",
        operator={"id": "ops", "requires": [], "max_age_s": True},
    )
    yield bad(
        "missing-id",
        "An operator policy needs an id.",
        "id",
        operator={"requires": [], "max_age_s": 300},
    )
    yield bad(
        "unknown-member",
        "An unknown operator policy member is rejected.",
        "trusted",
        operator={"id": "ops", "requires": [], "max_age_s": 300, "trusted": []},
    )
    yield bad(
        "requires-item-number",
        "requires must hold check type names.",
        "requires[0]",
        operator={"id": "ops", "requires": [7], "max_age_s": 300},
    )


def with_members(base: Json, **members: Json) -> Json:
    """A policy document with extra members (covered_by, min_tests, allow_test_changes)."""
    return {**base, **members}


CODE = mutation("m1", "src/billing.py", kind="file_write")
EXIT_ONLY_GREEN = {"exit_code": 0}
"""What a build (a command without a test report) records, and what the observer expects of
every run: an exit code."""


def _coverage_by_kind() -> Iterator[tuple[str, dict[str, Json]]]:
    both = [CODE, mutation("m2", RECORD, t("00:10"))]
    yield vector(
        "kind-readback-does-not-cover-file-write",
        "A state_readback speaks only for state writes: naming a file_write does not cover it.",
        ["kind", "rule3", "coverage"],
        claim=claim([CODE], [readback(["m1"], eid="e1")]),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": []},
    )
    yield vector(
        "kind-one-readback-for-code-and-state",
        "One readback naming a code edit and a record write covers the record write only.",
        ["kind", "rule3", "coverage"],
        claim=claim(both, [readback(["m1", "m2"], eid="e1")]),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": []},
    )
    yield vector(
        "kind-test-run-and-readback-each-cover-their-kind",
        "The honest control: a test run covers the code edit, a readback the record write.",
        ["kind", "rule3", "coverage"],
        claim=claim(both, [run_tests(["m1"], eid="e1"), readback(["m2"], eid="e2")]),
        state="verified",
        findings={"e1": [], "e2": []},
    )
    deploy = mutation("m1", "svc/billing", kind="deploy")
    yield vector(
        "kind-test-run-does-not-cover-deploy",
        "A green test run says nothing about what a deploy serves.",
        ["kind", "rule3"],
        claim=claim([deploy], [run_tests(["m1"], eid="e1")]),
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": []},
    )
    yield vector(
        "covered-by-adds-a-check-type-to-a-kind",
        "covered_by lets test runs cover state writes too (integration tests reading the record).",
        ["kind", "policy"],
        claim=claim([mutation()], [run_tests(["m1"], eid="e1")]),
        operator=with_members(policy(), covered_by={"state_write": ["state_readback", "test_run"]}),
        state="verified",
        findings={"e1": []},
    )
    static_site = with_members(policy(), covered_by={"file_write": ["endpoint_health"]})
    yield vector(
        "covered-by-replaces-the-builtin-entry",
        "covered_by file_write: [endpoint_health] replaces the built-in entry: a test run no "
        "longer covers a file write.",
        ["kind", "policy"],
        claim=claim([CODE], [run_tests(["m1"], eid="e1")]),
        operator=static_site,
        state="unverified",
        unmet=["mutation_uncovered"],
        findings={"e1": []},
    )
    yield vector(
        "covered-by-replacement-covers",
        "Under covered_by file_write: [endpoint_health], a live check of the page covers the edit.",
        ["kind", "policy"],
        claim=claim([CODE], [health(["m1"], eid="e1")]),
        operator=static_site,
        state="verified",
        findings={"e1": []},
    )
    yield vector(
        "covered-by-other-kinds-keep-the-builtin-entry",
        "A covered_by entry for deploy leaves state_write to the built-in map.",
        ["kind", "policy"],
        claim=claim([mutation()], [readback(eid="e1")]),
        operator=with_members(policy(), covered_by={"deploy": ["endpoint_health", "test_run"]}),
        state="verified",
    )
    dns = mutation("m1", "dns/billing.example", kind="dns_change")
    yield vector(
        "covered-by-names-a-kind-the-builtin-lacks",
        "covered_by can map a kind the built-in map does not know (dns_change).",
        ["kind", "policy"],
        claim=claim([dns], [health(["m1"], eid="e1")]),
        operator=with_members(policy(), covered_by={"dns_change": ["endpoint_health"]}),
        state="verified",
        findings={"e1": []},
    )
    yield vector(
        "unmapped-kind-cannot-be-covered",
        "A kind with no entry (dns_change under the built-in map) is covered by nothing, named "
        "with its own code.",
        ["kind", "rule3"],
        claim=claim([dns], [health(["m1"], eid="e1")]),
        state="unverified",
        unmet=["mutation_kind_unmapped"],
        findings={"e1": []},
    )
    typo = mutation("m1", "src/billing.py", kind="file-write")
    yield vector(
        "unmapped-kind-typo-fails-closed",
        "A misspelt kind (file-write) fails closed: the passing test run cannot cover it.",
        ["kind", "rule3"],
        claim=claim([typo], [run_tests(["m1"], eid="e1")]),
        state="unverified",
        unmet=["mutation_kind_unmapped"],
        findings={"e1": []},
    )
    yield vector(
        "unmapped-kind-without-evidence",
        "An unmapped kind is named even when there is no evidence at all.",
        ["kind", "rule4"],
        claim=claim([typo]),
        state="unverified",
        unmet=["mutation_kind_unmapped", "no_evidence"],
    )
    yield vector(
        "kind-mismatched-contradiction-still-refutes",
        "Kind decides coverage only: a qualifying failing test run naming a state write refutes.",
        ["kind", "rule6"],
        claim=claim([mutation()], [run_tests(["m1"], observed=FAILING, eid="e1")]),
        state="refuted",
        unmet=["contradicted", *NOT_COUNTED],
        findings={"e1": []},
    )
    yield vector(
        "unmapped-kind-contradiction-still-refutes",
        "A qualifying failing test run naming a mutation of an unmapped kind refutes.",
        ["kind", "rule6"],
        claim=claim([typo], [run_tests(["m1"], observed=FAILING, eid="e1")]),
        state="refuted",
        unmet=["contradicted", "mutation_kind_unmapped", "no_supporting_evidence"],
        findings={"e1": []},
    )


def _min_tests() -> Iterator[tuple[str, dict[str, Json]]]:
    def run(observed: Json, min_tests: Json = _ABSENT, **result: Any) -> Any:
        operator = _ABSENT if min_tests is _ABSENT else with_members(policy(), min_tests=min_tests)
        return {
            "claim": claim(
                [CODE], [run_tests(["m1"], expected=EXIT_ONLY_GREEN, observed=observed, eid="e1")]
            ),
            "operator": operator,
            **result,
        }

    blind = {
        "state": "unverified",
        "unmet": NOT_COUNTED,
        "findings": {"e1": ["not_discriminating"]},
    }
    yield vector(
        "min-tests-default-exit-code-only",
        "By default (min_tests 1) a run that reports only an exit code is a build, not a test run.",
        ["min-tests", "qualify-7"],
        **run(EXIT_ONLY_GREEN, **blind),
    )
    yield vector(
        "min-tests-default-exit-code-only-failure-does-not-refute",
        "An exit-code-only run is not discriminating by default, so its failure does not refute.",
        ["min-tests", "qualify-7", "rule6"],
        **run({"exit_code": 1}, **blind),
    )
    yield vector(
        "min-tests-zero-allows-a-build-check",
        "min_tests 0: a green exit-code-only check (a build) covers the edit.",
        ["min-tests", "policy"],
        **run(EXIT_ONLY_GREEN, 0, state="verified", findings={"e1": []}),
    )
    yield vector(
        "min-tests-zero-failed-build-refutes",
        "min_tests 0: a failed build is a qualifying contradiction.",
        ["min-tests", "rule6"],
        **run({"exit_code": 2}, 0, state="refuted", unmet=["contradicted", *NOT_COUNTED]),
    )
    yield vector(
        "min-tests-default-one-test-executed",
        "By default one executed test is enough.",
        ["min-tests"],
        **run(
            {"exit_code": 0, "passed": 1, "failed": 0, "errors": 0, "skipped": 0},
            state="verified",
            findings={"e1": []},
        ),
    )
    yield vector(
        "min-tests-five-four-executed",
        "min_tests 5: four passed (skipped tests do not execute) is not discriminating.",
        ["min-tests", "qualify-7"],
        **run({"exit_code": 0, "passed": 4, "failed": 0, "errors": 0, "skipped": 3}, 5, **blind),
    )
    yield vector(
        "min-tests-five-five-executed",
        "min_tests 5: five passed tests qualify.",
        ["min-tests"],
        **run(
            {"exit_code": 0, "passed": 5, "failed": 0, "errors": 0},
            5,
            state="verified",
            findings={"e1": []},
        ),
    )
    yield vector(
        "min-tests-five-counts-failed-and-errors",
        "min_tests 5: passed + failed + errors is what executed; 2 + 2 + 1 qualifies and refutes.",
        ["min-tests", "rule6"],
        **run(
            {"exit_code": 1, "passed": 2, "failed": 2, "errors": 1},
            5,
            state="refuted",
            unmet=["contradicted", *NOT_COUNTED],
            findings={"e1": []},
        ),
    )
    yield vector(
        "min-tests-five-exit-code-only",
        "min_tests 5: an exit-code-only run reports no count at all.",
        ["min-tests", "qualify-7"],
        **run(EXIT_ONLY_GREEN, 5, **blind),
    )
    yield vector(
        "min-tests-count-not-a-number",
        'A count that is not a number ("42") is no count: not discriminating.',
        ["min-tests", "qualify-7"],
        **run({"exit_code": 0, "passed": "42", "failed": 0, "errors": 0}, **blind),
    )
    yield vector(
        "min-tests-negative-count",
        "A negative count is no count: -1 failed cannot make 2 passed look like one execution.",
        ["min-tests", "qualify-7"],
        **run({"exit_code": 0, "passed": 2, "failed": -1, "errors": 0}, 2, **blind),
    )
    yield vector(
        "min-tests-written-as-a-whole-fraction",
        "min_tests 5.0 is the number 5 (JSON has one number type).",
        ["min-tests", "policy"],
        **run(
            {"exit_code": 0, "passed": 5, "failed": 0, "errors": 0},
            5.0,
            state="verified",
            findings={"e1": []},
        ),
    )


def _test_changes() -> Iterator[tuple[str, dict[str, Json]]]:
    def changed_run(record: Json, observed: Json = PASSING) -> Json:
        item = run_tests(["m1"], observed=observed, eid="e1")
        item["details"] = {"test_config_changed": record}
        return claim([CODE], [item])

    not_counted: dict[str, Any] = {
        "unmet": NOT_COUNTED,
        "findings": {"e1": ["test_config_changed"]},
    }
    yield vector(
        "test-config-changed-does-not-count",
        "The observer recorded a changed conftest.py: by default the run does not count.",
        ["test-changes", "qualify-7"],
        claim=changed_run(["conftest.py"]),
        state="unverified",
        **not_counted,
    )
    yield vector(
        "test-config-changed-allowed-by-policy",
        "allow_test_changes true: the same run counts.",
        ["test-changes", "policy"],
        claim=changed_run(["conftest.py"]),
        operator=with_members(policy(), allow_test_changes=True),
        state="verified",
        findings={"e1": []},
    )
    yield vector(
        "test-config-changed-explicitly-disallowed",
        "allow_test_changes false (the default, written out): the run does not count.",
        ["test-changes", "policy"],
        claim=changed_run(["tests/test_calc.py", "pytest.ini"]),
        operator=with_members(policy(), allow_test_changes=False),
        state="unverified",
        **not_counted,
    )
    yield vector(
        "test-config-changed-empty-list-counts",
        "An empty list records that no protected test path changed.",
        ["test-changes"],
        claim=changed_run([]),
        state="verified",
        findings={"e1": []},
    )
    yield vector(
        "test-config-changed-not-a-list-fails-closed",
        "A record that is not a list of paths does not count either.",
        ["test-changes"],
        claim=changed_run("conftest.py"),
        state="unverified",
        **not_counted,
    )
    yield vector(
        "test-config-changed-failing-run-does-not-refute",
        "A failing run decided with changed tests does not count, so it cannot refute.",
        ["test-changes", "rule6"],
        claim=changed_run(["conftest.py"], FAILING),
        state="unverified",
        **not_counted,
    )
    item = readback(eid="e1", details={"test_config_changed": ["conftest.py"]})
    yield vector(
        "test-config-changed-read-only-for-test-runs",
        "details.test_config_changed is read for test_run evidence only.",
        ["test-changes"],
        claim=claim([mutation()], [item]),
        state="verified",
        findings={"e1": []},
    )


def _invalid_knobs() -> Iterator[tuple[str, dict[str, Json]]]:
    def bad(slug: str, description: str, path: str, **members: Json) -> Any:
        return vector(
            "operator-policy-" + slug,
            description,
            ["invalid", "policy"],
            claim=simple(),
            operator=with_members(policy(), **members),
            state="invalid",
            error_path=path,
        )

    knobs: list[tuple[str, str, str, dict[str, Json]]] = [
        (
            "covered-by-unknown-check-type",
            "covered_by may name only known check types: test-run is a typo.",
            "covered_by.file_write[0]",
            {"covered_by": {"file_write": ["test-run"]}},
        ),
        (
            "covered-by-not-an-object",
            "covered_by maps kinds to check types.",
            "covered_by",
            {"covered_by": ["test_run"]},
        ),
        (
            "covered-by-entry-not-an-array",
            "A covered_by entry is an array of check types.",
            "covered_by.file_write",
            {"covered_by": {"file_write": "test_run"}},
        ),
        (
            "covered-by-entry-empty",
            "A covered_by entry names at least one check type.",
            "covered_by.file_write",
            {"covered_by": {"file_write": []}},
        ),
        (
            "covered-by-empty-kind",
            "A mutation kind is never empty, so neither is a covered_by key.",
            "covered_by",
            {"covered_by": {"": ["test_run"]}},
        ),
        ("min-tests-negative", "min_tests is 0 or more.", "min_tests", {"min_tests": -1}),
        ("min-tests-bool", "A boolean is not a number.", "min_tests", {"min_tests": True}),
        ("min-tests-fraction", "min_tests is a whole number.", "min_tests", {"min_tests": 1.5}),
        ("min-tests-string", "min_tests is a number.", "min_tests", {"min_tests": "1"}),
        (
            "min-tests-absurd",
            "min_tests above 1,000,000,000 is beyond any run.",
            "min_tests",
            {"min_tests": 1e10},
        ),
        (
            "allow-test-changes-string",
            "allow_test_changes is true or false.",
            "allow_test_changes",
            {"allow_test_changes": "false"},
        ),
        (
            "allow-test-changes-number",
            "1 is not true.",
            "allow_test_changes",
            {"allow_test_changes": 1},
        ),
        (
            "max-age-beyond-ten-years",
            "max_age_s 1e12 is beyond the verifier's range (at most 315,576,000 s, 10 years).",
            "max_age_s",
            {"max_age_s": 1e12},
        ),
        (
            "max-age-just-beyond-ten-years",
            "max_age_s 315576000.5 is half a second over the bound.",
            "max_age_s",
            {"max_age_s": 315576000.5},
        ),
    ]
    for slug, description, path, members in knobs:
        yield bad(slug, description, path, **members)
    yield _invalid(
        "embedded-policy-covered-by-unknown-check-type",
        "An embedded policy's covered_by is checked as an operator's is.",
        "policy.covered_by.deploy[1]",
        claim=changed(
            simple(),
            ["policy"],
            with_members(policy(), covered_by={"deploy": ["endpoint_health", "smoke_test"]}),
        ),
    )
    yield _invalid(
        "embedded-policy-max-age-beyond-ten-years",
        "An embedded max_age_s of 1e12 is invalid input, not an overflow.",
        "policy.max_age_s",
        claim=changed(simple(), ["policy"], policy(max_age_s=1e12)),
    )
    early = claim(
        [mutation(at="0001-01-01T00:00:00Z")], [readback(at="0001-01-01T00:01:00Z", eid="e1")]
    )
    yield vector(
        "max-age-ten-years-at-the-start-of-the-calendar",
        "max_age_s at its bound, decided in year 1: ten years back is before any date, and the "
        "readback counts.",
        ["rule5", "policy", "time"],
        claim=early,
        operator=policy(max_age_s=315576000),
        at="0001-01-01T00:02:00Z",
        state="verified",
        findings={"e1": []},
    )


UI_ACTION = mutation("m1", "settings/display-name", kind="ui_action")
LABEL = {"address": "/settings", "text": "Bob"}
LABEL_SEEN = {"address": "/settings", "count": 1, "hidden": 0, "text": "Bob", "visible": True}


def dom(
    expected: Json = LABEL,
    observed: Json = LABEL_SEEN,
    locator: str | None = "css=#label",
    **details: Json,
) -> dict[str, Json]:
    """A dom_assertion item as ``claim observe dom`` records it (details abridged)."""
    recorded: dict[str, Json] = {"requested_path": "/settings", **details}
    if locator is not None:
        recorded["locator"] = locator
    return evidence(
        "dom_assertion",
        "https://app.example/settings css=#label",
        t("01:00"),
        ["m1"],
        expected,
        observed,
        eid="e1",
        details=recorded,
    )


def _dom_assertion() -> Iterator[tuple[str, dict[str, Json]]]:
    def judged(slug: str, description: str, item: Json, state: str, *tags: str, **more: Any) -> Any:
        return vector(
            "dom-" + slug, description, ["dom", *tags], claim=claim([UI_ACTION], [item]),
            state=state, **more,
        )  # fmt: skip

    blind: dict[str, Any] = {"unmet": NOT_COUNTED, "findings": {"e1": ["not_discriminating"]}}
    included = {"address": "/settings", "includes": {"Saved": True}}
    included_seen = {
        "address": "/settings",
        "count": 1,
        "hidden": 0,
        "text": "Saved",
        "includes": {"Saved": True},
        "visible": True,
    }
    yield judged(
        "label-verifies",
        "A ui_action covered by a page whose located element shows the new value.",
        dom(), "verified", "kind", findings={"e1": []},
    )  # fmt: skip
    yield judged(
        "login-page-refutes",
        "The page went to the login page: its address contradicts the expectation.",
        dom(observed={"address": "/login", "count": 0}), "refuted", "rule6",
        unmet=["contradicted", *NOT_COUNTED],
    )  # fmt: skip
    yield judged(
        "old-value-refutes",
        "The located element still shows the old value.",
        dom(observed={**LABEL_SEEN, "text": "Alice"}), "refuted", "rule6",
        unmet=["contradicted", *NOT_COUNTED],
    )  # fmt: skip
    for locator in ("css=body", "html", ":root"):
        yield judged(
            f"whole-document-locator-{locator.replace('css=', '').strip(':')}",
            f"A locator matching the whole document ({locator}) is not discriminating.",
            dom(locator=locator), "unverified", "qualify-7", **blind,
        )  # fmt: skip
    yield judged(
        "whole-document-observed",
        "The observer found the located element to be the document: not discriminating.",
        dom(locator="css=:is(html)", whole_document=True), "unverified", "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "chained-script-engine",
        "A selector chain that slips in another engine does not count.",
        dom(locator="css=#label >> xpath=.."), "unverified", "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "no-locator-recorded",
        "An item whose details name no locator is not discriminating.",
        dom(locator=None), "unverified", "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "script-locator",
        "A locator that is not a css=, text= or role= selector does not count.",
        dom(locator="xpath=//span"), "unverified", "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "baseline-already-met",
        "The page showed the value before the change (baseline): not discriminating.",
        dom(baseline=LABEL_SEEN), "unverified", "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "must-include-in-static-template",
        "A must-include of a string the served page already holds is not discriminating.",
        dom(included, included_seen, template_includes={"Saved": True}), "unverified",
        "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "must-include-not-in-template",
        "A must-include of a string only the page's state produced counts.",
        dom(included, included_seen, template_includes={"Saved": False}), "verified",
        findings={"e1": []},
    )  # fmt: skip
    yield judged(
        "must-include-template-unread",
        "A must-include with no reading of the template does not count.",
        dom(included, included_seen), "unverified", "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "address-only-where-sent",
        "Only the address of the page it was sent to: holds without any change.",
        dom({"address": "/settings"}, {"address": "/settings", "count": 1}), "unverified",
        "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "no-element-without-baseline",
        "Expecting no element without a baseline: a wrong locator shows that too.",
        dom({"address": "/settings", "count": 0}, {"address": "/settings", "count": 0,
                                                   "hidden": 0}),
        "unverified", "qualify-7", **blind,
    )  # fmt: skip
    yield vector(
        "dom-experimental-checks-off",
        "experimental_checks false: a dom_assertion never counts.",
        ["dom", "policy"],
        claim=claim([UI_ACTION], [dom()]),
        operator=with_members(policy(), experimental_checks=False),
        state="unverified",
        unmet=NOT_COUNTED,
        findings={"e1": ["experimental_off"]},
    )
    yield vector(
        "dom-experimental-checks-on",
        "experimental_checks true (the default, written out): it counts.",
        ["dom", "policy"],
        claim=claim([UI_ACTION], [dom()]),
        operator=with_members(policy(), experimental_checks=True),
        state="verified",
        findings={"e1": []},
    )
    yield vector(
        "dom-ui-action-covered-by-readback",
        "A ui_action may be covered by a readback of the record it changed.",
        ["dom", "kind"],
        claim=claim([UI_ACTION], [readback(target="settings/display-name")]),
        state="verified",
    )
    yield vector(
        "dom-does-not-cover-state-write",
        "A page does not cover a state_write: only a readback does.",
        ["dom", "kind"],
        claim=claim([mutation()], [dom()]),
        state="unverified",
        unmet=["mutation_uncovered"],
    )
    yield vector(
        "operator-policy-experimental-checks-string",
        "experimental_checks is true or false.",
        ["invalid", "policy"],
        claim=simple(),
        operator=with_members(policy(), experimental_checks="false"),
        state="invalid",
        error_path="experimental_checks",
    )


def _gate_rules() -> Iterator[tuple[str, dict[str, Json]]]:
    """What a gate decides on (nothing changed, its configuration changed, a work tree it could
    not read), stated in the policy and the document so that every verifier reaches it."""
    green_task = readback([], eid="e1")
    gate = with_members(policy(), require_mutations=True)
    yield vector(
        "require-mutations-empty-claim-is-unverified",
        "require_mutations: a claim with no mutation is unverified, however green its evidence.",
        ["require-mutations", "policy"],
        claim=claim([], [green_task]),
        operator=gate,
        state="unverified",
        unmet=["no_mutations"],
        findings={"e1": []},
    )
    yield vector(
        "require-mutations-off-by-default",
        "Without require_mutations (the default) the same claim verifies, as in format 0.1.",
        ["require-mutations", "task-level"],
        claim=claim([], [green_task]),
        operator=policy(),
        state="verified",
    )
    yield vector(
        "require-mutations-a-covered-change-verifies",
        "require_mutations with one covered change: verified.",
        ["require-mutations"],
        claim=simple(),
        operator=gate,
        state="verified",
    )
    yield vector(
        "require-mutations-nothing-at-all",
        "require_mutations on an empty claim with no evidence: both are named.",
        ["require-mutations", "rule4"],
        claim=claim(),
        operator=gate,
        state="unverified",
        unmet=["no_evidence", "no_mutations"],
    )
    yield vector(
        "require-mutations-embedded-policy-applies",
        "A recorded claim's embedded policy (no operator policy) requires a change: unverified.",
        ["require-mutations", "policy", "recomputed"],
        claim=claim(
            [],
            [green_task],
            embedded=gate,
            verdict={"state": "unverified", "unmet": [{"code": "no_mutations"}]},
        ),
        state="unverified",
        unmet=["no_mutations"],
    )
    yield vector(
        "require-mutations-operator-policy-replaces-embedded",
        "An operator policy without require_mutations replaces the embedded one that has it.",
        ["require-mutations", "policy"],
        claim=claim([], [green_task], embedded=gate),
        operator=policy(),
        state="verified",
    )
    settings = mutation("m2", "claim.toml", t("00:10"), kind="file_write")
    protect = with_members(policy(), protected_targets=["claim.toml"])
    yield vector(
        "protected-target-changed-is-unverified",
        "A covered change to a protected target leaves the claim unverified.",
        ["protected", "policy"],
        claim=claim([CODE, settings], [run_tests(["m1", "m2"], eid="e1")]),
        operator=protect,
        state="unverified",
        unmet=["protected_target_changed"],
        findings={"e1": []},
    )
    yield vector(
        "protected-target-unchanged-verifies",
        "The honest control: the same policy, only the code changed.",
        ["protected"],
        claim=claim([CODE], [run_tests(["m1"], eid="e1")]),
        operator=protect,
        state="verified",
    )
    yield vector(
        "protected-target-matches-exactly",
        "Targets are compared as exact strings: ./claim.toml and ops/claim.toml are not "
        "claim.toml.",
        ["protected"],
        claim=claim(
            [
                mutation("m1", "./claim.toml", kind="file_write"),
                mutation("m2", "ops/claim.toml", kind="file_write"),
            ],
            [run_tests(["m1", "m2"])],
        ),
        operator=protect,
        state="verified",
    )
    yield vector(
        "protected-target-any-kind",
        "A protected target is protected whatever the mutation's kind (a record write here).",
        ["protected"],
        claim=simple(),
        operator=with_members(policy(), protected_targets=[RECORD]),
        state="unverified",
        unmet=["protected_target_changed"],
    )
    yield vector(
        "protected-target-contradiction-still-refutes",
        "A qualifying failing run naming a protected target's change refutes.",
        ["protected", "rule6"],
        claim=claim([settings], [run_tests(["m2"], observed=FAILING, eid="e1")]),
        operator=protect,
        state="refuted",
        unmet=[
            "contradicted",
            "mutation_uncovered",
            "no_supporting_evidence",
            "protected_target_changed",
        ],
    )
    uncaptured = mutation("m1", ".", t("00:00"), kind="uncaptured")
    yield vector(
        "uncaptured-change-is-never-covered",
        "A change its producer could not capture (kind uncaptured) is covered by nothing.",
        ["uncaptured", "kind"],
        claim=claim([uncaptured], [run_tests(["m1"], eid="e1")]),
        state="unverified",
        unmet=["mutation_kind_unmapped"],
        findings={"e1": []},
    )
    yield vector(
        "uncaptured-change-as-the-gate-records-it",
        "A gate that could not read the work tree records one uncaptured change and observes "
        "nothing: unverified under its policy.",
        ["uncaptured", "require-mutations", "rule4"],
        claim=claim([uncaptured]),
        operator=with_members(policy(requires=["test_run"]), require_mutations=True),
        state="unverified",
        unmet=["mutation_kind_unmapped", "no_evidence", "requirement_unmet"],
    )
    for slug, members, path in (
        ("require-mutations-string", {"require_mutations": "true"}, "require_mutations"),
        ("protected-targets-not-an-array", {"protected_targets": "claim.toml"},
         "protected_targets"),
        ("protected-targets-empty-string", {"protected_targets": [""]}, "protected_targets[0]"),
    ):  # fmt: skip
        yield vector(
            "operator-policy-" + slug,
            "require_mutations is true or false; protected_targets an array of non-empty strings.",
            ["invalid", "policy"],
            claim=simple(),
            operator=with_members(policy(), **members),
            state="invalid",
            error_path=path,
        )


def _dom_visibility() -> Iterator[tuple[str, dict[str, Json]]]:
    """Only what a person can see counts (attack 46)."""

    def judged(slug: str, description: str, item: Json, state: str, *tags: str, **more: Any) -> Any:
        return vector(
            "dom-" + slug, description, ["dom", *tags],
            claim=claim([UI_ACTION], [item]), state=state, **more,
        )  # fmt: skip

    blind: dict[str, Any] = {"unmet": NOT_COUNTED, "findings": {"e1": ["not_discriminating"]}}
    yield judged(
        "hidden-element-does-not-count",
        "The element read holds the value but no person can see it (visible false).",
        dom(observed={**LABEL_SEEN, "count": 0, "hidden": 1, "visible": False}), "unverified",
        "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "visible-beside-hidden-counts",
        "The one element a person can see shows the value; hidden ones are counted apart.",
        dom(observed={**LABEL_SEEN, "hidden": 2}), "verified", findings={"e1": []},
    )  # fmt: skip
    yield judged(
        "visibility-not-recorded",
        "An item from before visibility was recorded (no visible member) does not count.",
        dom(observed={"address": "/settings", "count": 1, "text": "Bob"}), "unverified",
        "qualify-7", **blind,
    )  # fmt: skip
    yield judged(
        "visibility-not-a-boolean",
        "visible must be true itself: 1 is not true.",
        dom(observed={**LABEL_SEEN, "visible": 1}), "unverified", "qualify-7", **blind,
    )  # fmt: skip
    counted = {"address": "/settings", "count": 2}
    yield judged(
        "count-of-visible-elements",
        "A count of the elements a person can see, hidden ones recorded apart, counts.",
        dom(counted, {**counted, "hidden": 3}), "verified", findings={"e1": []},
    )  # fmt: skip
    yield judged(
        "count-without-hidden",
        "A count with no record of hidden elements may include what nobody sees: not counted.",
        dom(counted, counted), "unverified", "qualify-7", **blind,
    )  # fmt: skip


# --- output -------------------------------------------------------------------------------------


def build() -> dict[str, str]:
    """Every vector file, by name, as the exact text ``main`` writes."""
    files: dict[str, str] = {}
    seen: set[str] = set()
    for number, (slug, body) in enumerate(_vectors(), start=1):
        assert slug not in seen, f"duplicate slug {slug}"
        seen.add(slug)
        files[f"{number:03d}-{slug}.json"] = json.dumps(body, indent=2, sort_keys=True) + "\n"
    return files


def main() -> int:
    files = build()
    VECTOR_DIR.mkdir(exist_ok=True)
    for stale in VECTOR_DIR.glob("*.json"):
        if stale.name not in files:
            stale.unlink()
    for name, text in files.items():
        path = VECTOR_DIR / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} vectors to {VECTOR_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
