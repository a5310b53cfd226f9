"""Write ``tests/service/vectors/rfc6962.json`` from the naive reference (run it as
``python -m tests.service.generate_vectors``); a test fails when the committed file drifts.

The vectors hold, for 17 leaf inputs: the root of every size 0..17, the audit path of every
(index, size), the consistency proof of every (old size, new size), and proofs that must be
refused, each saying why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.service import rfc6962_reference as ref

VECTOR_FILE = Path(__file__).resolve().parent / "vectors" / "rfc6962.json"
LEAF_COUNT = 17


def leaves() -> list[bytes]:
    """Leaf inputs of varied lengths; the first is empty, and two start with the bytes the
    leaf and node prefixes use, so a missing prefix would show."""
    found = [b"", b"\x00", b"\x01\x02"]
    found += [f"entry {i}: {'x' * (i % 5)}".encode() for i in range(3, LEAF_COUNT)]
    return found


def vectors() -> dict[str, Any]:
    d = leaves()
    inclusion = [
        {
            "index": m,
            "size": n,
            "leaf_hash": ref.mth([d[m]]).hex(),
            "path": [h.hex() for h in ref.path(m, d[:n])],
        }
        for n in range(1, LEAF_COUNT + 1)
        for m in range(n)
    ]
    consistency = [
        {"old_size": m, "new_size": n, "path": [h.hex() for h in ref.proof(m, d[:n])]}
        for n in range(LEAF_COUNT + 1)
        for m in range(n + 1)
    ]
    roots = [ref.mth(d[:n]).hex() for n in range(LEAF_COUNT + 1)]
    return {
        "description": "RFC 6962 section 2.1 vectors written by tests/service/generate_vectors.py "
        "from the naive reference in tests/service/rfc6962_reference.py",
        "leaves": [leaf.hex() for leaf in d],
        "roots": [{"size": n, "root": root} for n, root in enumerate(roots)],
        "inclusion": inclusion,
        "consistency": consistency,
        "invalid_inclusion": _invalid_inclusion(d, roots),
        "invalid_consistency": _invalid_consistency(d, roots),
    }


def _flip(hex_hash: str) -> str:
    """The hash with its last bit changed."""
    raw = bytearray(bytes.fromhex(hex_hash))
    raw[-1] ^= 1
    return raw.hex()


def _invalid_inclusion(d: list[bytes], roots: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def case(why: str, m: int, n: int, **change: Any) -> None:
        item: dict[str, Any] = {
            "why": why,
            "index": m,
            "size": n,
            "leaf_hash": ref.mth([d[m % len(d)]]).hex(),
            "path": [h.hex() for h in ref.path(m, d[:n])] if m < n else [],
            "root": roots[n],
        }
        item.update(change)
        found.append(item)

    for m, n in ((0, 1), (2, 5), (4, 5), (6, 7), (8, 16), (16, 17), (13, 17)):
        good = [h.hex() for h in ref.path(m, d[:n])]
        case("wrong root", m, n, root=_flip(roots[n]))
        case("wrong leaf hash", m, n, leaf_hash=_flip(ref.mth([d[m]]).hex()))
        case("an extra path element", m, n, path=[*good, roots[n]])
        case("an extra path element at the start", m, n, path=[roots[0], *good])
        if good:
            for i in range(len(good)):
                tampered = list(good)
                tampered[i] = _flip(tampered[i])
                case(f"path element {i} tampered", m, n, path=tampered)
            case("the path truncated", m, n, path=good[:-1])
            case("the path missing its first element", m, n, path=good[1:])
            if len(good) > 1:
                case("the path reversed", m, n, path=good[::-1])
        if m + 1 < n:
            case("the wrong index", m + 1, n, path=good, leaf_hash=ref.mth([d[m]]).hex())
        if n + 1 <= len(d):
            case("the path of a smaller tree", m, n + 1, path=good, root=roots[n + 1])
        case("a path element that is not hex", m, n, path=["zz" * 32, *good[1:]])
        case("a path element of the wrong length", m, n, path=["ab" * 31, *good[1:]])
        case("a path element in upper case", m, n, path=[h.upper() for h in good] or ["AB" * 32])
    case("index equal to the size", 5, 5, leaf_hash=ref.mth([d[5]]).hex())
    case("index beyond the size", 9, 5, leaf_hash=ref.mth([d[9]]).hex())
    case("a negative index", -1, 5, leaf_hash=ref.mth([d[4]]).hex())
    case("an empty tree", 0, 0, leaf_hash=ref.mth([d[0]]).hex())
    case("a root that is not hex", 2, 5, root="not a hash")
    case("a leaf hash of the wrong length", 2, 5, leaf_hash="00" * 31)
    return found


def _invalid_consistency(d: list[bytes], roots: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def case(why: str, m: int, n: int, **change: Any) -> None:
        item: dict[str, Any] = {
            "why": why,
            "old_size": m,
            "new_size": n,
            "path": [h.hex() for h in ref.proof(m, d[:n])] if 0 <= m <= n else [],
            "old_root": roots[m] if 0 <= m < len(roots) else roots[0],
            "new_root": roots[n],
        }
        item.update(change)
        found.append(item)

    for m, n in ((1, 2), (3, 7), (4, 8), (4, 17), (6, 8), (7, 16), (15, 17), (16, 17)):
        good = [h.hex() for h in ref.proof(m, d[:n])]
        case("wrong old root", m, n, old_root=_flip(roots[m]))
        case("wrong new root", m, n, new_root=_flip(roots[n]))
        case("the roots swapped", m, n, old_root=roots[n], new_root=roots[m])
        for i in range(len(good)):
            tampered = list(good)
            tampered[i] = _flip(tampered[i])
            case(f"proof element {i} tampered", m, n, path=tampered)
        case("the proof truncated", m, n, path=good[:-1])
        case("the proof missing its first element", m, n, path=good[1:])
        case("an extra proof element", m, n, path=[*good, roots[n]])
        if m & (m - 1):
            case("the old root prepended", m, n, path=[roots[m], *good])
        if m + 1 < n:
            case("the wrong old size", m + 1, n, path=good, old_root=roots[m])
        if n + 1 <= len(d):
            case("the proof of a smaller tree", m, n + 1, path=good, new_root=roots[n + 1])
        case("a proof element that is not hex", m, n, path=["zz" * 32, *good[1:]])
        case("a proof element of the wrong length", m, n, path=["ab" * 33, *good[1:]])
    case("old size larger than new size", 9, 5, old_root=roots[9])
    case("same size, different roots", 5, 5, old_root=roots[4])
    case("same size with a non-empty proof", 5, 5, path=[roots[1]])
    case("from the empty tree with a non-empty proof", 0, 5, path=[roots[1]])
    case("from the empty tree with a wrong old root", 0, 5, old_root=roots[1])
    case("a negative old size", -1, 5)
    case("an empty proof between different sizes", 3, 5, path=[])
    return found


def render() -> str:
    return json.dumps(vectors(), indent=1) + "\n"


if __name__ == "__main__":
    VECTOR_FILE.write_text(render(), encoding="utf-8")
