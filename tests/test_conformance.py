"""The conformance vectors: committed, complete, and obeyed by the library and the schema."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conformance.generate import build
from conformance.vectors import (
    FINDING_CODES,
    RULE_TAGS,
    UNMET_CODES,
    VECTOR_DIR,
    Vector,
    load_vectors,
)

from completion_claim import (
    Claim,
    InvalidDocument,
    Policy,
    Verdict,
    load_claim,
    load_policy,
    verify,
)
from completion_claim.timefmt import parse_time

VECTORS = load_vectors()
SCHEMA_PATH = Path(__file__).parent.parent / "src/completion_claim/schema/claim.schema.json"


def _ids(vector: Vector) -> str:
    return vector.name.removesuffix(".json")


# --- (a) the committed vectors are what the generator writes --------------------------------------


def test_committed_vectors_equal_the_generator_output() -> None:
    expected = build()
    committed = {path.name: path.read_text(encoding="utf-8") for path in VECTOR_DIR.glob("*.json")}
    assert sorted(committed) == sorted(expected), "run `make vectors` and commit the result"
    drifted = [name for name, text in expected.items() if committed[name] != text]
    assert not drifted, f"run `make vectors`: {drifted[:5]} differ"


def test_generator_is_deterministic() -> None:
    assert build() == build()


# --- (d) the suite is big enough and touches every rule -------------------------------------------


def test_enough_vectors_and_every_rule_tag_used() -> None:
    assert len(VECTORS) >= 80
    used = Counter(tag for v in VECTORS for tag in v.rules)
    assert [tag for tag in RULE_TAGS if not used[tag]] == []


def test_every_state_and_code_is_expected_somewhere() -> None:
    states = {v.state for v in VECTORS}
    assert states == {"verified", "unverified", "refuted", "invalid"}
    codes = {code for v in VECTORS for code in v.unmet}
    assert codes == UNMET_CODES
    findings = {code for v in VECTORS for codes in (v.findings or {}).values() for code in codes}
    assert findings == FINDING_CODES


def test_vector_names_are_numbered_without_gaps() -> None:
    numbers = [int(v.name[:3]) for v in VECTORS]
    assert numbers == list(range(1, len(VECTORS) + 1))


# --- (b) the library gives every expected outcome -------------------------------------------------


def _load(vector: Vector) -> tuple[Claim, Policy | None]:
    claim = load_claim(vector.claim_bytes)
    policy = None if vector.policy_bytes is None else load_policy(vector.policy_bytes)
    return claim, policy


def _decide(vector: Vector) -> Verdict:
    claim, policy = _load(vector)
    return verify(claim, parse_time(vector.at, "at"), policy)


@pytest.mark.parametrize("vector", [v for v in VECTORS if v.state != "invalid"], ids=_ids)
def test_library_gives_the_expected_verdict(vector: Vector) -> None:
    verdict = _decide(vector)
    assert verdict.state == vector.state, vector.description
    assert sorted(u.code for u in verdict.unmet) == list(vector.unmet), vector.description
    if vector.findings is not None:
        reasons = {r.evidence: sorted(f.code for f in r.reasons) for r in verdict.evidence}
        for ref, codes in vector.findings.items():
            assert reasons[ref] == list(codes), f"{ref}: {vector.description}"
    if vector.policy_id is not None:
        assert verdict.policy_id == vector.policy_id


@pytest.mark.parametrize("vector", [v for v in VECTORS if v.state == "invalid"], ids=_ids)
def test_library_rejects_invalid_documents(vector: Vector) -> None:
    if vector.invalid_policy:
        load_claim(vector.claim_bytes)  # the claim is fine: the policy is what is wrong
        assert vector.policy_bytes is not None
        with pytest.raises(InvalidDocument) as caught:
            load_policy(vector.policy_bytes)
    else:
        with pytest.raises(InvalidDocument) as caught:
            load_claim(vector.claim_bytes)
    assert caught.value.path == vector.error_path, str(caught.value)
    assert "\n" not in str(caught.value)


def test_verdict_never_reads_the_embedded_verdict() -> None:
    """A sanity check of the harness: the example's own verdict is not echoed when it is wrong."""
    example = next(v for v in VECTORS if v.name.endswith("-format-note-example-stale.json"))
    assert example.claim_json["verdict"]["state"] == "verified"
    assert _decide(example).state == "unverified"


# --- (c) the shipped JSON Schema agrees with the library ------------------------------------------


def _validators() -> tuple[jsonschema.Draft202012Validator, jsonschema.Draft202012Validator]:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    policy_schema = {**schema["$defs"]["Policy"], "$defs": schema["$defs"]}
    return (
        jsonschema.Draft202012Validator(schema, format_checker=checker),
        jsonschema.Draft202012Validator(policy_schema, format_checker=checker),
    )


CLAIM_SCHEMA, POLICY_SCHEMA = _validators()


def _decoded(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


@pytest.mark.parametrize("vector", [v for v in VECTORS if v.state != "invalid"], ids=_ids)
def test_schema_accepts_what_the_library_accepts(vector: Vector) -> None:
    assert vector.schema_can_express, "every accepted document can be checked by the schema"
    errors = [e.message for e in CLAIM_SCHEMA.iter_errors(_decoded(vector.claim_bytes))]
    assert errors == []
    if vector.policy_bytes is not None:
        assert list(POLICY_SCHEMA.iter_errors(_decoded(vector.policy_bytes))) == []


EXPRESSIBLE = [v for v in VECTORS if v.state == "invalid" and v.schema_can_express]


@pytest.mark.parametrize("vector", EXPRESSIBLE, ids=_ids)
def test_schema_rejects_what_the_library_rejects(vector: Vector) -> None:
    if vector.invalid_policy:
        assert vector.policy_bytes is not None
        assert not POLICY_SCHEMA.is_valid(_decoded(vector.policy_bytes))
        assert CLAIM_SCHEMA.is_valid(_decoded(vector.claim_bytes))
    else:
        assert not CLAIM_SCHEMA.is_valid(_decoded(vector.claim_bytes))


def test_schema_exemptions_are_few_and_all_invalid() -> None:
    exempt = [v for v in VECTORS if not v.schema_can_express]
    assert all(v.state == "invalid" for v in exempt)
    assert len(EXPRESSIBLE) > len(exempt)
