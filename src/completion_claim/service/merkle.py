"""The RFC 6962 Merkle tree (section 2.1): hashes, audit paths, consistency proofs, checking them.

Pure: no storage and no I/O. Proofs are built from a callback that answers the hash of any
subtree ``[start, end)`` the RFC's recursion reaches, so a store can serve them from its saved
nodes of complete subtrees (``blocks`` names the ones a subtree is made of) instead of rehashing
every leaf. Checking needs nothing but the proof and the roots.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import ClaimError
from .records import ConsistencyProof, InclusionProof

HASH_BYTES = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The root of a tree with no leaves: the hash of the empty string (RFC 6962, 2.1)."""

MAX_PATH = 64
"""No audit path or consistency proof of a tree with fewer than 2**63 leaves is longer."""

SubtreeHash = Callable[[int, int], bytes]
"""The Merkle tree hash of the leaves ``[start, end)``."""


class ProofError(ClaimError):
    """A proof does not hold, or cannot be read: one line saying which."""


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || data): the leaf prefix keeps a leaf from passing for an inner node."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(size: int) -> int:
    """The largest power of two smaller than ``size`` (size >= 2): where MTH splits its leaves."""
    return 1 << ((size - 1).bit_length() - 1)


def blocks(start: int, end: int) -> list[tuple[int, int]]:
    """The complete subtrees ``(level, position)`` that make up ``[start, end)``, left to right.

    A complete subtree at ``level`` L and ``position`` p holds the 2**L leaves from p * 2**L.
    The RFC's recursion only reaches ranges whose start is a multiple of the smallest power of
    two at least as large as the range, and then the range is these blocks, one per set bit of
    its size, largest first; its hash is :func:`fold` of their hashes.
    """
    size = end - start
    if size <= 0 or start % (1 << (size - 1).bit_length()):
        raise ValueError(f"[{start}, {end}) is not a subtree of a Merkle tree")
    found = []
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            found.append((level, start >> level))
            start += 1 << level
    return found


def fold(hashes: Sequence[bytes]) -> bytes:
    """The hash of consecutive blocks (as :func:`blocks` lists them): each block of the RFC's
    split is the left child of the rest, so they join from the right."""
    if not hashes:
        return EMPTY_ROOT
    result = hashes[-1]
    for left in reversed(hashes[:-1]):
        result = node_hash(left, result)
    return result


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """The Merkle tree hash (MTH) of a list of leaf hashes (not of leaf data)."""
    level = list(leaf_hashes)
    if not level:
        return EMPTY_ROOT
    # Pairing neighbours level by level and carrying an odd last node up unchanged builds the
    # same tree as the RFC's split at the largest power of two.
    while len(level) > 1:
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def inclusion_path(index: int, size: int, subtree: SubtreeHash) -> list[bytes]:
    """The audit path of leaf ``index`` in the tree of ``size`` leaves (RFC 6962, 2.1.1), leaf
    side first."""
    if not 0 <= index < size:
        raise ProofError(f"no leaf {index} in a tree of {size} leaves")
    siblings = []
    start, end = 0, size
    while end - start > 1:
        middle = start + split(end - start)
        if index < middle:
            siblings.append(subtree(middle, end))
            end = middle
        else:
            siblings.append(subtree(start, middle))
            start = middle
    siblings.reverse()
    return siblings


def consistency_path(old_size: int, new_size: int, subtree: SubtreeHash) -> list[bytes]:
    """The proof that the tree of ``old_size`` leaves is a prefix of the one of ``new_size``
    (RFC 6962, 2.1.2); empty when the old tree is empty or the same size."""
    if not 0 <= old_size <= new_size:
        raise ProofError(f"no consistency proof from size {old_size} to size {new_size}")
    if old_size in (0, new_size):
        return []
    nodes = []
    start, end, old = 0, new_size, old_size
    # ``whole``: the old tree is still the left edge of the range, so its own root is known to
    # the checker and is not sent.
    whole = True
    while end - start != old:
        middle = start + split(end - start)
        if old <= middle - start:
            nodes.append(subtree(middle, end))
            end = middle
        else:
            nodes.append(subtree(start, middle))
            old -= middle - start
            start = middle
            whole = False
    if not whole:
        nodes.append(subtree(start, end))
    nodes.reverse()
    return nodes


def verify_inclusion(proof: InclusionProof, root_hash: str) -> None:
    """Raise :class:`ProofError` unless ``proof`` leads from its leaf hash to ``root_hash``."""
    where = f"inclusion proof of entry {proof.index} in size {proof.tree_size}"
    if not 0 <= proof.index < proof.tree_size:
        raise ProofError(f"{where}: the index is not below the tree size")
    expected = decode_hash(root_hash, f"{where}: root hash")
    computed = decode_hash(proof.leaf_hash, f"{where}: leaf hash")
    path = _decode_path(proof.path, where)
    # Walk up from the leaf: ``index`` is the node's position on its level and ``last`` the
    # position of the level's last node. A node that is a right child, or the last one of its
    # level (and so the left child of nothing), takes its sibling from the left.
    index, last = proof.index, proof.tree_size - 1
    for sibling in path:
        if last == 0:
            raise ProofError(f"{where}: the path is longer than the tree is high")
        if index & 1 or index == last:
            computed = node_hash(sibling, computed)
            # A last node with no right sibling is carried up unchanged until it is a right child.
            while index & 1 == 0 and index != 0:
                index >>= 1
                last >>= 1
        else:
            computed = node_hash(computed, sibling)
        index >>= 1
        last >>= 1
    if last != 0:
        raise ProofError(f"{where}: the path is shorter than the tree is high")
    if computed != expected:
        raise ProofError(f"{where}: the path does not lead to the root hash")


def verify_consistency(proof: ConsistencyProof, old_root: str, new_root: str) -> None:
    """Raise :class:`ProofError` unless ``proof`` shows the tree of ``old_root`` is a prefix of
    the tree of ``new_root``."""
    old_size, new_size = proof.old_size, proof.new_size
    where = f"consistency proof from size {old_size} to size {new_size}"
    if not 0 <= old_size <= new_size:
        raise ProofError(f"{where}: the old size is larger than the new one")
    old_hash = decode_hash(old_root, f"{where}: old root")
    new_hash = decode_hash(new_root, f"{where}: new root")
    path = _decode_path(proof.path, where)
    if old_size in (0, new_size):
        if path:
            raise ProofError(f"{where}: the proof should be empty")
        if old_size == 0 and old_hash != EMPTY_ROOT:
            raise ProofError(f"{where}: the old root is not the empty tree's")
        if old_size == new_size and old_hash != new_hash:
            raise ProofError(f"{where}: the two roots of the same size differ")
        return
    if old_size & (old_size - 1) == 0:
        # The old tree is one complete subtree of the new one; its root starts the walk.
        path = [old_hash, *path]
    if not path:
        raise ProofError(f"{where}: the proof is empty")
    index, last = old_size - 1, new_size - 1
    # Climb from the old tree's last leaf to the top of the complete subtree it ends.
    while index & 1:
        index >>= 1
        last >>= 1
    old_computed = new_computed = path[0]
    for node in path[1:]:
        if last == 0:
            raise ProofError(f"{where}: the proof is longer than the tree is high")
        if index & 1 or index == last:
            old_computed = node_hash(node, old_computed)
            new_computed = node_hash(node, new_computed)
            while index & 1 == 0 and index != 0:
                index >>= 1
                last >>= 1
        else:
            new_computed = node_hash(new_computed, node)
        index >>= 1
        last >>= 1
    if last != 0:
        raise ProofError(f"{where}: the proof is shorter than the tree is high")
    if old_computed != old_hash:
        raise ProofError(f"{where}: the proof does not lead to the old root")
    if new_computed != new_hash:
        raise ProofError(f"{where}: the proof does not lead to the new root")


def decode_hash(text: object, what: str) -> bytes:
    """A SHA-256 hash written as 64 lowercase hex digits, or a :class:`ProofError` naming it."""
    if (
        not isinstance(text, str)
        or len(text) != 2 * HASH_BYTES
        or text.strip("0123456789abcdef") != ""
    ):
        shown = repr(text)[:40]
        raise ProofError(f"{what} is not a SHA-256 hash in lowercase hex: {shown}")
    return bytes.fromhex(text)


def hex_path(nodes: Iterable[bytes]) -> tuple[str, ...]:
    return tuple(node.hex() for node in nodes)


def _decode_path(path: Sequence[object], where: str) -> list[bytes]:
    if len(path) > MAX_PATH:
        raise ProofError(f"{where}: the path has more than {MAX_PATH} hashes")
    return [decode_hash(node, f"{where}: path[{i}]") for i, node in enumerate(path)]


def inclusion_proof_from_json(obj: object) -> InclusionProof:
    """Read ``InclusionProof.to_json()`` as a service answers it; shape only, not validity."""
    members = _proof_members(obj, "inclusion proof", ("index", "tree_size", "leaf_hash", "path"))
    leaf = members["leaf_hash"]
    if not isinstance(leaf, str):
        raise ProofError("inclusion proof: leaf_hash is not a string")
    return InclusionProof(members["index"], members["tree_size"], leaf, members["path"])


def consistency_proof_from_json(obj: object) -> ConsistencyProof:
    """Read ``ConsistencyProof.to_json()``; shape only, not validity."""
    members = _proof_members(obj, "consistency proof", ("old_size", "new_size", "path"))
    return ConsistencyProof(members["old_size"], members["new_size"], members["path"])


def _proof_members(obj: object, what: str, names: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ProofError(f"{what}: not a JSON object")
    if set(obj) != set(names):
        raise ProofError(f"{what}: expected exactly the members {', '.join(names)}")
    found = dict(obj)
    for name in names:
        value = obj[name]
        if name.endswith(("size", "index")) and (type(value) is not int or value < 0):
            raise ProofError(f"{what}: {name} is not a non-negative integer")
    path = obj["path"]
    if not isinstance(path, list) or not all(isinstance(node, str) for node in path):
        raise ProofError(f"{what}: path is not a list of strings")
    if len(path) > MAX_PATH:
        raise ProofError(f"{what}: the path has more than {MAX_PATH} hashes")
    found["path"] = tuple(path)
    return found
