"""The Completion Claim document (spec 0.1 plus the project's compatible extensions).

Every type is immutable. Parsing is strict: wrong types are errors, never coerced, and unknown
members are rejected (a mistyped ``requires`` in a policy must not silently lower the bar).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal

from ._fields import (
    ABSENT,
    AnyJson,
    Boolean,
    Field,
    Integer,
    Kind,
    ListOf,
    MapOf,
    PositiveNumber,
    Ref,
    Table,
    Text,
    Time,
)
from ._json import DEFAULT_MAX_BYTES, cycle_collection_paused, decode_bytes, loads
from .errors import InvalidDocument
from .trust.bounds import check_signature_bounds
from .trust.pubkey import SCHEMA_PATTERN, PublicKey, parse_public_key

__all__ = [
    "ABSENT",
    "BUILTIN_COVERED_BY",
    "BUILTIN_POLICY",
    "KNOWN_CHECK_TYPES",
    "Claim",
    "Evidence",
    "Mutation",
    "Policy",
    "PublicKey",
    "Task",
    "Trust",
    "TrustedObserver",
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
DECLARED = "declared"
SIGNED = "signed"
TrustMode = Literal["declared", "signed"]

TEST_RUN = "test_run"
ENDPOINT_HEALTH = "endpoint_health"
STATE_READBACK = "state_readback"
DOM_ASSERTION = "dom_assertion"
KNOWN_CHECK_TYPES = (DOM_ASSERTION, ENDPOINT_HEALTH, STATE_READBACK, TEST_RUN)
"""The check types this verifier can judge (``checks/`` has one module for each)."""
EXPERIMENTAL_CHECK_TYPES = (DOM_ASSERTION,)
"""Known check types whose evidence a policy with ``experimental_checks: false`` never counts."""
FILE_WRITE = "file_write"
DEPLOY = "deploy"
STATE_WRITE = "state_write"
UI_ACTION = "ui_action"
BUILTIN_COVERED_BY: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        FILE_WRITE: (TEST_RUN,),
        DEPLOY: (ENDPOINT_HEALTH,),
        STATE_WRITE: (STATE_READBACK,),
        UI_ACTION: (DOM_ASSERTION, STATE_READBACK),
    }
)
"""Which check types may cover a mutation of each kind: a check speaks only for the changes it
can observe. ``policy.covered_by`` replaces the entry of each kind it names."""
MAX_AGE_LIMIT_S = 315_576_000
"""Ten years of 365.25 days: the largest ``max_age_s``, so that date arithmetic never overflows."""
MIN_TESTS_LIMIT = 1_000_000_000
"""The largest ``min_tests``: beyond any real run, and within a 32-bit signed integer."""


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
class TrustedObserver:
    """One grant: evidence whose ``verifier.id`` is ``id``, signed with ``public_key``, counts as
    independent for ``check_types``. An observer with several keys has one entry per key."""

    id: str
    public_key: PublicKey
    check_types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Trust:
    mode: TrustMode
    observers: tuple[TrustedObserver, ...]
    agent_keys: tuple[PublicKey, ...]


def _no_entries() -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Policy:
    id: str
    requires: tuple[str, ...]
    max_age_s: float
    trust: Trust | None = None  # None: declared mode
    covered_by: Mapping[str, tuple[str, ...]] = field(default_factory=_no_entries)
    min_tests: int = 1
    allow_test_changes: bool = False
    experimental_checks: bool = True

    def coverage_map(self) -> dict[str, frozenset[str]]:
        """For each mutation kind with an entry, the check types that may cover it: the
        built-in map with the policy's entries in place of the kinds they name."""
        merged = {**BUILTIN_COVERED_BY, **self.covered_by}
        return {kind: frozenset(check_types) for kind, check_types in merged.items()}


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
    verdict_attestation: dict[str, Any] | None  # checked by check-verdict; never read by verify


class _SpecVersion(Text):
    def parse(self, value: object, path: str) -> str:
        text: str = super().parse(value, path)
        parts = text.split(".")
        if parts[0] != SPEC_MAJOR or not all(part.isascii() and part.isdigit() for part in parts):
            raise InvalidDocument(path, f"unsupported spec_version {text[:20]!r} (this reads 0.x)")
        return text

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": r"^0(\.[0-9]+)*$"}


class _CheckTypeName(Kind):
    def parse(self, value: object, path: str) -> str:
        name: str = Text().parse(value, path)
        if name not in KNOWN_CHECK_TYPES:
            known = ", ".join(KNOWN_CHECK_TYPES)
            raise InvalidDocument(path, f"unknown check type {name[:40]!r} (known: {known})")
        return name

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(KNOWN_CHECK_TYPES)}


class _PublicKeyText(Kind):
    def parse(self, value: object, path: str) -> PublicKey:
        return parse_public_key(Text().parse(value, path), path)

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": SCHEMA_PATTERN}


class _NonEmptyList(ListOf):
    def parse(self, value: object, path: str) -> tuple[Any, ...]:
        items = super().parse(value, path)
        if not items:
            raise InvalidDocument(path, "must not be empty")
        return items

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "minItems": 1}


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
            "report. In signed mode only the kind its observer signed counts.",
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
TRUSTED_OBSERVER = Table(
    "TrustedObserver",
    TrustedObserver,
    [
        Field("id", Text(), "The verifier.id its evidence carries."),
        Field("public_key", _PublicKeyText(), "ed25519:<base64 of the 32-byte public key>."),
        Field(
            "check_types",
            _NonEmptyList(Text()),
            "The check types this key may attest.",
        ),
    ],
    "An observer whose signature proves independence.",
)
TRUST = Table(
    "Trust",
    Trust,
    [
        Field(
            "mode",
            Text(choices=(DECLARED, SIGNED)),
            "declared: verifier.kind is read as written; signed: only a trusted observer's "
            "signature makes evidence independent.",
        ),
        Field(
            "observers",
            ListOf(Ref("TrustedObserver")),
            "Trusted observers, one entry per key.",
            False,
            (),
        ),
        Field(
            "agent_keys",
            ListOf(_PublicKeyText()),
            "Keys the agent holds: evidence they sign never counts, even if listed as an "
            "observer's.",
            False,
            (),
        ),
    ],
    "Who may prove that evidence is independent.",
)
POLICY = Table(
    "Policy",
    Policy,
    [
        Field("id", Text(), "Name of the policy, reported in the verdict."),
        Field("requires", ListOf(Text()), "Check types that must each support the claim."),
        Field(
            "max_age_s",
            PositiveNumber(MAX_AGE_LIMIT_S, "10 years"),
            "Evidence older than this at decision time is treated as absent (seconds, at most "
            "10 years).",
        ),
        Field("trust", Ref("Trust"), "Trust roots; absent means declared mode.", False, None),
        Field(
            "covered_by",
            MapOf(_NonEmptyList(_CheckTypeName())),
            "Mutation kind -> the check types that may cover it; each entry replaces the "
            "built-in one (file_write: test_run, deploy: endpoint_health, state_write: "
            "state_readback, ui_action: dom_assertion or state_readback). A kind with no entry "
            "can be covered by nothing.",
            False,
            MappingProxyType({}),
        ),
        Field(
            "min_tests",
            Integer(0, MIN_TESTS_LIMIT),
            "A test_run that executed fewer tests, or reports no counts, is not discriminating.",
            False,
            1,
        ),
        Field(
            "allow_test_changes",
            Boolean(),
            "Count a test_run whose observer recorded changes to protected test paths "
            "(details.test_config_changed).",
            False,
            False,
        ),
        Field(
            "experimental_checks",
            Boolean(),
            "Count evidence of the experimental check types (dom_assertion); false: such "
            "evidence never counts.",
            False,
            True,
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
        Field(
            "verdict_attestation",
            AnyJson(object_only=True),
            "A DSSE envelope by the gate over the verdict and the claim's digest (claim verify "
            "--sign-key); checked by claim check-verdict, never read by verify.",
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
    check_signature_bounds(item.attestation for item in claim.evidence)
    return claim


def parse_policy(document: object, path: str = "") -> Policy:
    policy: Policy = POLICY.parse(document, path)
    return policy


def load_claim(data: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> Claim:
    """Parse a claim from JSON text or UTF-8 bytes, at most ``max_bytes`` long in UTF-8."""
    with cycle_collection_paused():
        return parse_claim(loads(_text(data, max_bytes)))


def load_policy(data: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> Policy:
    return parse_policy(loads(_text(data, max_bytes)))


def _text(data: bytes | str, max_bytes: int) -> str:
    if isinstance(data, bytes):
        return decode_bytes(data, max_bytes)
    # A character is 1 to 4 bytes in UTF-8: only a text near the limit needs measuring.
    if len(data) * 4 > max_bytes and len(data.encode("utf-8", "surrogatepass")) > max_bytes:
        raise InvalidDocument("", f"document is over the size limit of {max_bytes} bytes")
    return data


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
