"""Public keys as a policy writes them: ``ed25519:`` then the standard base64 of the 32 raw bytes.

Pure Python, no ``cryptography``: the model parses policies with this module, and an unsigned
verification must not load the crypto library. The key id is the SHA-256 (hex) of the raw key.
"""

from __future__ import annotations

import base64
import hashlib
import re

from .errors import InvalidDocument

PREFIX = "ed25519:"
_BODY = PREFIX + r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]="
"""43 base64 digits and one pad encode 32 bytes; the last digit's two spare bits must be zero,
so each key has exactly one accepted spelling."""
SCHEMA_PATTERN = f"^{_BODY}$"
_TEXT = re.compile(_BODY)
RAW_BYTES = 32


class PublicKey:
    """An Ed25519 public key: its 32 raw bytes and its key id. Immutable; equal when the raw
    bytes are. A plain class, not a record type, so that the model reads it from its one-line
    text form rather than as a JSON object."""

    __slots__ = ("keyid", "raw")
    raw: bytes
    keyid: str

    def __init__(self, raw: bytes, keyid: str) -> None:
        object.__setattr__(self, "raw", raw)
        object.__setattr__(self, "keyid", keyid)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"PublicKey is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicKey) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __repr__(self) -> str:
        return f"PublicKey({self.text!r})"

    @classmethod
    def from_raw(cls, raw: bytes) -> PublicKey:
        return cls(raw, hashlib.sha256(raw).hexdigest())

    @property
    def text(self) -> str:
        """The one-line form a policy's ``public_key`` takes and ``claim pubkey`` prints."""
        return PREFIX + base64.b64encode(self.raw).decode("ascii")


def parse_public_key(text: str, path: str) -> PublicKey:
    """Read ``ed25519:<base64>``; refuse other spellings, points off the curve and weak keys."""
    if _TEXT.fullmatch(text) is None:
        raise InvalidDocument(
            path,
            f"not a public key {text[:60]!r}: expected 'ed25519:' and the base64 of 32 bytes, "
            "as `claim pubkey` prints it",
        )
    raw = base64.b64decode(text[len(PREFIX) :], validate=True)
    problem = _point_problem(raw)
    if problem is not None:
        raise InvalidDocument(path, problem)
    return PublicKey.from_raw(raw)


# --- Edwards25519 point checks -----------------------------------------------------------------
# Ed25519 verification accepts forged signatures under a small-order public key (the all-zero key
# verifies an all-zero signature on any message), so a policy must not be able to trust one. The
# check decodes the point (RFC 8032, section 5.1.3) and multiplies it by the cofactor 8.

_P = 2**255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _point_problem(raw: bytes) -> str | None:
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    sign = raw[31] >> 7
    if y >= _P:
        return "not a valid Ed25519 public key (non-canonical encoding)"
    y2 = y * y % _P
    x2 = (y2 - 1) * pow(_D * y2 + 1, _P - 2, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P or (x == 0 and sign):
        return "not a valid Ed25519 public key (not a point on the curve)"
    if x & 1 != sign:
        x = _P - x
    point = (x, y)
    for _ in range(3):
        point = _add(point, point)
    if point == (0, 1):
        return "a weak Ed25519 public key (small order): anyone could forge its signatures"
    return None


def _add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Affine addition on -x^2 + y^2 = 1 + d x^2 y^2 (complete: d is not a square)."""
    (x1, y1), (x2, y2) = a, b
    t = _D * x1 * x2 * y1 * y2 % _P
    x3 = (x1 * y2 + y1 * x2) * pow(1 + t, _P - 2, _P) % _P
    y3 = (y1 * y2 + x1 * x2) * pow(1 - t, _P - 2, _P) % _P
    return x3, y3
