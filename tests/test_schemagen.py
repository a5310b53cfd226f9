"""The shipped JSON Schema is generated from the model and agrees with it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from completion_claim import load_claim, verify
from completion_claim._schemagen import build_schema, render
from completion_claim.timefmt import parse_time

from .builders import claim_doc, evidence

SHIPPED = Path(__file__).parent.parent / "src/completion_claim/schema/claim.schema.json"
EXAMPLE = Path(__file__).parent.parent / "examples/format-note.claim.json"


def test_shipped_schema_equals_the_one_generated_from_the_model() -> None:
    assert SHIPPED.read_text() == render(), "run `make schema` and commit the result"


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(build_schema())


def test_schema_accepts_the_format_note_example() -> None:
    jsonschema.Draft202012Validator(build_schema()).validate(json.loads(EXAMPLE.read_text()))


def test_schema_rejects_what_the_parser_rejects() -> None:
    validator = jsonschema.Draft202012Validator(build_schema())
    doc = claim_doc(evidence_items=[evidence(surprise=1)])
    assert not validator.is_valid(doc)
    doc = claim_doc(evidence_items=[evidence(at="2026-08-27T18:00:10")])
    assert not validator.is_valid(doc)


def test_verdicts_conform_to_the_schema_verdict_definition() -> None:
    schema = build_schema()
    verdict_schema = {**schema["$defs"]["Verdict"], "$defs": schema["$defs"]}
    validator = jsonschema.Draft202012Validator(verdict_schema)
    claim = load_claim(EXAMPLE.read_bytes())
    for moment in ("2026-08-27T18:04:10Z", "2026-08-28T00:00:00Z", "2026-08-27T18:04:00Z"):
        validator.validate(verify(claim, parse_time(moment, "")).to_json())
