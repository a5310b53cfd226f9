"""Read the conformance vectors (``conformance/vectors/*.json``) into typed records.

Shared by every runner: the library test, the schema test and the CLI runner. Loading checks the
vector file format itself, so a malformed vector fails loudly instead of testing nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VECTOR_DIR = Path(__file__).resolve().parent / "vectors"

STATES = ("verified", "unverified", "refuted", "invalid")
EXIT_CODES: Mapping[str, int] = {"verified": 0, "unverified": 1, "refuted": 2, "invalid": 3}
"""The exit code ``claim verify`` gives for each expected state."""

UNMET_CODES = frozenset(
    {
        "contradicted",
        "no_evidence",
        "no_supporting_evidence",
        "mutation_uncovered",
        "mutation_kind_unmapped",
        "requirement_unmet",
        "no_mutations",
        "protected_target_changed",
    }
)
FINDING_CODES = frozenset(
    {
        "self_attested",
        "no_observation",
        "unknown_check_type",
        "experimental_off",
        "premature",
        "superseded",
        "from_future",
        "stale",
        "not_discriminating",
        "test_config_changed",
    }
)
RULE_TAGS = (
    *(f"rule{n}" for n in range(1, 7)),
    *(f"qualify-{n}" for n in range(1, 8)),
    "satisfies",
    "policy",
    "coverage",
    "task-level",
    "supersession",
    "invalid",
    "kind",
    "min-tests",
    "test-changes",
    "dom",
    "require-mutations",
    "protected",
    "uncaptured",
)
"""Tags every suite must exercise: the six rules, the seven qualification conditions, and more
(``kind``: coverage by kind; ``min-tests``, ``test-changes``: the policy's test_run knobs;
``dom``: the experimental dom_assertion check type; ``require-mutations``, ``protected``,
``uncaptured``: what a gate decides on, as the policy and the document state it)."""
EXTRA_TAGS = ("time", "order", "example", "recomputed", "document")
KNOWN_TAGS = frozenset(RULE_TAGS + EXTRA_TAGS)

_MEMBERS = frozenset(
    {
        "description",
        "rules",
        "claim",
        "claim_text",
        "claim_base64",
        "policy",
        "policy_text",
        "at",
        "expect",
        "schema_can_express",
    }
)
_EXPECT_MEMBERS = frozenset({"state", "unmet", "error_path", "findings", "policy_id"})


@dataclass(frozen=True, slots=True)
class Vector:
    """One conformance vector: inputs and the outcome docs/spec.md (sections 2 to 5) demands."""

    name: str
    """The file name, e.g. ``001-format-note-example.json``."""
    description: str
    rules: tuple[str, ...]
    claim_bytes: bytes
    """The claim document exactly as a verifier receives it."""
    claim_json: Any
    """The decoded claim when the vector gives it as a JSON object (``claim``), else None."""
    policy_bytes: bytes | None
    """The operator policy document (``--policy``), when the vector has one."""
    policy_json: Any
    at: str
    """The decision time, RFC 3339."""
    state: str
    unmet: tuple[str, ...]
    """Sorted unmet codes (a multiset); empty for invalid vectors."""
    error_path: str | None
    """For invalid vectors: the JSON path the error names, relative to the rejected document."""
    findings: Mapping[str, tuple[str, ...]] | None
    """Optional: for evidence items (by id), the sorted reasons each does not count."""
    policy_id: str | None
    """Optional: the policy id the verdict must name."""
    schema_can_express: bool
    """False when the JSON Schema cannot decide the vector (not JSON, ids, references, depth)."""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]

    @property
    def invalid_policy(self) -> bool:
        """An invalid vector whose error lies in the operator policy, not the claim."""
        return self.state == "invalid" and self.policy_bytes is not None


def load_vectors(directory: Path = VECTOR_DIR) -> list[Vector]:
    """Every vector in ``directory``, ordered by file name."""
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise ValueError(f"no vectors in {directory}")
    return [load_vector(path) for path in paths]


def load_vector(path: Path) -> Vector:
    try:
        return _parse(path.name, json.loads(path.read_text(encoding="utf-8")))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path.name}: malformed vector: {exc!r}") from None


def _parse(name: str, data: Any) -> Vector:
    if not isinstance(data, dict) or not _MEMBERS.issuperset(data):
        raise ValueError(f"unknown members {sorted(set(data) - _MEMBERS)}")
    sources = [key for key in ("claim", "claim_text", "claim_base64") if key in data]
    if len(sources) != 1:
        raise ValueError(f"need exactly one claim source, got {sources}")
    claim_json: Any = None
    if "claim" in data:
        claim_json = data["claim"]
        claim_bytes = json.dumps(claim_json).encode("utf-8")
    elif "claim_text" in data:
        claim_bytes = _text(data["claim_text"]).encode("utf-8")
    else:
        claim_bytes = base64.b64decode(_text(data["claim_base64"]), validate=True)
    if "policy" in data and "policy_text" in data:
        raise ValueError("policy and policy_text are exclusive")
    policy_json: Any = data.get("policy")
    policy_bytes: bytes | None = None
    if "policy" in data:
        policy_bytes = json.dumps(policy_json).encode("utf-8")
    elif "policy_text" in data:
        policy_bytes = _text(data["policy_text"]).encode("utf-8")

    expect = data["expect"]
    if not isinstance(expect, dict) or not _EXPECT_MEMBERS.issuperset(expect):
        raise ValueError("bad expect")
    state = expect["state"]
    if state not in STATES:
        raise ValueError(f"unknown state {state!r}")
    rules = tuple(data["rules"])
    if not rules or not KNOWN_TAGS.issuperset(rules):
        raise ValueError(f"unknown rule tags {sorted(set(rules) - KNOWN_TAGS)}")
    error_path: str | None = None
    unmet: tuple[str, ...] = ()
    if state == "invalid":
        error_path = _text(expect["error_path"])
        if "unmet" in expect or "invalid" not in rules:
            raise ValueError("an invalid vector has error_path, no unmet, and the invalid tag")
    else:
        if "error_path" in expect:
            raise ValueError("error_path is only for invalid vectors")
        unmet = tuple(expect["unmet"])
        if list(unmet) != sorted(unmet) or not UNMET_CODES.issuperset(unmet):
            raise ValueError(f"unmet must be sorted known codes, got {unmet}")
    findings: dict[str, tuple[str, ...]] | None = None
    if "findings" in expect:
        findings = {}
        for ref, codes in expect["findings"].items():
            if list(codes) != sorted(codes) or not FINDING_CODES.issuperset(codes):
                raise ValueError(f"findings for {ref} must be sorted known codes")
            findings[_text(ref)] = tuple(codes)
    policy_id = expect.get("policy_id")
    schema_can_express = data.get("schema_can_express", True)
    if type(schema_can_express) is not bool:
        raise ValueError("schema_can_express must be a boolean")
    return Vector(
        name=name,
        description=_text(data["description"]),
        rules=rules,
        claim_bytes=claim_bytes,
        claim_json=claim_json,
        policy_bytes=policy_bytes,
        policy_json=policy_json,
        at=_text(data["at"]),
        state=state,
        unmet=unmet,
        error_path=error_path,
        findings=findings,
        policy_id=None if policy_id is None else _text(policy_id),
        schema_can_express=schema_can_express,
    )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value
