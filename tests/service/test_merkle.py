"""merkle.py against the RFC 6962 vectors written from the naive reference, and its refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from completion_claim.service import merkle
from completion_claim.service.merkle import ProofError
from completion_claim.service.records import ConsistencyProof, InclusionProof
from tests.service import generate_vectors

VECTORS: dict[str, Any] = json.loads(generate_vectors.VECTOR_FILE.read_text(encoding="utf-8"))
LEAVES = [bytes.fromhex(leaf) for leaf in VECTORS["leaves"]]
LEAF_HASHES = [merkle.leaf_hash(leaf) for leaf in LEAVES]
ROOTS = {item["size"]: item["root"] for item in VECTORS["roots"]}


def subtree(start: int, end: int) -> bytes:
    return merkle.root(LEAF_HASHES[start:end])


def by_blocks(start: int, end: int) -> bytes:
    """The way a store answers: from the complete subtrees, each hashed from its leaves."""
    hashes = [
        merkle.root(LEAF_HASHES[pos << level : (pos + 1) << level])
        for level, pos in merkle.blocks(start, end)
    ]
    return merkle.fold(hashes)


def test_the_committed_vectors_are_what_the_generator_writes() -> None:
    committed = generate_vectors.VECTOR_FILE.read_text(encoding="utf-8")
    assert committed == generate_vectors.render(), "run python -m tests.service.generate_vectors"


def test_the_vectors_cover_every_size_index_and_pair() -> None:
    n = len(LEAVES)
    assert n >= 17
    assert sorted(ROOTS) == list(range(n + 1))
    assert len(VECTORS["inclusion"]) == n * (n + 1) // 2
    assert len(VECTORS["consistency"]) == (n + 1) * (n + 2) // 2


def test_the_empty_tree_hashes_to_the_hash_of_nothing() -> None:
    assert ROOTS[0] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert merkle.root([]).hex() == ROOTS[0]


@pytest.mark.parametrize("size", range(len(LEAVES) + 1))
def test_roots_match_the_vectors(size: int) -> None:
    assert merkle.root(LEAF_HASHES[:size]).hex() == ROOTS[size]
    if size:
        assert by_blocks(0, size).hex() == ROOTS[size]


def test_inclusion_paths_match_and_verify() -> None:
    for item in VECTORS["inclusion"]:
        index, size = item["index"], item["size"]
        assert LEAF_HASHES[index].hex() == item["leaf_hash"]
        for source in (subtree, by_blocks):
            built = merkle.inclusion_path(index, size, source)
            assert merkle.hex_path(built) == tuple(item["path"]), (index, size)
        proof = InclusionProof(index, size, item["leaf_hash"], tuple(item["path"]))
        merkle.verify_inclusion(proof, ROOTS[size])


def test_consistency_proofs_match_and_verify() -> None:
    for item in VECTORS["consistency"]:
        old, new = item["old_size"], item["new_size"]
        for source in (subtree, by_blocks):
            built = merkle.consistency_path(old, new, source)
            assert merkle.hex_path(built) == tuple(item["path"]), (old, new)
        proof = ConsistencyProof(old, new, tuple(item["path"]))
        merkle.verify_consistency(proof, ROOTS[old], ROOTS[new])


@pytest.mark.parametrize(
    "item", VECTORS["invalid_inclusion"], ids=lambda item: f"{item['why']}-{item['index']}"
)
def test_invalid_inclusion_proofs_are_refused(item: dict[str, Any]) -> None:
    proof = InclusionProof(item["index"], item["size"], item["leaf_hash"], tuple(item["path"]))
    with pytest.raises(ProofError) as raised:
        merkle.verify_inclusion(proof, item["root"])
    assert "\n" not in str(raised.value)
    assert f"entry {item['index']} in size {item['size']}" in str(raised.value)


@pytest.mark.parametrize(
    "item",
    VECTORS["invalid_consistency"],
    ids=lambda item: f"{item['why']}-{item['old_size']}-{item['new_size']}",
)
def test_invalid_consistency_proofs_are_refused(item: dict[str, Any]) -> None:
    proof = ConsistencyProof(item["old_size"], item["new_size"], tuple(item["path"]))
    with pytest.raises(ProofError) as raised:
        merkle.verify_consistency(proof, item["old_root"], item["new_root"])
    assert "\n" not in str(raised.value)
    assert f"from size {item['old_size']} to size {item['new_size']}" in str(raised.value)


def test_proofs_are_not_built_outside_the_tree() -> None:
    with pytest.raises(ProofError, match="no leaf 3 in a tree of 3 leaves"):
        merkle.inclusion_path(3, 3, subtree)
    with pytest.raises(ProofError, match="from size 4 to size 3"):
        merkle.consistency_path(4, 3, subtree)


def test_a_leaf_is_not_taken_for_a_node() -> None:
    """The 0x00/0x01 prefixes (RFC 6962, 2.1): the bytes of an inner node, hashed as a leaf,
    give a different hash than the node."""
    left, right = LEAF_HASHES[0], LEAF_HASHES[1]
    assert merkle.leaf_hash(left + right) != merkle.node_hash(left, right)


def test_a_range_the_recursion_never_reaches_is_refused() -> None:
    with pytest.raises(ValueError, match="not a subtree"):
        merkle.blocks(1, 4)


def test_proofs_read_back_from_json() -> None:
    item = VECTORS["inclusion"][40]
    proof = InclusionProof(item["index"], item["size"], item["leaf_hash"], tuple(item["path"]))
    assert merkle.inclusion_proof_from_json(proof.to_json()) == proof
    consistency = ConsistencyProof(3, 7, tuple(VECTORS["consistency"][31]["path"]))
    assert merkle.consistency_proof_from_json(consistency.to_json()) == consistency


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], "not a JSON object"),
        ({"index": 0, "tree_size": 1, "leaf_hash": "00", "path": [], "x": 1}, "exactly"),
        ({"index": -1, "tree_size": 1, "leaf_hash": "00", "path": []}, "index is not"),
        ({"index": True, "tree_size": 1, "leaf_hash": "00", "path": []}, "index is not"),
        ({"index": 0, "tree_size": "1", "leaf_hash": "00", "path": []}, "tree_size is not"),
        ({"index": 0, "tree_size": 1, "leaf_hash": 0, "path": []}, "leaf_hash is not a string"),
        ({"index": 0, "tree_size": 1, "leaf_hash": "00", "path": "ab"}, "path is not a list"),
        ({"index": 0, "tree_size": 1, "leaf_hash": "00", "path": [1]}, "path is not a list"),
        ({"index": 0, "tree_size": 1, "leaf_hash": "", "path": ["00"] * 65}, "more than 64"),
    ],
)
def test_a_malformed_inclusion_proof_is_refused(document: object, problem: str) -> None:
    with pytest.raises(ProofError, match=problem):
        merkle.inclusion_proof_from_json(document)


def test_a_malformed_consistency_proof_is_refused() -> None:
    with pytest.raises(ProofError, match="old_size is not a non-negative integer"):
        merkle.consistency_proof_from_json({"old_size": 1.5, "new_size": 2, "path": []})
