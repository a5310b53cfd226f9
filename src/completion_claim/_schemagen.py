"""Generates the shipped JSON Schema from the model's declarations (``make schema``).

msgspec writes the schema of each Struct; this module adds what the declarations mean beyond
msgspec's reading: value types described by pattern or range (times, keys, counts), and the
project's convention that an optional member (default None) may be left out but not be null.
The verdict is output only; its types are declared in ``verify`` and described here too.
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec

from ._json import dumps
from .model import DOCUMENT_TYPES, Claim, PublicKey, Timestamp, WholeNumber
from .public_key import SCHEMA_PATTERN
from .verify import Coverage, EvidenceResult, Finding, NotCounted, Unmet, Verdict

SCHEMA_ID = "https://completion-claim.dev/schema/0.1/claim.schema.json"
VERDICT_TYPES = (Verdict, Unmet, Coverage, NotCounted, EvidenceResult, Finding)
_BY_PATTERN: dict[type, dict[str, Any]] = {
    Timestamp: Timestamp.SCHEMA,
    WholeNumber: WholeNumber.SCHEMA,
    PublicKey: {"type": "string", "pattern": SCHEMA_PATTERN},
}


def _described(kind: type) -> dict[str, Any]:
    return dict(_BY_PATTERN[kind])


def build_schema() -> dict[str, Any]:
    types: tuple[type[msgspec.Struct], ...] = (*DOCUMENT_TYPES, *VERDICT_TYPES)
    _, components = msgspec.json.schema_components(
        types, schema_hook=_described, ref_template="#/$defs/{name}"
    )
    for kind in types:
        _absent_not_null(components[kind.__name__], kind)
    root = components.pop(Claim.__name__)
    root.pop("title")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Completion Claim",
        **root,
        "$defs": dict(sorted(components.items())),
    }


def _absent_not_null(schema: dict[str, Any], kind: type[msgspec.Struct]) -> None:
    """An optional member's schema is its value's: the member may be absent, never null."""
    for field in msgspec.structs.fields(kind):
        if field.default is not None:
            continue
        member = schema["properties"][field.encode_name]
        branches = [b for b in member.pop("anyOf") if b != {"type": "null"}]
        member.pop("default", None)
        (value,) = branches
        schema["properties"][field.encode_name] = {**value, **member}


def render() -> str:
    return dumps(build_schema(), indent=2) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
