"""DSSE v1 (Dead Simple Signing Envelope) with Ed25519: the envelope, PAE, signing, verifying.

An envelope is ``{"payloadType", "payload": base64, "signatures": [{"keyid", "sig": base64}]}``.
A signature covers ``PAE(payloadType, payload bytes)``, never a re-serialised object, so it is
checked over the exact bytes before anything reads them. ``keyid`` is an unauthenticated hint:
it only orders the keys tried, it never rules one out. Decoding is strict and bounded, and every
problem is an :class:`EnvelopeError` (one line) rather than a crash.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .._optional import needs_extra
from ..errors import ClaimError
from ..public_key import PublicKey
from ..signature_bounds import MAX_SIGNATURES_PER_ENVELOPE

SIGNING = "signing or checking signatures"
with needs_extra("sign", SIGNING):
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

SIGNATURE_BYTES = 64
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
MAX_KEYID_CHARS = 256
_STANDARD = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_URL_SAFE = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_URL_SAFE_TO_STANDARD = str.maketrans("-_", "+/")


class EnvelopeError(ClaimError):
    """The value is not a DSSE envelope this verifier can read."""


@dataclass(frozen=True, slots=True)
class Signature:
    """One entry of ``signatures``: the decoded bytes, or why they could not be decoded."""

    keyid: str
    sig: bytes
    problem: str | None


@dataclass(frozen=True, slots=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[Signature, ...]

    def pae(self) -> bytes:
        return pae(self.payload_type, self.payload)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSEv1 pre-authentication encoding: ``DSSEv1 <len> <type> <len> <body>``, lengths in
    bytes, in ASCII decimal."""
    # surrogatepass: a type string with a lone surrogate (JSON allows "\ud800") cannot be valid
    # UTF-8, so its PAE matches no honest signature, but it must not crash the verifier.
    kind = payload_type.encode("utf-8", "surrogatepass")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


def b64decode(text: str, what: str, limit: int) -> bytes:
    """Standard or URL-safe base64 (DSSE admits both), padded or not; nothing else."""
    if len(text) > limit * 4 // 3 + 4:
        raise EnvelopeError(f"{what} is larger than {limit} bytes")
    if _STANDARD.fullmatch(text) is None:
        if _URL_SAFE.fullmatch(text) is None:
            raise EnvelopeError(f"{what} is not base64")
        text = text.translate(_URL_SAFE_TO_STANDARD)
    unpadded = text.rstrip("=")
    if len(unpadded) % 4 == 1 or (len(text) != len(unpadded) and len(text) % 4):
        raise EnvelopeError(f"{what} is not base64 (bad length or padding)")
    try:
        return base64.b64decode(unpadded + "=" * (-len(unpadded) % 4), validate=True)
    except binascii.Error:
        raise EnvelopeError(f"{what} is not base64") from None


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode_envelope(value: object) -> Envelope:
    """Check the envelope's shape and decode its base64; signatures stay unverified."""
    if type(value) is not dict:
        raise EnvelopeError("not a JSON object")
    assert isinstance(value, dict)
    unknown = sorted(set(value) - {"payloadType", "payload", "signatures"})
    if unknown:
        raise EnvelopeError(f"unknown member {unknown[0][:40]!r}")
    payload_type = _member(value, "payloadType", str)
    payload = b64decode(_member(value, "payload", str), "payload", MAX_PAYLOAD_BYTES)
    entries = _member(value, "signatures", list)
    if not entries:
        raise EnvelopeError("signatures is empty")
    if len(entries) > MAX_SIGNATURES_PER_ENVELOPE:
        raise EnvelopeError(f"more than {MAX_SIGNATURES_PER_ENVELOPE} signatures")
    return Envelope(
        payload_type, payload, tuple(_signature(entry, i) for i, entry in enumerate(entries))
    )


def _member(obj: dict[str, Any], name: str, kind: type) -> Any:
    if name not in obj:
        raise EnvelopeError(f"{name} is missing")
    if type(obj[name]) is not kind:
        raise EnvelopeError(f"{name} is not a JSON {'string' if kind is str else 'array'}")
    return obj[name]


def _signature(entry: object, index: int) -> Signature:
    """An entry of the wrong shape makes the envelope unreadable; bad signature bytes only make
    that one signature unusable (another may still verify)."""
    where = f"signatures[{index}]"
    if type(entry) is not dict:
        raise EnvelopeError(f"{where} is not a JSON object")
    assert isinstance(entry, dict)
    unknown = sorted(set(entry) - {"keyid", "sig"})
    if unknown:
        raise EnvelopeError(f"{where} has unknown member {unknown[0][:40]!r}")
    keyid = entry.get("keyid", "")
    if type(keyid) is not str or len(keyid) > MAX_KEYID_CHARS:
        raise EnvelopeError(f"{where}.keyid is not a string of at most {MAX_KEYID_CHARS} chars")
    text = _member(entry, "sig", str)
    if not text:
        return Signature(keyid, b"", f"{where}.sig is empty")
    try:
        sig = b64decode(text, f"{where}.sig", 4 * SIGNATURE_BYTES)
    except EnvelopeError as error:
        return Signature(keyid, b"", str(error))
    if len(sig) != SIGNATURE_BYTES:
        return Signature(
            keyid, b"", f"{where}.sig has {len(sig)} bytes; Ed25519 signatures have 64"
        )
    return Signature(keyid, sig, None)


class Signers:
    """Which keys made an envelope's signatures, each (signature, key) pair checked at most once.

    Asking about the same key again costs nothing, so a caller may try several key lists (the
    keys that would prove an item, then the ones that explain why not) and the work stays at
    most signatures x distinct keys.
    """

    def __init__(self, envelope: Envelope) -> None:
        self._message = envelope.pae()
        self._signatures = [s for s in envelope.signatures if s.problem is None]
        self._hinted = {s.keyid for s in self._signatures}
        self._signed: dict[PublicKey, bool] = {}

    def signed(self, key: PublicKey) -> bool:
        """Whether ``key`` made one of the signatures; the signatures naming it are tried
        first (a hint saves work), then the others: a wrong or missing hint hides nothing."""
        known = self._signed.get(key)
        if known is None:
            ordered = sorted(self._signatures, key=lambda s: s.keyid != key.keyid)
            known = any(_verifies(key, s.sig, self._message) for s in ordered)
            self._signed[key] = known
        return known

    def first(self, keys: Sequence[PublicKey]) -> PublicKey | None:
        """A key of ``keys`` that made one of the signatures (keys some signature names are
        tried first), or None."""
        ordered = sorted(keys, key=lambda k: k.keyid not in self._hinted)
        return next((key for key in ordered if self.signed(key)), None)


def first_verifying_key(envelope: Envelope, keys: Sequence[PublicKey]) -> PublicKey | None:
    """A key of ``keys`` that made one of the envelope's signatures, or None."""
    return Signers(envelope).first(keys)


def _verifies(key: PublicKey, sig: bytes, message: bytes) -> bool:
    try:
        _load_public(key.raw).verify(sig, message)
    except InvalidSignature:
        return False
    return True


@lru_cache(maxsize=1024)
def _load_public(raw: bytes) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(raw)


def sign(payload_type: str, payload: bytes, keys: Iterable[Ed25519PrivateKey]) -> dict[str, Any]:
    """A DSSE envelope over ``payload``, one signature per key, each with its key id."""
    message = pae(payload_type, payload)
    signatures = []
    for private in keys:
        public = PublicKey.from_raw(private.public_key().public_bytes_raw())
        signatures.append({"keyid": public.keyid, "sig": b64encode(private.sign(message))})
    return {"payloadType": payload_type, "payload": b64encode(payload), "signatures": signatures}
