"""Malformed input ends in InvalidDocument with one clear line, never another exception.

Through the library: ``load_claim(bytes)`` is what the command line and the batch mode call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from completion_claim import InvalidDocument, load_claim, load_policy

VALID: dict[str, Any] = {
    "spec_version": "0.1",
    "task": {"id": "deploy-4471"},
    "claimed_outcome": "Updated the billing address on account 4471.",
    "mutations": [
        {"id": "m1", "kind": "state_write", "target": "accounts/4471", "at": "2026-08-27T18:04:02Z"}
    ],
    "evidence": [
        {
            "check_type": "state_readback",
            "target": "accounts/4471",
            "expected": {"billing_zip": "94107"},
            "observed_value": {"billing_zip": "94107"},
            "at": "2026-08-27T18:04:09Z",
            "covers": ["m1"],
            "verifier": {"id": "gate/0.3", "kind": "independent"},
        }
    ],
}
VALID_BYTES = json.dumps(VALID, indent=1).encode("utf-8")
RAW = b'"@@RAW@@"'


def with_raw(raw: bytes) -> bytes:
    """The valid claim with ``raw`` spliced in as the readback's observed_value."""
    doc = json.loads(VALID_BYTES)
    doc["evidence"][0]["observed_value"] = "@@RAW@@"
    text = json.dumps(doc).encode("utf-8")
    assert RAW in text
    return text.replace(RAW, raw)


def rejected(data: bytes, **kwargs: int) -> InvalidDocument:
    """Load ``data``; it must raise InvalidDocument (any other exception fails the test)."""
    with pytest.raises(InvalidDocument) as caught:
        load_claim(data, **kwargs)
    message = str(caught.value)
    assert message.strip(), "the message must say something"
    assert "\n" not in message, f"one line, got {message!r}"
    assert len(message) < 300, "a line, not a dump of the input"
    return caught.value


def test_the_valid_claim_used_here_loads() -> None:
    assert load_claim(VALID_BYTES).task.id == "deploy-4471"
    assert load_claim(with_raw(b"12")).evidence[0].observed_value == 12


# --- truncated JSON -------------------------------------------------------------------------------


def test_every_truncation_of_a_claim_is_rejected() -> None:
    for cut in range(len(VALID_BYTES.rstrip())):
        error = rejected(VALID_BYTES[:cut])
        assert error.path == ""
        assert error.problem.startswith("not JSON")


# --- non-object roots -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        b"[]",
        b"[{}]",
        b'"claim"',
        b"42",
        b"-0.5",
        b"null",
        b"true",
        b"false",
        b"[" + VALID_BYTES + b"]",
    ],
)
def test_non_object_roots_are_rejected(document: bytes) -> None:
    error = rejected(document)
    assert error.path == ""
    assert "object" in error.problem


@pytest.mark.parametrize("document", [b"", b"   ", b"\n"])
def test_empty_documents_are_rejected(document: bytes) -> None:
    assert rejected(document).path == ""


# --- absurd nesting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        b"[" * 100_000,  # deep and truncated
        with_raw(b"[" * 100_000 + b"]" * 100_000),  # deep inside a free-form member
    ],
    ids=["arrays", "objects", "unclosed", "inside-observed-value"],
)
def test_100000_deep_nesting_is_rejected(document: bytes) -> None:
    rejected(document)


def test_free_form_nesting_deeper_than_64_is_rejected_with_its_path() -> None:
    assert load_claim(with_raw(b"[" * 64 + b"]" * 64)).evidence[0].observed_value is not None
    error = rejected(with_raw(b"[" * 65 + b"]" * 65))
    assert error.path == "evidence[0].observed_value"


# --- invalid UTF-8 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x80", b"\xf5\x80\x80\x80"],
    ids=["ff", "fe-ff", "overlong", "surrogate", "truncated", "continuation", "above-max"],
)
def test_invalid_utf8_is_rejected(bad: bytes) -> None:
    document = VALID_BYTES.replace(b"Updated", b"Updated" + bad)
    error = rejected(document)
    assert error.path == ""
    assert "UTF-8" in error.problem


def test_utf16_is_not_utf8_json() -> None:
    rejected(json.dumps(VALID).encode("utf-16"))


# --- huge numbers, NaN, Infinity ------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [
        b"1e999",
        b"-1e999",
        b"1" + b"0" * 400 + b".0",  # a float literal beyond the double range
        b"9" * 100_000,  # an integer of 100,000 digits
        b"-" + b"9" * 100_000,
    ],
    ids=["1e999", "-1e999", "1e400-written-out", "100000-digits", "minus-100000-digits"],
)
def test_huge_numbers_are_rejected(number: bytes) -> None:
    error = rejected(with_raw(number))
    assert error.path == ""


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_finite_constants_are_rejected(constant: bytes) -> None:
    assert rejected(with_raw(constant)).path == ""


def test_a_huge_number_in_max_age_s_is_rejected() -> None:
    doc = dict(VALID, policy={"id": "p", "requires": [], "max_age_s": 1})
    text = json.dumps(doc).encode("utf-8").replace(b'"max_age_s": 1', b'"max_age_s": 1e999')
    rejected(text)


# --- size limit -----------------------------------------------------------------------------------


def test_a_document_over_the_size_limit_is_rejected() -> None:
    error = rejected(VALID_BYTES, max_bytes=len(VALID_BYTES) - 1)
    assert "size limit" in error.problem
    assert load_claim(VALID_BYTES, max_bytes=len(VALID_BYTES)).task.id == "deploy-4471"


def test_the_size_limit_applies_before_parsing() -> None:
    """Garbage over the limit is reported as too big, not as bad JSON: nothing was parsed."""
    error = rejected(b"[" * 2000, max_bytes=1000)
    assert "size limit" in error.problem


def test_policies_have_the_same_limits() -> None:
    with pytest.raises(InvalidDocument, match="size limit"):
        load_policy(b'{"id": "p", "requires": [], "max_age_s": 300}', max_bytes=10)
    with pytest.raises(InvalidDocument):
        load_policy(b"[" * 100_000)


# --- duplicate keys -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        VALID_BYTES[:-1].rstrip() + b', "evidence": []}',
        with_raw(b'{"billing_zip": "10001", "billing_zip": "94107"}'),
        VALID_BYTES.replace(
            b'"kind": "independent"', b'"kind": "self_attested", "kind": "independent"'
        ),
    ],
    ids=["top-level", "inside-observed-value", "verifier-kind"],
)
def test_duplicate_keys_are_rejected(document: bytes) -> None:
    error = rejected(document)
    assert "duplicate key" in error.problem


# --- bounded memory -------------------------------------------------------------------------------

MEMORY_PROBE = textwrap.dedent(
    """
    import resource, sys
    limit = 400 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from completion_claim import InvalidDocument, load_claim
    with open(sys.argv[1], "rb") as handle:
        data = handle.read()
    kwargs = {} if sys.argv[2] == "default" else {"max_bytes": int(sys.argv[2])}
    try:
        load_claim(data, **kwargs)
    except InvalidDocument as exc:
        print("InvalidDocument:", exc)
    except MemoryError:
        print("MemoryError")
    else:
        print("loaded")
    """
)


def _probe(path: Path, max_bytes: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(path), max_bytes],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or f"exit {result.returncode}: {result.stderr.strip()[-200:]}"


@pytest.fixture(scope="module")
def forty_megabytes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40 MB JSON array of empty objects: parsed, it would need far more than 400 MB."""
    path = tmp_path_factory.mktemp("big") / "claim.json"
    count = 40 * 1000 * 1000 // 3
    with path.open("wb") as handle:
        handle.write(b"[" + b"{}," * (count - 1) + b"{}]")
    return path


def test_a_40_mb_document_is_refused_within_bounded_memory(forty_megabytes: Path) -> None:
    outcome = _probe(forty_megabytes, "default")
    assert outcome.startswith("InvalidDocument:"), outcome
    assert "size limit" in outcome


def test_the_size_limit_is_what_keeps_memory_bounded(forty_megabytes: Path) -> None:
    """Control: with the limit lifted, the same document cannot be loaded in 400 MB."""
    outcome = _probe(forty_megabytes, str(10**9))
    assert outcome == "MemoryError"


# --- lone surrogates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "path", "problem"),
    [
        (
            VALID_BYTES.replace(b'"covers"', b'"id": "\\ud800", "covers"'),
            "evidence[0].id",
            "lone surrogate U+D800",
        ),
        (with_raw(b'["ok", "\\uDFFF"]'), "evidence[0].observed_value[1]", "lone surrogate U+DFFF"),
        (  # a high half followed by something other than a low half
            VALID_BYTES.replace(b"Updated", b"Updated \\ud83d\\u0041"),
            "claimed_outcome",
            "lone surrogate U+D83D",
        ),
        (  # an escaped backslash hides nothing: the low half after it stands alone
            VALID_BYTES.replace(b"Updated", b"Updated \\\\ud83d\\ude00"),
            "claimed_outcome",
            "lone surrogate U+DE00",
        ),
        (with_raw(b'{"zip\\udc00": 1}'), "evidence[0].observed_value", "member name"),
    ],
    ids=["evidence-id", "nested-value", "unpaired-high", "after-escaped-backslash", "member-name"],
)
def test_attack_10_lone_surrogate_is_invalid_input(
    document: bytes, path: str, problem: str
) -> None:
    """No UTF-8 output can carry a lone surrogate: printing or signing the claim would crash."""
    error = rejected(document)
    assert error.path == path
    assert problem in error.problem


def test_attack_10_a_literal_lone_surrogate_in_a_text_is_invalid_input() -> None:
    """A str given to the library holds the code point itself, not its escape."""
    text = VALID_BYTES.decode().replace("Updated", "Updated \ud800")
    with pytest.raises(InvalidDocument) as caught:
        load_claim(text)
    assert caught.value.path == "claimed_outcome"


def test_a_valid_surrogate_pair_loads_as_one_character() -> None:
    """Control: an escaped pair is how JSON writes a character beyond the BMP."""
    escaped = VALID_BYTES.replace(b"Updated", b"Updated \\ud83d\\ude00 \\\\ud800")
    assert load_claim(escaped).claimed_outcome.startswith("Updated \U0001f600 \\ud800")
    literal = VALID_BYTES.replace(b"Updated", "Updated \U0001f600".encode())
    assert load_claim(literal).claimed_outcome.startswith("Updated \U0001f600")
    assert load_claim(literal.decode()).claimed_outcome.startswith("Updated \U0001f600")
