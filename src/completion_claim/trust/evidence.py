"""Signed evidence: what an observer signs, and rule 1 in signed mode.

The payload (canonical JSON, payload type ``application/vnd.completion-claim.evidence+json``)::

    {"_type": "https://completion-claim.dev/evidence/v0.2",
     "task_id": "<the claim's task.id>",
     "evidence": {<the item's check_type, target, expected, observed_value, at, covers,
                   subject, details, each only when the item has it>,
                  "verifier": {"id": ..., "kind": ...}},
     "mutations": [{"id", "kind", "target", "at", "digest" (when it has one)}, ...]}

It binds every field the verdict reads: the item's own members, its ``verifier.kind`` (so a
signed ``self_attested`` item never counts: rule 1 holds in signed mode too) and each covered
mutation as it stood when observed, listed once, in ``covers`` order. Only the item's ``id`` and
``attestation`` are not signed. v0.1 payloads (no kind, no mutation labels) are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._json import decode_document
from .._system import usable_cpus
from ..errors import InvalidDocument
from ..match import json_equal
from ..model import ABSENT, INDEPENDENT, Claim, Evidence, Mutation, Trust, parse_as
from ..public_key import PublicKey
from ..verify import Finding
from .canonical import canonical_bytes
from .dsse import EnvelopeError, Signers, decode_envelope
from .keys import SigningKey

EVIDENCE_PAYLOAD_TYPE = "application/vnd.completion-claim.evidence+json"
EVIDENCE_PAYLOAD_V = "https://completion-claim.dev/evidence/v0.2"
OLD_PAYLOAD_VS = ("https://completion-claim.dev/evidence/v0.1",)
SIGNED_MEMBERS = (
    "check_type",
    "target",
    "expected",
    "observed_value",
    "at",
    "covers",
    "verifier",
    "subject",
    "details",
)
FINDING_CODES = (
    "no_attestation",
    "attestation_malformed",
    "payload_type_wrong",
    "agent_key",
    "unknown_observer",
    "check_type_not_allowed",
    "signature_invalid",
    "payload_malformed",
    "payload_mismatch",
    "bound_to_other_task",
    "mutation_digest_changed",
    "mutation_label_changed",
)
"""Why signed mode did not find an item independent; at most one per item, checked in this
order (all of them take the place of ``self_attested``, which signed mode gives to an item its
observer signed as ``self_attested``)."""
_PAYLOAD_MEMBERS = frozenset({"_type", "task_id", "evidence", "mutations"})


def evidence_payload(
    item: Mapping[str, Any], task_id: str, mutations: Sequence[Mutation]
) -> dict[str, Any]:
    """The payload for an evidence item as written (JSON values), bound to its claim."""
    signed = {name: item[name] for name in SIGNED_MEMBERS if name in item}
    signed["verifier"] = {"id": item["verifier"]["id"], "kind": item["verifier"]["kind"]}
    by_id = {m.id: m for m in mutations}
    bound = [_mutation_json(by_id[mutation_id]) for mutation_id in dict.fromkeys(item["covers"])]
    return {"_type": EVIDENCE_PAYLOAD_V, "task_id": task_id, "evidence": signed, "mutations": bound}


def _mutation_json(mutation: Mutation) -> dict[str, Any]:
    entry = {
        "id": mutation.id,
        "kind": mutation.kind,
        "target": mutation.target,
        # As written, offset included; the verifier compares the instants, not the spelling.
        "at": mutation.at.isoformat(),
    }
    if mutation.digest is not None:
        entry["digest"] = mutation.digest
    return entry


def sign_evidence(item: Mapping[str, Any], claim: Claim, key: SigningKey) -> dict[str, Any]:
    """The ``attestation`` envelope for ``item``, binding the claim's task and the covered
    mutations as they stand now (id, kind, target, time, digest)."""
    payload = evidence_payload(item, claim.task.id, claim.mutations)
    return key.sign_envelope(EVIDENCE_PAYLOAD_TYPE, canonical_bytes(payload))


PARALLEL_FROM_ITEMS = 16
"""A claim with fewer items is checked in this thread: starting threads would cost more."""


def signed_independence(
    claim: Claim, trust: Trust, threads: int | None = None
) -> Callable[[Evidence], Finding | None]:
    """Rule 1 in signed mode, for the items of ``claim``: None when a trusted observer's
    signature proves the item independent, else the finding that says why not.

    A large claim's items are checked ahead on ``threads`` threads (default: the usable CPUs):
    the Ed25519 verifications, most of the cost, run outside the interpreter lock.
    """
    mode = _SignedMode(claim, trust)
    workers = min(usable_cpus() if threads is None else threads, 8)
    items = claim.evidence
    if workers < 2 or len(items) < PARALLEL_FROM_ITEMS:
        return mode.check
    # One slice of the items a thread: a task per item would cost more than its signature.
    size = -(-len(items) // workers)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        slices = pool.map(mode.check_all, [items[i : i + size] for i in range(0, len(items), size)])
        found = [finding for part in slices for finding in part]
    by_item = {id(item): finding for item, finding in zip(items, found, strict=True)}

    def checked(item: Evidence) -> Finding | None:
        # The claim holds its items, so their ids stay theirs; any other item is checked now.
        return by_item[id(item)] if id(item) in by_item else mode.check(item)

    return checked


class _SignedMode:
    def __init__(self, claim: Claim, trust: Trust) -> None:
        self.task_id = claim.task.id
        self.mutations = {m.id: m for m in claim.mutations}
        self.agent_keys = list(dict.fromkeys(trust.agent_keys))
        agent = set(self.agent_keys)
        self.grants: dict[str, dict[PublicKey, set[str]]] = {}
        self.owners: dict[PublicKey, str] = {}
        for observer in trust.observers:
            types = self.grants.setdefault(observer.id, {}).setdefault(observer.public_key, set())
            types.update(observer.check_types)
            self.owners.setdefault(observer.public_key, observer.id)
        # Keys that can make an item independent, per (observer, check type): agent keys never.
        self.usable: dict[tuple[str, str], list[PublicKey]] = {}
        for observer_id, keys in self.grants.items():
            for key, types in keys.items():
                if key not in agent:
                    for check_type in types:
                        self.usable.setdefault((observer_id, check_type), []).append(key)

    def check_all(self, items: Sequence[Evidence]) -> list[Finding | None]:
        return [self.check(item) for item in items]

    def check(self, item: Evidence) -> Finding | None:
        if item.attestation is None:
            return Finding("no_attestation")
        try:
            envelope = decode_envelope(item.attestation)
        except EnvelopeError as error:
            return Finding("attestation_malformed", detail=str(error))
        if envelope.payload_type != EVIDENCE_PAYLOAD_TYPE:
            return Finding(
                "payload_type_wrong",
                detail=f"{envelope.payload_type[:80]!r}, expected {EVIDENCE_PAYLOAD_TYPE!r}",
            )
        signers = Signers(envelope)
        if signers.first(self.usable.get((item.verifier.id, item.check_type), [])) is None:
            problems = [s.problem for s in envelope.signatures if s.problem is not None]
            unusable = problems[0] if len(problems) == len(envelope.signatures) else None
            return self._why_not_signed(item, signers, unusable)
        # Only now, with the signature verified over the exact bytes, is the payload read.
        return self._compare(item, envelope.payload)

    def _why_not_signed(self, item: Evidence, signers: Signers, unusable: str | None) -> Finding:
        """The most telling reason no signature proves the item (never a success path). The
        usable keys were tried already; ``signers`` remembers them, so no key is tried twice."""
        observer = item.verifier.id
        agent = signers.first(self.agent_keys)
        if agent is not None:
            return Finding("agent_key", detail=f"signed with agent key {agent.keyid[:16]}")
        named = self.grants.get(observer)
        if named is None:
            return Finding(
                "unknown_observer", detail=f"{observer[:80]!r} is not a trusted observer"
            )
        signer = signers.first(list(named))
        if signer is not None:
            allowed = ", ".join(sorted(named[signer]))
            return Finding(
                "check_type_not_allowed",
                detail=f"{observer[:80]!r} may attest {allowed}, not {item.check_type[:80]}",
            )
        stranger = signers.first([key for key in self.owners if key not in named])
        if stranger is not None:
            detail = f"signed by observer {self.owners[stranger][:80]!r}, not {observer[:80]!r}"
        else:
            detail = unusable or f"no signature verifies with a key of {observer[:80]!r}"
        return Finding("signature_invalid", detail=detail)

    def _compare(self, item: Evidence, payload: bytes) -> Finding | None:
        try:
            task_id, signed, bound = _read_payload(payload)
        except InvalidDocument as error:
            where = f"{error.path}: " if error.path else ""
            return Finding("payload_malformed", detail=where + error.problem)
        differ = [
            name
            for name, same in (
                ("check_type", signed.check_type == item.check_type),
                ("target", signed.target == item.target),
                ("expected", _same(signed.expected, item.expected)),
                ("observed_value", _same(signed.observed_value, item.observed_value)),
                ("at", signed.at == item.at),
                ("covers", signed.covers == item.covers),
                ("verifier.id", signed.verifier.id == item.verifier.id),
                ("verifier.kind", signed.verifier.kind == item.verifier.kind),
                ("subject", signed.subject == item.subject),
                ("details", _same(signed.details, item.details)),
            )
            if not same
        ]
        if differ:
            return Finding("payload_mismatch", detail=f"not as signed: {', '.join(differ)}")
        if signed.verifier.kind != INDEPENDENT:
            # Its own observer said so, and signed it: rule 1, as in declared mode.
            return Finding("self_attested", detail="signed as self_attested")
        if task_id != self.task_id:
            return Finding("bound_to_other_task", detail=f"signed for task {task_id[:80]!r}")
        for then in bound:
            finding = _changed(then, self.mutations.get(then.id))
            if finding is not None:
                return finding
        return None


def _changed(then: Mutation, now: Mutation | None) -> Finding | None:
    """Why the covered mutation is no longer the one observed: its content (digest), else
    what the claim now says it was (kind, target, time); None when it is as signed."""
    if now is None or now.digest != then.digest:
        current = "no such mutation" if now is None else _digest_text(now.digest)
        return Finding(
            "mutation_digest_changed",
            mutation=then.id,
            detail=f"signed {_digest_text(then.digest)}, now {current}",
        )
    labels = [
        f"{name} signed {signed[:80]!r}, now {current[:80]!r}"
        for name, same, signed, current in (
            ("kind", then.kind == now.kind, then.kind, now.kind),
            ("target", then.target == now.target, then.target, now.target),
            ("at", then.at == now.at, then.at.isoformat(), now.at.isoformat()),
        )
        if not same
    ]
    if labels:
        return Finding("mutation_label_changed", mutation=then.id, detail="; ".join(labels))
    return None


def _read_payload(payload: bytes) -> tuple[str, Evidence, list[Mutation]]:
    """Parse a verified payload strictly; any surprise is an InvalidDocument."""
    document = decode_document(payload)
    if type(document) is not dict:
        raise InvalidDocument("", "not a JSON object")
    version = document.get("_type")
    if version in OLD_PAYLOAD_VS:
        raise InvalidDocument(
            "_type",
            f"{version!r} is no longer accepted: it does not sign verifier.kind nor the "
            "covered mutations' kind, target and at (observe again to sign "
            f"{EVIDENCE_PAYLOAD_V!r})",
        )
    if set(document) != _PAYLOAD_MEMBERS:
        raise InvalidDocument("", f"members must be {', '.join(sorted(_PAYLOAD_MEMBERS))}")
    if version != EVIDENCE_PAYLOAD_V:
        raise InvalidDocument("_type", f"expected {EVIDENCE_PAYLOAD_V!r}")
    task_id = document["task_id"]
    if type(task_id) is not str:
        raise InvalidDocument("task_id", "expected a string")
    signed = document["evidence"]
    if type(signed) is not dict or not set(SIGNED_MEMBERS).issuperset(signed):
        raise InvalidDocument("evidence", f"expected an object of {', '.join(SIGNED_MEMBERS)}")
    # The evidence table checks types, times and that verifier is exactly {"id", "kind"}.
    evidence = parse_as(Evidence, signed, "evidence", payload)
    entries = document["mutations"]
    if type(entries) is not list:
        raise InvalidDocument("mutations", "expected an array")
    bound = [
        parse_as(Mutation, entry, f"mutations[{i}]", payload) for i, entry in enumerate(entries)
    ]
    if [m.id for m in bound] != list(dict.fromkeys(evidence.covers)):
        raise InvalidDocument("mutations", "must list each covered mutation once, in covers order")
    return task_id, evidence, bound


def _same(signed: Any, current: Any) -> bool:
    """Equal as JSON values (types strict, 1 equals 1.0); absent equals only absent."""
    if signed is ABSENT or current is ABSENT:
        return signed is current
    return json_equal(signed, current)


def _digest_text(digest: str | None) -> str:
    return "no digest" if digest is None else repr(digest[:80])
