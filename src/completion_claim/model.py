"""The Completion Claim document (spec 0.1 plus the project's compatible extensions).

Every type is immutable. Parsing is strict: wrong types are errors, never coerced, and unknown
members are rejected (a mistyped ``requires`` in a policy must not silently lower the bar).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ._fields import ABSENT, AnyJson, Field, ListOf, PositiveNumber, Ref, Table, Text, Time
from ._json import DEFAULT_MAX_BYTES, decode_bytes, loads
from .errors import InvalidDocument

__all__ = [
    "ABSENT",
    "BUILTIN_POLICY",
    "Claim",
    "Evidence",
    "Mutation",
    "Policy",
    "Task",
    "VerifierRef",
    "load_claim",
    "load_policy",
    "parse_claim",
    "parse_policy",
]

SPEC_MAJOR = "0"
INDEPENDENT = "independent"
SELF_ATTESTED = "self_attested"
VerifierKind = Literal["independent", "self_attested"]


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    description: str | None


@dataclass(frozen=True, slots=True)
class Mutation:
    id: str
    kind: str
    target: str
    at: datetime
    digest: str | None


@dataclass(frozen=True, slots=True)
class VerifierRef:
    id: str
    kind: VerifierKind


@dataclass(frozen=True, slots=True)
class Evidence:
    check_type: str
    target: str
    at: datetime
    covers: tuple[str, ...]
    verifier: VerifierRef
    expected: Any  # JSON value, or ABSENT
    observed_value: Any  # JSON value (null included), or ABSENT: no observation was made
    id: str | None
    subject: str | None
    details: dict[str, Any] | None
    attestation: dict[str, Any] | None

    @property
    def observed(self) -> bool:
        return self.observed_value is not ABSENT


@dataclass(frozen=True, slots=True)
class Policy:
    id: str
    requires: tuple[str, ...]
    max_age_s: float


BUILTIN_POLICY = Policy(id="completion-claim/builtin", requires=(), max_age_s=300)
"""Applies when neither the operator nor the claim names a policy."""


@dataclass(frozen=True, slots=True)
class Claim:
    spec_version: str
    task: Task
    claimed_outcome: str
    mutations: tuple[Mutation, ...]
    evidence: tuple[Evidence, ...]
    policy: Policy | None
    verdict: dict[str, Any] | None  # as written by whoever produced the file; never read


class _SpecVersion(Text):
    def parse(self, value: object, path: str) -> str:
        text: str = super().parse(value, path)
        parts = text.split(".")
        if parts[0] != SPEC_MAJOR or not all(part.isdigit() for part in parts):
            raise InvalidDocument(path, f"unsupported spec_version {text[:20]!r} (this reads 0.x)")
        return text

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": r"^0(\.[0-9]+)*$"}


TASK = Table(
    "Task",
    Task,
    [
        Field("id", Text(), "Stable identifier of the task."),
        Field("description", Text(min_length=0), "What was asked.", False, None),
    ],
    "The work the agent was given.",
)
MUTATION = Table(
    "Mutation",
    Mutation,
    [
        Field("id", Text(), "Unique within the claim; evidence names it in covers."),
        Field("kind", Text(), "What changed: file_write, state_write, deploy, ..."),
        Field("target", Text(), "What was changed: a path, a record, a service."),
        Field("at", Time(), "When the change happened."),
        Field(
            "digest",
            Text(),
            "Content digest of the target after the change (sha256:..., git-tree:..., deleted).",
            False,
            None,
        ),
    ],
    "One change the agent made to the world.",
)
VERIFIER = Table(
    "Verifier",
    VerifierRef,
    [
        Field("id", Text(), "Who made the observation (name/version)."),
        Field(
            "kind",
            Text(choices=(INDEPENDENT, SELF_ATTESTED)),
            "independent: observed from outside the agent loop; self_attested: the agent's own "
            "report. In signed mode the verifier computes this instead of reading it.",
        ),
    ],
    "The observer of one evidence item.",
)
EVIDENCE = Table(
    "Evidence",
    Evidence,
    [
        Field("check_type", Text(), "test_run, endpoint_health, state_readback, ..."),
        Field("target", Text(), "What was observed."),
        Field("at", Time(), "When the observation started."),
        Field(
            "covers",
            ListOf(Text()),
            "Ids of the mutations this observes; empty for task-level evidence.",
        ),
        Field("verifier", Ref("Verifier"), "Who observed."),
        Field(
            "expected",
            AnyJson(),
            "What the observation must show; absent or empty asserts nothing.",
            False,
        ),
        Field(
            "observed_value",
            AnyJson(),
            "What was observed; absent when the observation could not be made.",
            False,
        ),
        Field("id", Text(), "Unique within the claim.", False, None),
        Field("subject", Text(), "Digest of what was observed.", False, None),
        Field("details", AnyJson(object_only=True), "Observer data.", False, None),
        Field(
            "attestation",
            AnyJson(object_only=True),
            "A DSSE envelope signed by the observer.",
            False,
            None,
        ),
    ],
    "One observation about the world.",
)
POLICY = Table(
    "Policy",
    Policy,
    [
        Field("id", Text(), "Name of the policy, reported in the verdict."),
        Field("requires", ListOf(Text()), "Check types that must each support the claim."),
        Field(
            "max_age_s",
            PositiveNumber(),
            "Evidence older than this at decision time is treated as absent.",
        ),
    ],
    "What counts as proof.",
)
CLAIM = Table(
    "Claim",
    Claim,
    [
        Field("spec_version", _SpecVersion(), "Format version; this implementation reads 0.x."),
        Field("task", Ref("Task"), "The task."),
        Field("claimed_outcome", Text(min_length=0), "What the agent says it achieved."),
        Field("mutations", ListOf(Ref("Mutation")), "The changes the agent made."),
        Field("evidence", ListOf(Ref("Evidence")), "Observations about them."),
        Field("policy", Ref("Policy"), "The policy the producer proposes.", False, None),
        Field(
            "verdict",
            AnyJson(object_only=True),
            "A previous verdict. Never read: the verdict is always recomputed.",
            False,
            None,
        ),
    ],
    "A Completion Claim.",
)


def parse_claim(document: object) -> Claim:
    """Build a Claim from decoded JSON, checking types and cross-references."""
    claim: Claim = CLAIM.parse(document, "")
    _check_references(claim)
    return claim


def parse_policy(document: object, path: str = "") -> Policy:
    policy: Policy = POLICY.parse(document, path)
    return policy


def load_claim(data: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> Claim:
    """Parse a claim from JSON text or UTF-8 bytes."""
    text = decode_bytes(data, max_bytes) if isinstance(data, bytes) else data
    return parse_claim(loads(text))


def load_policy(data: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> Policy:
    text = decode_bytes(data, max_bytes) if isinstance(data, bytes) else data
    return parse_policy(loads(text))


def _check_references(claim: Claim) -> None:
    mutation_ids: set[str] = set()
    for i, mutation in enumerate(claim.mutations):
        if mutation.id in mutation_ids:
            raise InvalidDocument(f"mutations[{i}].id", f"duplicate mutation id {mutation.id!r}")
        mutation_ids.add(mutation.id)
    evidence_ids: set[str] = set()
    for i, item in enumerate(claim.evidence):
        if item.id is not None:
            if item.id in evidence_ids:
                raise InvalidDocument(f"evidence[{i}].id", f"duplicate evidence id {item.id!r}")
            evidence_ids.add(item.id)
        for j, covered in enumerate(item.covers):
            if covered not in mutation_ids:
                raise InvalidDocument(
                    f"evidence[{i}].covers[{j}]", f"names unknown mutation {covered!r}"
                )
