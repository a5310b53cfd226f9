"""Keys, DSSE, canonical JSON, the trust section of a policy, signed mode in ``verify``, signed
verdicts, in-toto export, and interoperability with an independent DSSE implementation."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import struct
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from securesystemslib.dsse import Envelope as SslibEnvelope

# securesystemslib re-exports these without marking them for mypy.
from securesystemslib.signer import CryptoSigner, SSlibKey  # type: ignore[attr-defined]

from completion_claim import InvalidDocument, load_claim, parse_claim, parse_policy, verify
from completion_claim._schemagen import build_schema
from completion_claim.public_key import parse_public_key
from completion_claim.report import _FINDING_TEXT
from completion_claim.trust import check_signatures, dsse
from completion_claim.trust.canonical import canonical_bytes, sha256_hex
from completion_claim.trust.evidence import (
    EVIDENCE_PAYLOAD_TYPE,
    EVIDENCE_PAYLOAD_V,
    FINDING_CODES,
    PARALLEL_FROM_ITEMS,
    evidence_payload,
    sign_evidence,
    signed_independence,
)
from completion_claim.trust.keys import SigningKey
from completion_claim.trust.verdicts import (
    CLAIM_PREDICATE_TYPE,
    INTOTO_PAYLOAD_TYPE,
    VerdictRejected,
    check_verdict,
    claim_digest,
    intoto_statement,
    sign_statement,
    sign_verdict,
)

from .builders import claim_doc, evidence, mutation
from .signing import (
    AGENT,
    CI,
    DECIDE,
    DEPLOY,
    DIGEST,
    SIGNED_POLICY,
    STRANGER,
    envelope,
    findings,
    genuine_doc,
    judge,
    policy_doc,
    sign,
)

Json = Any

# --- DSSE ---------------------------------------------------------------------------------------


def test_pae_matches_the_dsse_specification_vector() -> None:
    assert (
        dsse.pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_pae_counts_bytes_not_characters() -> None:
    assert dsse.pae("t/\u00e9", "\u00e9".encode()) == "DSSEv1 4 t/\u00e9 2 \u00e9".encode()


@pytest.mark.parametrize(
    "text", ["aGVsbG8gd29ybGQ=", "aGVsbG8gd29ybGQ", "-_-_", "+/+/", "", "YQ==", "YQ"]
)
def test_base64_standard_or_url_safe_padded_or_not(text: str) -> None:
    standard = text.replace("-", "+").replace("_", "/")
    expected = base64.b64decode(standard + "=" * (-len(standard.rstrip("=")) % 4))
    assert dsse.b64decode(text, "x", 100) == expected


@pytest.mark.parametrize("text", ["a", "YQ=", "Y===", "YQ==YQ==", "a b", "+_ab", "é", "YQ\n"])
def test_base64_rejects_anything_else(text: str) -> None:
    with pytest.raises(dsse.EnvelopeError, match="not base64"):
        dsse.b64decode(text, "x", 100)


def test_base64_bounds_the_size_before_decoding() -> None:
    with pytest.raises(dsse.EnvelopeError, match="larger than 10 bytes"):
        dsse.b64decode("A" * 100, "payload", 10)


GOOD = {"payloadType": "t", "payload": "", "signatures": [{"keyid": "", "sig": "AAAA"}]}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "not a JSON object"),
        ({**GOOD, "extra": 1}, "unknown member 'extra'"),
        ({k: v for k, v in GOOD.items() if k != "payloadType"}, "payloadType is missing"),
        ({**GOOD, "payloadType": None}, "payloadType is not a JSON string"),
        ({**GOOD, "payload": 5}, "payload is not a JSON string"),
        ({**GOOD, "signatures": {}}, "signatures is not a JSON array"),
        ({**GOOD, "signatures": []}, "signatures is empty"),
        ({**GOOD, "signatures": [{"sig": "AA"}] * 9}, "more than 8 signatures"),
        ({**GOOD, "signatures": ["AAAA"]}, r"signatures\[0\] is not a JSON object"),
        ({**GOOD, "signatures": [{"sig": "AA", "x": 1}]}, "unknown member 'x'"),
        ({**GOOD, "signatures": [{"keyid": 7, "sig": "AA"}]}, "keyid is not a string"),
        ({**GOOD, "signatures": [{"keyid": "k" * 257, "sig": "AA"}]}, "keyid is not a string"),
        ({**GOOD, "signatures": [{"keyid": "k"}]}, "sig is missing"),
    ],
)
def test_malformed_envelopes_are_one_line_errors(value: Json, message: str) -> None:
    with pytest.raises(dsse.EnvelopeError, match=message):
        dsse.decode_envelope(value)


def test_lone_surrogates_in_an_envelope_do_not_crash() -> None:
    doc = genuine_doc()
    envelope(doc)["payloadType"] = "\ud800"
    envelope(doc)["signatures"][0]["keyid"] = "\udfff"
    # ensure_ascii keeps the lone surrogates as escapes; a claim holding one is invalid input
    with pytest.raises(InvalidDocument, match=r"attestation\.payloadType: lone surrogate U\+D800"):
        load_claim(json.dumps(doc))
    decoded = dsse.decode_envelope(envelope(doc))  # the envelope code copes all the same
    assert dsse.first_verifying_key(decoded, [CI.public]) is None


def test_bad_signature_bytes_spoil_only_their_own_signature() -> None:
    decoded = dsse.decode_envelope(
        {**GOOD, "signatures": [{"sig": ""}, {"sig": "%%"}, {"sig": "AAAA"}]}
    )
    assert [s.problem for s in decoded.signatures] == [
        "signatures[0].sig is empty",
        "signatures[1].sig is not base64",
        "signatures[2].sig has 3 bytes; Ed25519 signatures have 64",
    ]


def test_signing_and_verifying_round_trip() -> None:
    signed = CI.sign_envelope("application/x-test", b"payload bytes")
    assert signed["signatures"][0]["keyid"] == CI.public.keyid
    decoded = dsse.decode_envelope(signed)
    assert decoded.payload == b"payload bytes"
    assert dsse.first_verifying_key(decoded, [STRANGER.public, CI.public]) == CI.public
    assert dsse.first_verifying_key(decoded, [STRANGER.public]) is None
    assert dsse.first_verifying_key(decoded, []) is None


def test_keyid_is_only_a_hint() -> None:
    signed = CI.sign_envelope("t", b"x")
    signed["signatures"][0]["keyid"] = STRANGER.public.keyid  # points at the wrong key
    decoded = dsse.decode_envelope(signed)
    assert dsse.first_verifying_key(decoded, [STRANGER.public, CI.public]) == CI.public
    del signed["signatures"][0]["keyid"]
    assert dsse.first_verifying_key(dsse.decode_envelope(signed), [CI.public]) == CI.public


def test_signing_is_deterministic() -> None:
    assert CI.sign_envelope("t", b"x") == CI.sign_envelope("t", b"x")


# --- keys ---------------------------------------------------------------------------------------


def test_public_key_text_and_key_id() -> None:
    raw = CI.private.public_key().public_bytes_raw()
    assert CI.public.text == "ed25519:" + base64.b64encode(raw).decode()
    assert CI.public.keyid == hashlib.sha256(raw).hexdigest()
    assert parse_public_key(CI.public.text, "k") == CI.public


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not a public key"),
        ("ed25519:", "not a public key"),
        ("ED25519:" + CI.public.text[8:], "not a public key"),
        ("rsa:" + CI.public.text[8:], "not a public key"),
        (CI.public.text[:-1], "not a public key"),
        (CI.public.text + "\n", "not a public key"),
        (CI.public.text[:-2] + "B=", "not a public key"),  # spare bits set: a second spelling
        ("ed25519:" + base64.b64encode(bytes(31)).decode(), "not a public key"),
        ("ed25519:" + base64.urlsafe_b64encode(b"\xff" * 32).decode(), "not a public key"),
        ("ed25519:" + base64.b64encode(bytes(32)).decode(), "weak"),
        ("ed25519:" + base64.b64encode(b"\x01" + bytes(31)).decode(), "weak"),
        ("ed25519:" + base64.b64encode(b"\xec" + b"\xff" * 30 + b"\x7f").decode(), "weak"),
        ("ed25519:" + base64.b64encode(b"\xed" + b"\xff" * 30 + b"\x7f").decode(), "canonical"),
        ("ed25519:" + base64.b64encode(b"\x02" + bytes(31)).decode(), "not a point"),
    ],
)
def test_public_keys_are_read_strictly(text: str, problem: str) -> None:
    with pytest.raises(InvalidDocument, match=problem) as caught:
        parse_public_key(text, "trust.agent_keys[0]")
    assert caught.value.path == "trust.agent_keys[0]"


def test_small_order_keys_really_verify_forgeries() -> None:
    # Why weak keys are refused: under the identity point as a public key, the "signature"
    # (R = identity, S = 0) verifies on any message at all.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    identity = b"\x01" + bytes(31)
    for message in (b"anything", b"at all"):
        Ed25519PublicKey.from_public_bytes(identity).verify(identity + bytes(32), message)


def test_seeded_keys_are_reproducible() -> None:
    assert SigningKey.from_seed("tests/ci").pem() == CI.pem()
    assert SigningKey.from_seed("tests/ci").public != SigningKey.from_seed("tests/cj").public


# --- canonical JSON -----------------------------------------------------------------------------

# RFC 8785, appendix B: IEEE-754 bit patterns and the text ECMAScript prints for them.
RFC8785_NUMBERS = {
    "0000000000000000": "0",
    "8000000000000000": "0",
    "0000000000000001": "5e-324",
    "8000000000000001": "-5e-324",
    "7fefffffffffffff": "1.7976931348623157e+308",
    "ffefffffffffffff": "-1.7976931348623157e+308",
    "4340000000000000": "9007199254740992",
    "c340000000000000": "-9007199254740992",
    "4430000000000000": "295147905179352830000",
    "44b52d02c7e14af5": "9.999999999999997e+22",
    "44b52d02c7e14af6": "1e+23",
    "44b52d02c7e14af7": "1.0000000000000001e+23",
    "444b1ae4d6e2ef4e": "999999999999999700000",
    "444b1ae4d6e2ef4f": "999999999999999900000",
    "444b1ae4d6e2ef50": "1e+21",
    "3eb0c6f7a0b5ed8c": "9.999999999999997e-7",
    "3eb0c6f7a0b5ed8d": "0.000001",
    "41b3de4355555553": "333333333.3333332",
    "41b3de4355555554": "333333333.33333325",
    "41b3de4355555555": "333333333.3333333",
    "41b3de4355555556": "333333333.3333334",
    "41b3de4355555557": "333333333.33333343",
    "becbf647612f3696": "-0.0000033333333333333333",
    "43143ff3c1cb0959": "1424953923781206.2",
}


@pytest.mark.parametrize(("bits", "text"), sorted(RFC8785_NUMBERS.items()))
def test_numbers_print_as_rfc_8785_says(bits: str, text: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(bits))
    assert canonical_bytes(value) == text.encode()


def test_members_sort_by_utf16_code_units_and_strings_escape_minimally() -> None:
    # RFC 8785 section 3.2.3's example: U+1F600 sorts before U+FB33 in UTF-16, not in UTF-32.
    names = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
    value = {name: i for i, name in enumerate(names)}
    order = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    members = (f"{json.dumps(n, ensure_ascii=False)}:{names.index(n)}" for n in order)
    expected = "{" + ",".join(members) + "}"
    assert canonical_bytes(value) == expected.encode()
    assert canonical_bytes('a\u2028\x7f\x1f"\\\n') == '"a\u2028\x7f\\u001f\\"\\\\\\n"'.encode()


def test_json_numbers_are_one_number_type_and_big_integers_stay_exact() -> None:
    assert canonical_bytes([1, 1.0, -0.0, 1e21, 10**21]) == b"[1,1,0,1e+21,1e+21]"
    assert canonical_bytes(2**53 + 1) == b"9007199254740993"
    assert canonical_bytes(10**400) == str(10**400).encode()


def test_canonical_form_ignores_layout_and_order() -> None:
    doc = claim_doc()
    shuffled = json.loads(json.dumps(doc, indent=3, sort_keys=True))
    assert sha256_hex(doc) == sha256_hex(shuffled)
    assert canonical_bytes({"b": [True, None], "a": "x"}) == b'{"a":"x","b":[true,null]}'


def test_lone_surrogates_cannot_be_canonical() -> None:
    with pytest.raises(InvalidDocument, match="lone surrogate"):
        canonical_bytes({"a": "\ud800"})


# --- the trust section of a policy --------------------------------------------------------------


def test_trust_section_parses() -> None:
    policy = parse_policy(policy_doc())
    assert policy.trust is not None
    assert policy.trust.mode == "signed"
    assert [o.public_key for o in policy.trust.observers] == [CI.public, DEPLOY.public]
    assert policy.trust.agent_keys == (AGENT.public,)
    assert parse_policy({"id": "p", "requires": [], "max_age_s": 1}).trust is None
    minimal = parse_policy({"id": "p", "requires": [], "max_age_s": 1, "trust": {"mode": "signed"}})
    assert minimal.trust is not None
    assert (minimal.trust.observers, minimal.trust.agent_keys) == ((), ())


@pytest.mark.parametrize(
    ("change", "path", "problem"),
    [
        (lambda t: t["observers"][0].update(public_key="ed25519:AAAA"), "observers[0].public_key",
         "not a public key"),
        (lambda t: t["observers"][1].update(public_key=7), "observers[1].public_key",
         "expected a string"),
        (lambda t: t["observers"][0].update(check_types=[]), "observers[0].check_types",
         "must not be empty"),
        (lambda t: t["observers"][0].pop("id"), "observers[0].id", "required member is missing"),
        (lambda t: t["observers"][0].update(keyid="x"), "observers[0].keyid", "unknown member"),
        (lambda t: t.update(mode="strict"), "mode", "unknown value"),
        (lambda t: t.update(agent_keys=["nope"]), "agent_keys[0]", "not a public key"),
        (lambda t: t.update(agent_keys=[base64.b64encode(bytes(32)).decode()]), "agent_keys[0]",
         "not a public key"),
        (lambda t: t.update(extra=True), "extra", "unknown member"),
    ],
)  # fmt: skip
def test_trust_errors_name_the_path(change: Any, path: str, problem: str) -> None:
    doc = policy_doc()
    change(doc["trust"])
    with pytest.raises(InvalidDocument) as caught:
        parse_policy(doc)
    assert caught.value.path == f"trust.{path}"
    assert problem in caught.value.problem
    with pytest.raises(InvalidDocument) as embedded:
        parse_claim(claim_doc(policy=doc))
    assert embedded.value.path == f"policy.trust.{path}"


def test_schema_agrees_with_the_parser_on_trust() -> None:
    validator = jsonschema.Draft202012Validator(build_schema())
    assert validator.is_valid(claim_doc(policy=policy_doc()))
    assert validator.is_valid(genuine_doc())
    bad = policy_doc()
    bad["trust"]["observers"][0]["public_key"] = CI.public.text[:-2] + "B="
    assert not validator.is_valid(claim_doc(policy=bad))
    bad = policy_doc()
    bad["trust"]["observers"][0]["check_types"] = []
    assert not validator.is_valid(claim_doc(policy=bad))


# --- signed mode in verify ----------------------------------------------------------------------


def test_signed_mode_is_applied_by_verify_itself() -> None:
    claim = load_claim(json.dumps(genuine_doc()))
    assert (
        verify(claim, DECIDE, SIGNED_POLICY, signatures=check_signatures).independence == "proven"
    )
    assert verify(claim, DECIDE, signatures=check_signatures).independence == "declared"


def test_declared_mode_ignores_attestations() -> None:
    doc = genuine_doc()
    envelope(doc)["payload"] = "%%%"
    assert judge(doc, policy=None).state == "verified"
    declared = parse_policy(policy_doc(mode="declared"))
    assert judge(doc, declared).independence == "declared"


def test_a_claims_own_signed_policy_is_applied_but_proves_nothing() -> None:
    # The agent could list its own key as an observer: signatures are still checked (an
    # unsigned item does not count), but the verdict does not call the result proof.
    own = {**genuine_doc(), "policy": policy_doc()}
    verdict = verify(parse_claim(own), DECIDE, signatures=check_signatures)
    assert verdict.state == "verified"
    assert verdict.independence == "declared"
    unsigned = {**claim_doc([mutation(digest=DIGEST)], [evidence(id="e1")]), "policy": policy_doc()}
    verdict = verify(parse_claim(unsigned), DECIDE, signatures=check_signatures)
    assert [f.code for f in findings(verdict)] == ["no_attestation"]
    assert (
        verify(parse_claim(own), DECIDE, SIGNED_POLICY, signatures=check_signatures).independence
        == "proven"
    )


def test_unsigned_verification_never_loads_cryptography() -> None:
    code = """
import sys
from datetime import UTC, datetime
from completion_claim import load_claim, verify
from completion_claim.report import render_report
claim = load_claim(open(sys.argv[1], "rb").read())
render_report(claim, verify(claim, datetime(2026, 8, 28, tzinfo=UTC)))
assert not [m for m in sys.modules if m.startswith("cryptography")], "cryptography was loaded"
"""
    example = "examples/format-note.claim.json"
    subprocess.run([sys.executable, "-c", code, example], check=True)


def test_every_finding_code_has_report_text() -> None:
    assert set(FINDING_CODES) <= set(_FINDING_TEXT)


def test_payload_holds_the_evidence_fields_and_the_binding() -> None:
    doc = claim_doc(
        [mutation(digest=DIGEST), mutation("m2", 1, target="other")],
        [evidence(id="e1", covers=["m2", "m1", "m2"], subject="sha256:ab", details={"n": 1})],
    )
    del doc["evidence"][0]["observed_value"]
    item = doc["evidence"][0]
    payload = evidence_payload(item, "deploy-4471", parse_claim(doc).mutations)
    assert payload == {
        "_type": EVIDENCE_PAYLOAD_V,
        "task_id": "deploy-4471",
        "evidence": {
            "check_type": "state_readback",
            "target": "accounts/4471",
            "expected": {"billing_zip": "94107"},
            "at": item["at"],
            "covers": ["m2", "m1", "m2"],
            "verifier": {"id": "ci/1", "kind": "independent"},
            "subject": "sha256:ab",
            "details": {"n": 1},
        },
        "mutations": [
            {
                "id": "m2",
                "kind": "state_write",
                "target": "other",
                "at": "2026-08-27T18:00:01+00:00",
            },
            {
                "id": "m1",
                "kind": "state_write",
                "target": "accounts/4471",
                "at": "2026-08-27T18:00:00+00:00",
                "digest": DIGEST,
            },
        ],
    }
    signed = sign(doc)
    assert base64.b64decode(envelope(signed)["payload"]) == canonical_bytes(payload)
    assert envelope(signed)["payloadType"] == EVIDENCE_PAYLOAD_TYPE


def test_a_mutation_time_is_signed_as_written_and_compared_as_an_instant() -> None:
    doc = claim_doc([mutation(at="2026-08-27T20:00:00+02:00")], [evidence(id="e1")])
    signed = sign(doc)
    assert payload_of(signed)["mutations"][0]["at"] == "2026-08-27T20:00:00+02:00"
    signed["mutations"][0]["at"] = "2026-08-27T20:00:00+02:01"
    (finding,) = [f for f in findings(judge(signed)) if f.code in FINDING_CODES]
    assert finding.code == "mutation_label_changed"
    assert finding.detail == (
        "at signed '2026-08-27T20:00:00+02:00', now '2026-08-27T20:00:00+02:01'"
    )


def resign(doc: Json, payload: bytes, key: SigningKey = CI) -> Json:
    """``doc`` whose first item carries ``payload`` signed by ``key`` (a trusted signer of
    nonsense)."""
    out = copy.deepcopy(doc)
    out["evidence"][0]["attestation"] = key.sign_envelope(EVIDENCE_PAYLOAD_TYPE, payload)
    return out


def payload_of(doc: Json) -> Json:
    return json.loads(base64.b64decode(envelope(doc)["payload"]))


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        (lambda p: p.pop("task_id"), "members must be"),
        (lambda p: p.update(extra=1), "members must be"),
        (lambda p: p.update(_type="https://example.com/other"), "_type"),
        (lambda p: p.update(task_id=5), "task_id"),
        (lambda p: p["evidence"].update(id="e1"), "evidence"),
        (lambda p: p["evidence"]["verifier"].pop("kind"), "evidence.verifier.kind"),
        (lambda p: p["evidence"]["verifier"].update(kind="trusted"), "evidence.verifier.kind"),
        (lambda p: p["mutations"][0].pop("target"), "mutations[0].target"),
        (lambda p: p["mutations"][0].update(at="2026-08-27T18:00:00"), "mutations[0].at"),
        (lambda p: p["mutations"][0].update(note="x"), "mutations[0].note: unknown member"),
        (
            lambda p: p.update(_type="https://completion-claim.dev/evidence/v0.1"),
            "_type: 'https://completion-claim.dev/evidence/v0.1' is no longer accepted",
        ),
        (lambda p: p["evidence"].update(at="2026-08-27T18:00:10"), "evidence.at: no UTC offset"),
        (lambda p: p["evidence"].update(covers="m1"), "evidence.covers"),
        (lambda p: p.update(mutations=[{"id": "m1", "digest": None}]), "mutations[0]"),
        (lambda p: p.update(mutations={"id": "m1"}), "mutations"),
        (lambda p: p.update(mutations=[]), "mutations: must list each covered mutation once"),
        (
            lambda p: p.update(mutations=p["mutations"] * 2),
            "mutations: must list each covered mutation once",
        ),
    ],
)
def test_a_trusted_signature_over_a_malformed_payload_does_not_count(
    change: Any, detail: str
) -> None:
    doc = genuine_doc()
    payload = payload_of(doc)
    change(payload)
    verdict = judge(resign(doc, json.dumps(payload).encode()))
    (finding,) = findings(verdict)
    assert finding.code == "payload_malformed"
    assert finding.detail is not None
    assert detail in finding.detail


@pytest.mark.parametrize(
    "payload",
    [b"\xff\xfe", b"not json", b'{"a": 1, "a": 2}', b"[" * 5000, b"1e999", b'"text"'],
)
def test_unreadable_signed_payloads_do_not_count(payload: bytes) -> None:
    (finding,) = findings(judge(resign(genuine_doc(), payload)))
    assert finding.code == "payload_malformed"


def test_huge_payloads_are_refused_before_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dsse, "MAX_PAYLOAD_BYTES", 100)
    (finding,) = findings(judge(genuine_doc()))
    assert finding.code == "attestation_malformed"
    assert finding.detail == "payload is larger than 100 bytes"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
ENVELOPE_LIKE = st.fixed_dictionaries(
    {
        "payloadType": st.sampled_from([EVIDENCE_PAYLOAD_TYPE, "x"]) | JSON_VALUES,
        "payload": st.sampled_from(["", "e30=", "%"]) | JSON_VALUES,
        "signatures": st.lists(
            st.fixed_dictionaries({"sig": st.text(max_size=90) | JSON_VALUES}), max_size=3
        )
        | JSON_VALUES,
    }
)


@settings(max_examples=150, deadline=None)
@given(attestation=st.dictionaries(st.text(max_size=12), JSON_VALUES) | ENVELOPE_LIKE)
def test_no_attestation_crashes_the_verifier(attestation: dict[str, Any]) -> None:
    doc = genuine_doc()
    doc["evidence"][0]["attestation"] = attestation
    verdict = judge(doc)
    assert verdict.state == "unverified"
    assert findings(verdict)[0].code in FINDING_CODES


# --- signed verdicts and in-toto ----------------------------------------------------------------


def signed_verdict_doc() -> tuple[Json, Json]:
    doc = genuine_doc()
    verdict = judge(doc).to_json()
    return sign_verdict(doc, verdict, CI), verdict


def test_signed_verdict_checks() -> None:
    document, verdict = signed_verdict_doc()
    assert document["verdict"] == verdict
    assert check_verdict(document, CI.public) == verdict
    parse_claim(document)  # still a claim


def test_signed_verdict_survives_reformatting() -> None:
    document, _ = signed_verdict_doc()
    reformatted = json.loads(json.dumps(document, indent=4, sort_keys=True))
    assert check_verdict(reformatted, CI.public)["state"] == "verified"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d["verdict"].update(state="refuted"), "the verdict is not the one signed"),
        (lambda d: d.pop("verdict"), "the verdict is not the one signed"),
        (lambda d: d["mutations"][0].update(target="x"), "the claim is not the one signed"),
        (lambda d: d.update(claimed_outcome="more"), "the claim is not the one signed"),
        (lambda d: d.pop("verdict_attestation"), "not signed"),
        (lambda d: d["verdict_attestation"].update(payload="e30="), "no signature verifies"),
        (lambda d: d["verdict_attestation"].update(payloadType=EVIDENCE_PAYLOAD_TYPE),
         "payload type"),
        (lambda d: d["verdict_attestation"]["signatures"][0].update(sig=""), "sig is empty"),
        (lambda d: d["verdict_attestation"].update(signatures=3), "not a JSON array"),
    ],
)  # fmt: skip
def test_tampered_signed_verdicts_are_rejected(change: Any, reason: str) -> None:
    document, _ = signed_verdict_doc()
    change(document)
    with pytest.raises(VerdictRejected, match=reason):
        check_verdict(document, CI.public)


def test_signed_verdict_with_the_wrong_key_is_rejected() -> None:
    document, _ = signed_verdict_doc()
    with pytest.raises(VerdictRejected, match="no signature verifies with key"):
        check_verdict(document, STRANGER.public)


def test_claim_digest_leaves_out_the_verdict_and_its_attestation() -> None:
    document, _ = signed_verdict_doc()
    assert claim_digest(document) == claim_digest(genuine_doc())
    assert claim_digest(document) == sha256_hex(genuine_doc())


def test_in_toto_statement() -> None:
    doc = genuine_doc()
    verdict = judge(doc).to_json()
    statement = intoto_statement(doc, verdict, "deploy-4471")
    assert statement == {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "deploy-4471", "digest": {"sha256": claim_digest(doc)}}],
        "predicateType": CLAIM_PREDICATE_TYPE,
        "predicate": {**doc, "verdict": verdict},
    }
    signed = sign_statement(statement, CI)
    assert signed["payloadType"] == INTOTO_PAYLOAD_TYPE
    assert json.loads(base64.b64decode(signed["payload"])) == statement


# --- interoperability with securesystemslib -----------------------------------------------------


def sslib_key(key: SigningKey) -> SSlibKey:
    # securesystemslib matches signatures to keys by keyid, so give it ours.
    return SSlibKey.from_crypto(key.private.public_key(), keyid=key.public.keyid)


@pytest.mark.parametrize("kind", ["evidence", "in-toto"])
def test_our_envelopes_verify_with_securesystemslib(kind: str) -> None:
    doc = genuine_doc()
    ours = (
        envelope(doc)
        if kind == "evidence"
        else sign_statement(intoto_statement(doc, judge(doc).to_json(), "t"), CI)
    )
    theirs = SslibEnvelope.from_dict(copy.deepcopy(ours))
    assert theirs.pae() == dsse.pae(ours["payloadType"], base64.b64decode(ours["payload"]))
    accepted = theirs.verify([sslib_key(CI)], 1)
    assert list(accepted) == [CI.public.keyid]


def test_securesystemslib_rejects_our_envelope_under_another_key() -> None:
    theirs = SslibEnvelope.from_dict(copy.deepcopy(envelope(genuine_doc())))
    wrong = SSlibKey.from_crypto(STRANGER.private.public_key(), keyid=CI.public.keyid)
    with pytest.raises(Exception, match="threshold"):
        theirs.verify([wrong], 1)


def test_we_verify_envelopes_securesystemslib_signs() -> None:
    doc = genuine_doc()
    payload = base64.b64decode(envelope(doc)["payload"])
    theirs = SslibEnvelope(payload, EVIDENCE_PAYLOAD_TYPE, {})
    theirs.sign(CryptoSigner(CI.private, sslib_key(CI)))
    doc["evidence"][0]["attestation"] = theirs.to_dict()
    verdict = judge(doc)
    assert verdict.state == "verified"
    assert verdict.independence == "proven"
    decoded = dsse.decode_envelope(theirs.to_dict())
    assert dsse.first_verifying_key(decoded, [CI.public]) == CI.public


def _many_signed(count: int, forged: int) -> Json:
    """``count`` state writes each read back and signed by CI, item ``forged`` by a stranger."""
    doc = claim_doc(
        [mutation(f"m{i}", 0, target=f"accounts/{i}", digest=DIGEST) for i in range(count)],
        [evidence(10, [f"m{i}"], id=f"e{i}", target=f"accounts/{i}") for i in range(count)],
    )
    claim = parse_claim(doc)
    for i, item in enumerate(doc["evidence"]):
        item["attestation"] = sign_evidence(item, claim, STRANGER if i == forged else CI)
    return doc


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_a_large_claim_is_judged_alike_on_any_number_of_threads(threads: int) -> None:
    """Signatures checked ahead on threads give each item its own finding, as one thread does:
    the forged item alone fails, and only it."""
    claim = parse_claim(_many_signed(PARALLEL_FROM_ITEMS * 2, forged=21))
    trust = SIGNED_POLICY.trust
    assert trust is not None
    judge_items = signed_independence(claim, trust, threads=threads)
    found = {item.id: judge_items(item) for item in claim.evidence}
    assert {ident for ident, finding in found.items() if finding is not None} == {"e21"}
    assert found["e21"] is not None
    assert found["e21"].code == "signature_invalid"


def test_signed_mode_without_a_signature_check_verifies_nothing() -> None:
    """A library caller who forgets ``signatures=check_signatures`` gets unverified, never a
    verdict that read the claim's own word for independence."""
    verdict = verify(parse_claim(genuine_doc()), DECIDE, SIGNED_POLICY)
    assert verdict.state == "unverified"
    assert [f.code for f in findings(verdict)] == ["signatures_not_checked"]
    assert verdict.independence == "declared"
