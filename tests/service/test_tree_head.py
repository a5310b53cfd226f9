"""Signed tree heads: what a client reads back and checks, and every way a head is refused."""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from completion_claim.service import merkle
from completion_claim.service.records import TREE_HEAD_TYPE, TreeHead
from completion_claim.service.tree_head import (
    TreeHeadError,
    check_tree_head,
    sign_tree_head,
    tree_head_from_json,
)
from tests.service.conftest import LOG_KEY, OTHER_KEY, T0

ROOT = merkle.root([merkle.leaf_hash(b"one"), merkle.leaf_hash(b"two")]).hex()


def signed() -> TreeHead:
    return sign_tree_head(LOG_KEY, 2, ROOT, T0)


def test_a_head_survives_json_and_checks_with_its_key() -> None:
    head = signed()
    text = json.dumps(head.to_json())
    back = tree_head_from_json(json.loads(text))
    assert back == head
    assert back.envelope == head.envelope
    check_tree_head(back, LOG_KEY.public)
    check_tree_head(back, None)  # unpinned: the key the head names


def test_the_signed_payload_is_the_canonical_json_of_the_members() -> None:
    head = signed()
    payload = json.loads(base64.b64decode(head.envelope["payload"]))
    assert payload == {
        "_type": TREE_HEAD_TYPE,
        "size": 2,
        "root_hash": ROOT,
        "timestamp": "2026-08-27T18:00:00Z",
        "log_key": LOG_KEY.public.text,
    }


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"size": 3}, "the signed payload differs from the head's members"),
        ({"root_hash": merkle.EMPTY_ROOT.hex()}, "the signed payload differs"),
        ({"timestamp": T0.replace(year=2027)}, "the signed payload differs"),
    ],
)
def test_a_member_changed_after_signing_is_refused(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(TreeHeadError, match=problem):
        check_tree_head(replace(signed(), **change), LOG_KEY.public)


def test_a_head_signed_by_another_key_is_refused_when_the_key_is_pinned() -> None:
    other = sign_tree_head(OTHER_KEY, 2, ROOT, T0)
    check_tree_head(other, None)  # it is a well-signed head, of someone else's log
    with pytest.raises(TreeHeadError, match=r"names log key .* not the pinned"):
        check_tree_head(other, LOG_KEY.public)


def test_a_head_that_names_the_log_key_but_is_signed_by_another_is_refused() -> None:
    head = signed()
    forged = sign_tree_head(OTHER_KEY, 2, ROOT, T0)
    lying = replace(head, envelope=forged.envelope)
    with pytest.raises(TreeHeadError, match="signed payload differs"):
        check_tree_head(lying, None)
    payload_kept = copy.deepcopy(head.envelope)
    payload_kept["signatures"] = forged.envelope["signatures"]
    with pytest.raises(TreeHeadError, match="the signature does not verify"):
        check_tree_head(replace(head, envelope=payload_kept), None)


def test_an_envelope_of_another_payload_type_is_refused() -> None:
    head = signed()
    envelope = LOG_KEY.sign_envelope(
        "application/vnd.in-toto+json", base64.b64decode(head.envelope["payload"])
    )
    with pytest.raises(TreeHeadError, match="payload type is not a tree head's"):
        check_tree_head(replace(head, envelope=envelope), None)


def test_a_broken_envelope_is_one_line() -> None:
    with pytest.raises(TreeHeadError, match="tree head at size 2: signatures is missing"):
        check_tree_head(replace(signed(), envelope={"payloadType": "x", "payload": ""}), None)


def good_json() -> dict[str, Any]:
    return signed().to_json()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"size": -1}, "size is not a non-negative integer"),
        ({"size": True}, "size is not a non-negative integer"),
        ({"size": "2"}, "size is not a non-negative integer"),
        ({"root_hash": "AB" * 32}, "root_hash is not a SHA-256 hash in lowercase hex"),
        ({"root_hash": "ab"}, "root_hash is not a SHA-256 hash"),
        ({"timestamp": "2026-08-27 18:00"}, "timestamp: not an RFC 3339 date-time"),
        ({"timestamp": "2026-08-27T18:00:00"}, "timestamp: no UTC offset"),
        ({"log_key": "ed25519:abc"}, "log_key: not a public key"),
        ({"log_key": 7}, "log_key: not a string"),
        ({"envelope": []}, "envelope is not a JSON object"),
        ({"_type": "https://example.com/other"}, "_type is not"),
        ({"extra": 1}, "unknown member 'extra'"),
    ],
)
def test_a_malformed_head_is_refused_in_one_line(change: dict[str, Any], problem: str) -> None:
    document = {**good_json(), **change}
    with pytest.raises(TreeHeadError) as raised:
        tree_head_from_json(document, "kept.json")
    assert problem in str(raised.value)
    assert str(raised.value).startswith("kept.json")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "member", ["_type", "size", "root_hash", "timestamp", "log_key", "envelope"]
)
def test_a_head_missing_a_member_is_refused(member: str) -> None:
    document = good_json()
    del document[member]
    with pytest.raises(TreeHeadError, match=f"{member} is missing"):
        tree_head_from_json(document)


def test_a_head_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(TreeHeadError, match="tree head: not a JSON object"):
        tree_head_from_json([1, 2])
