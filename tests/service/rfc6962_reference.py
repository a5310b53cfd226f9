"""A deliberately naive RFC 6962 (section 2.1), written from its recursive definitions alone.

It shares no code with ``completion_claim.service.merkle``: every function here is the RFC's
definition read literally, over the list of leaf inputs, rehashing whatever it needs. It is slow
and obviously right, which is what a reference for the test vectors should be.
"""

from __future__ import annotations

import hashlib


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d: list[bytes]) -> bytes:
    """MTH(D[n])."""
    n = len(d)
    if n == 0:
        return _sha256(b"")
    if n == 1:
        return _sha256(b"\x00" + d[0])
    k = _k(n)
    return _sha256(b"\x01" + mth(d[:k]) + mth(d[k:]))


def path(m: int, d: list[bytes]) -> list[bytes]:
    """PATH(m, D[n]): the audit path of leaf m."""
    n = len(d)
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return [*path(m, d[:k]), mth(d[k:])]
    return [*path(m - k, d[k:]), mth(d[:k])]


def proof(m: int, d: list[bytes]) -> list[bytes]:
    """PROOF(m, D[n]) for 0 < m < n; the empty list for m == 0 or m == n, as usual."""
    if m in (0, len(d)):
        return []
    return subproof(m, d, True)


def subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    """SUBPROOF(m, D[n], b)."""
    n = len(d)
    if m == n:
        return [] if b else [mth(d)]
    k = _k(n)
    if m <= k:
        return [*subproof(m, d[:k], b), mth(d[k:])]
    return [*subproof(m - k, d[k:], False), mth(d[:k])]
