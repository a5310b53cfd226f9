"""The document model: strict parsing, errors that name the place, references checked."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from completion_claim import ABSENT, InvalidDocument, load_claim, load_policy, parse_claim, verify
from completion_claim.cli import run
from completion_claim.timefmt import parse_time

from .builders import claim_doc, evidence, mutation

EXAMPLES = Path(__file__).parent.parent / "examples"


def error_for(doc: Any) -> InvalidDocument:
    with pytest.raises(InvalidDocument) as caught:
        parse_claim(doc)
    return caught.value


def test_format_note_example_loads_and_verifies_at_its_own_decision_time() -> None:
    claim = load_claim((EXAMPLES / "format-note.claim.json").read_bytes())
    verdict = verify(claim, parse_time("2026-08-27T18:04:10Z", ""))
    assert verdict.state == "verified"
    assert verdict.policy_id == "default"


def test_optional_members_default_to_absent_or_none() -> None:
    item = evidence()
    del item["observed_value"], item["expected"]
    claim = parse_claim(claim_doc(evidence_items=[item]))
    assert claim.evidence[0].observed_value is ABSENT
    assert claim.evidence[0].expected is ABSENT
    assert claim.evidence[0].id is None
    assert claim.policy is None


def test_null_observation_is_an_observation() -> None:
    claim = parse_claim(claim_doc(evidence_items=[evidence(observed_value=None)]))
    assert claim.evidence[0].observed


@pytest.mark.parametrize(
    ("change", "path", "problem"),
    [
        (lambda d: d.pop("task"), "task", "required member is missing"),
        (lambda d: d.update(spec_version="1.0"), "spec_version", "unsupported spec_version"),
        (lambda d: d.update(spec_version=0.1), "spec_version", "expected a string"),
        (lambda d: d.update(spec_version="0.1\n"), "spec_version", "unsupported spec_version"),
        (lambda d: d.update(mutations={}), "mutations", "expected an array"),
        (
            lambda d: d["mutations"][0].update(at="2026-08-27T18:04:02"),
            "mutations[0].at",
            "no UTC offset",
        ),
        (
            lambda d: d["mutations"][0].update(at="2026-02-30T18:04:02Z"),
            "mutations[0].at",
            "impossible date-time",
        ),
        (
            lambda d: d["mutations"][0].update(at="yesterday"),
            "mutations[0].at",
            "not an RFC 3339 date-time",
        ),
        (
            lambda d: d["mutations"][0].update(at=1700000000),
            "mutations[0].at",
            "expected an RFC 3339 date-time string",
        ),
        (
            lambda d: d["evidence"][0]["verifier"].update(kind="ci"),
            "evidence[0].verifier.kind",
            "unknown value",
        ),
        (lambda d: d["evidence"][0].update(covers="m1"), "evidence[0].covers", "expected an array"),
        (
            lambda d: d["evidence"][0].update(covers=["m9"]),
            "evidence[0].covers[0]",
            "unknown mutation",
        ),
        (
            lambda d: d["evidence"][0].update(obsreved_value=1),
            "evidence[0].obsreved_value",
            "unknown member",
        ),
        (
            lambda d: d.update(policy={"id": "p", "requires": [], "max_age_s": 0}),
            "policy.max_age_s",
            "greater than 0",
        ),
        (
            lambda d: d.update(policy={"id": "p", "requires": [], "max_age_s": -5}),
            "policy.max_age_s",
            "greater than 0",
        ),
        (
            lambda d: d.update(policy={"id": "p", "requires": [], "max_age_s": True}),
            "policy.max_age_s",
            "expected a number",
        ),
        (
            lambda d: d.update(policy={"id": "p", "require": ["test_run"], "max_age_s": 300}),
            "policy.require",
            "unknown member",
        ),
        (lambda d: d["task"].update(id=""), "task.id", "must not be empty"),
        (lambda d: d.update(verdict="verified"), "verdict", "expected an object"),
    ],
)
def test_invalid_documents_name_the_place(change: Any, path: str, problem: str) -> None:
    doc = claim_doc()
    change(doc)
    error = error_for(doc)
    assert error.path == path
    assert problem in error.problem


def test_duplicate_mutation_ids_are_invalid() -> None:
    error = error_for(claim_doc([mutation("m1"), mutation("m1", 1)]))
    assert error.path == "mutations[1].id"


def test_duplicate_evidence_ids_are_invalid() -> None:
    error = error_for(claim_doc(evidence_items=[evidence(id="e"), evidence(id="e")]))
    assert error.path == "evidence[1].id"


def test_non_object_root_is_invalid() -> None:
    assert "expected an object" in str(error_for([1, 2]))


def test_deep_free_form_value_is_invalid() -> None:
    deep: Any = "leaf"
    for _ in range(100):
        deep = {"k": deep}
    error = error_for(claim_doc(evidence_items=[evidence(details=deep)]))
    assert error.path == "evidence[0].details"
    assert "nested deeper" in error.problem


def test_minor_spec_versions_are_read() -> None:
    assert parse_claim(claim_doc(spec_version="0.2")).spec_version == "0.2"


def test_error_message_is_one_line_with_source() -> None:
    with pytest.raises(InvalidDocument) as caught:
        load_claim(b'{"spec_version": "0.1"}')
    message = str(caught.value.in_source("claim.json"))
    assert message == "claim.json: task: required member is missing"


def test_policy_document_loads() -> None:
    policy = load_policy(b'{"id": "ops", "requires": ["test_run"], "max_age_s": 60.5}')
    assert policy.requires == ("test_run",)
    assert policy.max_age_s == 60.5


def test_policy_document_errors_name_the_member() -> None:
    with pytest.raises(InvalidDocument) as caught:
        load_policy(b'{"id": "ops", "requires": [1], "max_age_s": 60}')
    assert caught.value.path == "requires[0]"


# --- numbers beyond the verifier's range are invalid input, never a crash --------------------

HUGE_MAX_AGE = b'{"id": "ops", "requires": [], "max_age_s": 1e12}'


def test_attack_10_huge_max_age_is_invalid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvalidDocument) as caught:
        load_policy(HUGE_MAX_AGE)
    assert caught.value.path == "max_age_s"
    with pytest.raises(InvalidDocument) as embedded:
        parse_claim(claim_doc(policy={"id": "p", "requires": [], "max_age_s": 1e12}))
    assert embedded.value.path == "policy.max_age_s"

    claim_path = tmp_path / "claim.json"
    claim_path.write_text(json.dumps(claim_doc()), encoding="utf-8")
    policy_path = tmp_path / "policy.json"
    policy_path.write_bytes(HUGE_MAX_AGE)
    assert run(["verify", str(claim_path), "--policy", str(policy_path)]) == 3
    err = capsys.readouterr().err
    assert err == (
        f"claim: {policy_path}: max_age_s: must be at most 315576000 (10 years), "
        "got 1000000000000.0\n"
    )


def test_attack_10_control_ten_years_is_a_valid_max_age(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_policy(b'{"id": "ops", "requires": [], "max_age_s": 315576000}').max_age_s == (
        315_576_000
    )
    claim_path = tmp_path / "claim.json"
    claim_path.write_text(json.dumps(claim_doc()), encoding="utf-8")
    policy_path = tmp_path / "policy.json"
    policy_path.write_bytes(b'{"id": "ops", "requires": [], "max_age_s": 315576000}')
    at = "2026-08-27T18:00:20Z"
    assert run(["verify", str(claim_path), "--policy", str(policy_path), "--at", at]) == 0
    capsys.readouterr()


def test_policy_knobs_default_to_the_strict_reading() -> None:
    policy = load_policy(b'{"id": "ops", "requires": [], "max_age_s": 60}')
    assert dict(policy.covered_by) == {}
    assert policy.min_tests == 1
    assert policy.allow_test_changes is False


def test_policy_knobs_load() -> None:
    policy = load_policy(
        b'{"id": "ops", "requires": [], "max_age_s": 60, "min_tests": 5.0,'
        b' "allow_test_changes": true, "covered_by": {"dns_change": ["endpoint_health"]}}'
    )
    assert policy.min_tests == 5
    assert isinstance(policy.min_tests, int)  # 5.0 is the integer 5, not a float
    assert policy.allow_test_changes is True
    assert policy.coverage["dns_change"] == frozenset({"endpoint_health"})
    assert policy.coverage["file_write"] == frozenset({"test_run"})


# --- the fast path for times reads them as parse_time does ------------------------------------


@settings(max_examples=500, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
    ),
    st.sampled_from(
        [
            *("Z", "z", "+00:00", "-00:00", "+05:30", "-23:59", "+14:00", " "),
            *("+05:60", "+05:99", "+24:00", "-7:00", "+0530"),  # no such offsets
        ]
    ),
    st.sampled_from(["T", "t"]),
    st.text(alphabet="0123456789", max_size=12),
)
def test_a_time_reads_alike_on_either_path(
    moment: datetime, offset: str, separator: str, fraction: str
) -> None:
    """``datetime.fromisoformat`` reads the common spelling; ``parse_time`` every other one and
    every error. Whatever the path, the instant, the offset and the error are the same."""
    text = moment.strftime(f"%Y-%m-%d{separator}%H:%M:%S")
    text = f"{'0' * (4 - text.index('-'))}{text}"  # %Y writes year 1 as "1"
    text += f".{fraction}" if fraction else ""
    text += offset
    item = {**evidence(), "at": text}
    try:
        expected: object = parse_time(text, "evidence[0].at")
    except InvalidDocument as error:
        expected = str(error)
    try:
        found: object = parse_claim(claim_doc(evidence_items=[item])).evidence[0].at
    except InvalidDocument as error:
        found = str(error)
    assert found == expected
    if isinstance(found, datetime) and isinstance(expected, datetime):
        assert found.utcoffset() == expected.utcoffset()
        assert found.microsecond == expected.microsecond


@pytest.mark.parametrize("offset", ["+05:60", "+05:99", "-23:60", "+24:00"])
def test_attack_38_an_offset_rfc_3339_has_not_is_invalid(offset: str) -> None:
    """``datetime.fromisoformat`` reads "+05:60" as six hours; the fast path for times must not
    let it through where the format's own parser refuses it."""
    item = {**evidence(), "at": f"2026-08-27T18:00:10{offset}"}
    error = error_for(claim_doc(evidence_items=[item]))
    assert error.path == "evidence[0].at"
    assert "offset" in error.problem
