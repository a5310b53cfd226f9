"""Signed verdicts and in-toto export: let a downstream system trust the gate's decision.

The claim digest is the SHA-256 (hex) of the canonical JSON (``canonical.py``) of the claim
document without its ``verdict`` and ``verdict_attestation`` members: the claim as the gate
judged it, independent of whitespace and member order.

An in-toto export is a DSSE envelope of payload type ``application/vnd.in-toto+json`` over an
in-toto Statement v1 whose one subject is the claim digest, and whose predicate is the claim with
its verdict; :func:`check_statement` checks one.

A signed verdict is the claim with ``verdict`` (the verdict JSON) and ``verdict_attestation``, a
DSSE envelope of payload type ``application/vnd.completion-claim.verdict+json`` over::

    {"_type": "https://completion-claim.dev/verdict/v0.1",
     "claim_digest": {"sha256": "<hex>"},
     "verdict": <the verdict JSON>}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._json import decode_bytes, loads
from ..errors import ClaimError, InvalidDocument
from ..public_key import PublicKey
from .canonical import canonical_bytes, sha256_hex
from .dsse import EnvelopeError, decode_envelope, first_verifying_key
from .keys import SigningKey

VERDICT_PAYLOAD_TYPE = "application/vnd.completion-claim.verdict+json"
VERDICT_PAYLOAD_V = "https://completion-claim.dev/verdict/v0.1"
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
CLAIM_PREDICATE_TYPE = "https://completion-claim.dev/attestation/claim/v0.1"
NOT_DIGESTED = ("verdict", "verdict_attestation")


class VerdictRejected(ClaimError):
    """A signed verdict that does not prove what it says; ``str()`` is the one-line reason."""


def claim_digest(document: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical claim, without ``verdict`` and ``verdict_attestation``."""
    return sha256_hex(_judged_claim(document))


def _judged_claim(document: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in document.items() if name not in NOT_DIGESTED}


def sign_verdict(
    document: Mapping[str, Any], verdict: dict[str, Any], key: SigningKey
) -> dict[str, Any]:
    """The claim document with ``verdict`` and its ``verdict_attestation``."""
    payload = {
        "_type": VERDICT_PAYLOAD_V,
        "claim_digest": {"sha256": claim_digest(document)},
        "verdict": verdict,
    }
    return {
        **_judged_claim(document),
        "verdict": verdict,
        "verdict_attestation": key.sign_envelope(VERDICT_PAYLOAD_TYPE, canonical_bytes(payload)),
    }


def _signed_payload(document: object, payload_type: str, key: PublicKey, where: str) -> bytes:
    """The payload of the DSSE envelope ``document`` when it has ``payload_type`` and ``key``
    signed it; else :class:`VerdictRejected`, its reason prefixed with ``where``."""
    try:
        envelope = decode_envelope(document)
    except EnvelopeError as error:
        raise VerdictRejected(f"{where or 'envelope: '}{error}") from None
    if envelope.payload_type != payload_type:
        raise VerdictRejected(
            f"{where}payload type {envelope.payload_type[:80]!r}, expected {payload_type!r}"
        )
    if first_verifying_key(envelope, [key]) is None:
        problems = [s.problem for s in envelope.signatures if s.problem is not None]
        raise VerdictRejected(
            f"{where}{problems[0]}"
            if len(problems) == len(envelope.signatures)
            else f"no signature verifies with key {key.keyid[:16]}"
        )
    return envelope.payload


def check_verdict(document: Mapping[str, Any], key: PublicKey) -> dict[str, Any]:
    """The signed verdict, when ``key`` signed it and the document's claim and verdict are
    exactly what was signed; else :class:`VerdictRejected` with the reason."""
    attestation = document.get("verdict_attestation")
    if attestation is None:
        raise VerdictRejected("the claim has no verdict_attestation: its verdict is not signed")
    payload = _signed_payload(attestation, VERDICT_PAYLOAD_TYPE, key, "verdict_attestation: ")
    digest, signed = _read_payload(payload)
    actual = claim_digest(document)
    if actual != digest:
        raise VerdictRejected(
            f"the claim is not the one signed (sha256 {actual[:16]}, signed {digest[:16]})"
        )
    verdict = document.get("verdict")
    if verdict is None or canonical_bytes(verdict) != canonical_bytes(signed):
        raise VerdictRejected("the verdict is not the one signed")
    return signed


def _read_payload(payload: bytes) -> tuple[str, dict[str, Any]]:
    try:
        document = loads(decode_bytes(payload))
    except InvalidDocument as error:
        raise VerdictRejected(f"signed payload: {error.problem}") from None
    if type(document) is not dict or set(document) != {"_type", "claim_digest", "verdict"}:
        raise VerdictRejected("signed payload: expected _type, claim_digest and verdict")
    digest = document["claim_digest"]
    if (
        document["_type"] != VERDICT_PAYLOAD_V
        or type(digest) is not dict
        or set(digest) != {"sha256"}
        or type(digest["sha256"]) is not str
        or type(document["verdict"]) is not dict
    ):
        raise VerdictRejected("signed payload: not a completion-claim verdict v0.1")
    return digest["sha256"], document["verdict"]


def intoto_statement(
    document: Mapping[str, Any], verdict: dict[str, Any], name: str
) -> dict[str, Any]:
    """An in-toto Statement v1 about the claim: subject = its digest, predicate = the claim
    with its verdict."""
    return {
        "_type": STATEMENT_V1,
        "subject": [{"name": name, "digest": {"sha256": claim_digest(document)}}],
        "predicateType": CLAIM_PREDICATE_TYPE,
        "predicate": {**_judged_claim(document), "verdict": verdict},
    }


def sign_statement(statement: Mapping[str, Any], key: SigningKey) -> dict[str, Any]:
    return key.sign_envelope(INTOTO_PAYLOAD_TYPE, canonical_bytes(statement))


def is_envelope(document: object) -> bool:
    """Whether a file holds a DSSE envelope (an export) rather than a claim."""
    return isinstance(document, dict) and "payloadType" in document


@dataclass(frozen=True, slots=True)
class Attested:
    """What a valid in-toto export says: about which task and claim, and its verdict."""

    task: str
    claim_digest: str
    verdict: dict[str, Any]


def check_statement(
    envelope_document: object, key: PublicKey, claim: Mapping[str, Any] | None = None
) -> Attested:
    """The export's statement, when ``key`` signed it, it is an in-toto Statement v1 with this
    project's predicate, and its subject's digest is the digest of the claim in the predicate
    (and of ``claim``, when given); else :class:`VerdictRejected` with the reason."""
    payload = _signed_payload(envelope_document, INTOTO_PAYLOAD_TYPE, key, "")
    task, digest, predicate = _read_statement(payload)
    actual = claim_digest(predicate)
    if actual != digest:
        raise VerdictRejected(
            f"the subject is not the attested claim (sha256 {actual[:16]}, subject {digest[:16]})"
        )
    if claim is not None and claim_digest(claim) != digest:
        raise VerdictRejected(
            f"the claim is not the one attested (sha256 {claim_digest(claim)[:16]}, "
            f"attested {digest[:16]})"
        )
    return Attested(task, digest, predicate["verdict"])


def _read_statement(payload: bytes) -> tuple[str, str, dict[str, Any]]:
    """The subject's name and SHA-256, and the predicate, of a statement this project writes."""
    try:
        statement = loads(decode_bytes(payload))
    except InvalidDocument as error:
        raise VerdictRejected(f"signed payload: {error.problem}") from None
    if type(statement) is not dict or statement.get("_type") != STATEMENT_V1:
        raise VerdictRejected(f"signed payload: not an in-toto Statement ({STATEMENT_V1})")
    if statement.get("predicateType") != CLAIM_PREDICATE_TYPE:
        raise VerdictRejected(
            f"predicate type {str(statement.get('predicateType'))[:80]!r}, "
            f"expected {CLAIM_PREDICATE_TYPE!r}"
        )
    subjects, predicate = statement.get("subject"), statement.get("predicate")
    if type(subjects) is not list or len(subjects) != 1 or type(subjects[0]) is not dict:
        raise VerdictRejected("the statement must have exactly one subject, the claim")
    name, digests = subjects[0].get("name"), subjects[0].get("digest")
    if type(name) is not str or type(digests) is not dict or type(digests.get("sha256")) is not str:
        raise VerdictRejected("the subject has no name or no sha256 digest")
    if type(predicate) is not dict or type(predicate.get("verdict")) is not dict:
        raise VerdictRejected("the predicate is not a claim with its verdict")
    return name, digests["sha256"], predicate
