"""Generates the shipped JSON Schema from the model's field tables (``make schema``).

The verdict is output only, so it is described here rather than parsed; tests validate real
verdicts against it.
"""

from __future__ import annotations

import sys
from typing import Any

from . import model
from ._fields import REGISTRY
from ._json import dumps

SCHEMA_ID = "https://completion-claim.dev/schema/0.1/claim.schema.json"

_REFS = {"type": "array", "items": {"type": "string"}}
_FINDING = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "mutation": {"type": "string"},
        "detail": {"type": "string"},
    },
    "required": ["code"],
    "additionalProperties": False,
}
_VERDICT: dict[str, Any] = {
    "type": "object",
    "description": "The verifier's decision, as `claim verify --json` prints it.",
    "properties": {
        "state": {"enum": ["verified", "unverified", "refuted"]},
        "unmet": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "code": {
                        "enum": [
                            "contradicted",
                            "no_evidence",
                            "no_supporting_evidence",
                            "mutation_uncovered",
                            "mutation_kind_unmapped",
                            "requirement_unmet",
                        ]
                    },
                    "mutation": {"type": "string"},
                    "check_type": {"type": "string"},
                    "evidence": {"type": "string"},
                },
                "required": ["code"],
                "additionalProperties": False,
            },
        },
        "reason": {"type": "string"},
        "decided_at": {"type": "string", "format": "date-time"},
        "policy_id": {"type": "string"},
        "independence": {"enum": ["declared", "proven"]},
        "coverage": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "mutation": {"type": "string"},
                    "covered_by": _REFS,
                    "contradicted_by": _REFS,
                    "not_counted": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "evidence": {"type": "string"},
                                "reasons": {"type": "array", "items": _FINDING},
                            },
                            "required": ["evidence", "reasons"],
                            "additionalProperties": False,
                        },
                    },
                },
                "required": ["mutation", "covered_by", "contradicted_by", "not_counted"],
                "additionalProperties": False,
            },
        },
        "evidence": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "evidence": {"type": "string"},
                    "check_type": {"type": "string"},
                    "counts": {"type": "boolean"},
                    "observation": {"enum": ["matches", "differs", "absent"]},
                    "reasons": {"type": "array", "items": _FINDING},
                    "mismatch": {"type": "string"},
                },
                "required": ["evidence", "check_type", "counts", "observation", "reasons"],
                "additionalProperties": False,
            },
        },
    },
    "required": [
        "state",
        "unmet",
        "reason",
        "decided_at",
        "policy_id",
        "independence",
        "coverage",
        "evidence",
    ],
    "additionalProperties": False,
}


def build_schema() -> dict[str, Any]:
    root = model.CLAIM.schema()
    defs = {name: table.schema() for name, table in sorted(REGISTRY.items()) if name != "Claim"}
    defs["Verdict"] = _VERDICT
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Completion Claim",
        **root,
        "$defs": defs,
    }


def render() -> str:
    return dumps(build_schema(), indent=2) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
