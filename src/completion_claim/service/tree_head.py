"""Signed tree heads: made by the log's key, read back from JSON, checked by anyone.

A head's envelope is DSSE over the canonical JSON (RFC 8785) of ``TreeHead.payload()``. The
plain members beside the envelope are only a convenience: :func:`check_tree_head` requires the
signed payload to be exactly those members, so a reader that trusts them after the check trusts
what was signed.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from ..errors import ClaimError, InvalidDocument
from ..public_key import PublicKey, parse_public_key
from ..timefmt import parse_time
from ..trust import dsse
from ..trust.canonical import canonical_bytes
from ..trust.keys import SigningKey
from .merkle import ProofError, decode_hash
from .records import TREE_HEAD_PAYLOAD_TYPE, TREE_HEAD_TYPE, TreeHead

_MEMBERS = ("_type", "size", "root_hash", "timestamp", "log_key", "envelope")


class TreeHeadError(ClaimError):
    """A tree head that cannot be read, or whose signature does not hold."""


def sign_tree_head(key: SigningKey, size: int, root_hash: str, timestamp: datetime) -> TreeHead:
    unsigned = TreeHead(size, root_hash, timestamp, key.public.text, envelope={})
    envelope = key.sign_envelope(TREE_HEAD_PAYLOAD_TYPE, canonical_bytes(unsigned.payload()))
    return TreeHead(size, root_hash, timestamp, key.public.text, envelope)


def tree_head_from_json(obj: object, source: str = "tree head") -> TreeHead:
    """Read a head as ``TreeHead.to_json()`` writes it; its signature is not checked here."""
    if not isinstance(obj, dict):
        raise TreeHeadError(f"{source}: not a JSON object")
    missing = [name for name in _MEMBERS if name not in obj]
    if missing:
        raise TreeHeadError(f"{source}: {missing[0]} is missing")
    unknown = sorted(set(obj) - set(_MEMBERS))
    if unknown:
        raise TreeHeadError(f"{source}: unknown member {unknown[0][:40]!r}")
    if obj["_type"] != TREE_HEAD_TYPE:
        raise TreeHeadError(f"{source}: _type is not {TREE_HEAD_TYPE!r}")
    size = obj["size"]
    if type(size) is not int or size < 0:
        raise TreeHeadError(f"{source}: size is not a non-negative integer")
    try:
        decode_hash(obj["root_hash"], f"{source}: root_hash")
        timestamp = parse_time(obj["timestamp"], "timestamp")
        log_key = obj["log_key"]
        if not isinstance(log_key, str):
            raise InvalidDocument("log_key", "not a string")
        _log_key(log_key)
    except ProofError as error:
        raise TreeHeadError(str(error)) from None
    except InvalidDocument as error:
        raise TreeHeadError(f"{source}: {error}") from None
    if not isinstance(obj["envelope"], dict):
        raise TreeHeadError(f"{source}: envelope is not a JSON object")
    return TreeHead(size, obj["root_hash"], timestamp, log_key, obj["envelope"])


def check_tree_head(head: TreeHead, key: PublicKey | None) -> None:
    """Raise :class:`TreeHeadError` unless ``head`` is signed by ``key`` (when pinned; else by
    the key the head names) over exactly its own members."""
    where = f"tree head at size {head.size}"
    if key is not None and head.log_key != key.text:
        raise TreeHeadError(f"{where} names log key {head.log_key}, not the pinned {key.text}")
    try:
        signer = key or _log_key(head.log_key)
        envelope = dsse.decode_envelope(head.envelope)
    except ClaimError as error:
        raise TreeHeadError(f"{where}: {error}") from None
    if envelope.payload_type != TREE_HEAD_PAYLOAD_TYPE:
        raise TreeHeadError(f"{where}: the envelope's payload type is not a tree head's")
    if envelope.payload != canonical_bytes(head.payload()):
        raise TreeHeadError(f"{where}: the signed payload differs from the head's members")
    if dsse.first_verifying_key(envelope, [signer]) is None:
        raise TreeHeadError(f"{where}: the signature does not verify with {signer.text}")


@lru_cache(maxsize=64)
def _log_key(text: str) -> PublicKey:
    """A log signs every head with one key: checking its point once is enough (it costs about
    a millisecond, more than the signature)."""
    return parse_public_key(text, "log_key")
