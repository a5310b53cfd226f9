"""Attacks on signed evidence, one test each: the forged item never counts, the claim is not
verified, nothing crashes, and the report says why.

Every test starts from a claim whose readback the trusted CI observer genuinely signed, which
verifies under the signed policy (``test_genuine_signed_evidence_verifies``).
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from completion_claim import InvalidDocument, parse_claim, parse_policy
from completion_claim.cli import run
from completion_claim.public_key import PublicKey
from completion_claim.report import describe_finding, render_report
from completion_claim.signature_bounds import MAX_SIGNATURES_PER_CLAIM, MAX_SIGNATURES_PER_ENVELOPE
from completion_claim.trust import dsse
from completion_claim.trust.dsse import pae
from completion_claim.trust.evidence import EVIDENCE_PAYLOAD_TYPE, FINDING_CODES
from completion_claim.verify import Verdict

from .builders import claim_doc, evidence, mutation, ts
from .signing import (
    AGENT,
    CI,
    CI_ID,
    DEPLOY,
    DEPLOY_ID,
    DIGEST,
    STRANGER,
    envelope,
    findings,
    genuine_doc,
    judge,
    policy_doc,
    sign,
)

Json = Any


def assert_rejected(doc: Json, code: str, detail: str | None = None) -> Verdict:
    """e1 does not count, for exactly this reason, the claim is not verified, and the report
    names the reason."""
    verdict = judge(doc)
    assert verdict.state != "verified"
    assert verdict.independence == "proven"
    (finding,) = [f for f in findings(verdict) if f.code in FINDING_CODES]
    assert finding.code == code
    if detail is not None:
        assert finding.detail is not None
        assert detail in finding.detail
    report = render_report(parse_claim(doc), verdict)
    assert describe_finding(finding) in report
    return verdict


def edited(doc: Json, **members: Json) -> Json:
    out = copy.deepcopy(doc)
    out["evidence"][0].update(members)
    return out


def test_genuine_signed_evidence_verifies() -> None:
    verdict = judge(genuine_doc())
    assert verdict.state == "verified"
    assert verdict.independence == "proven"
    assert findings(verdict) == ()


def test_kind_edited_from_self_attested_to_independent() -> None:
    # The agent's own readback, written as self_attested, then flipped: declared mode falls for
    # it, signed mode never trusts a kind no observer signed.
    doc = claim_doc(
        [mutation(digest=DIGEST)],
        [evidence(id="e1", verifier={"id": "agent/1", "kind": "self_attested"})],
    )
    doc["evidence"][0]["verifier"]["kind"] = "independent"
    assert judge(doc, policy=None).state == "verified"
    assert_rejected(doc, "no_attestation")


def test_kind_edited_on_an_agent_signed_item() -> None:
    doc = claim_doc(
        [mutation(digest=DIGEST)],
        [evidence(id="e1", verifier={"id": "agent/1", "kind": "self_attested"})],
    )
    doc["evidence"][0]["verifier"]["kind"] = "independent"
    assert_rejected(sign(doc, AGENT), "agent_key")


def test_observed_value_edited_after_signing() -> None:
    doc = genuine_doc(expected={"billing_zip": "94107"}, observed_value={"billing_zip": "10001"})
    assert judge(doc).state == "refuted"  # the observer saw a contradiction...
    forged = edited(doc, observed_value={"billing_zip": "94107"})  # ...the agent rewrote it
    assert_rejected(forged, "payload_mismatch", "observed_value")


def test_observed_value_removed_after_signing() -> None:
    doc = genuine_doc()
    del doc["evidence"][0]["observed_value"]
    assert_rejected(doc, "payload_mismatch", "observed_value")


def test_expected_edited_after_signing() -> None:
    doc = genuine_doc(observed_value={"billing_zip": "10001"})
    assert_rejected(edited(doc, expected={"billing_zip": "10001"}), "payload_mismatch", "expected")


def test_expected_number_edited_to_a_string_after_signing() -> None:
    doc = genuine_doc(expected={"n": 1}, observed_value={"n": 1})
    assert_rejected(edited(doc, expected={"n": "1"}), "payload_mismatch", "expected")


def test_at_edited_after_signing() -> None:
    assert_rejected(edited(genuine_doc(), at=ts(15)), "payload_mismatch", "at")


def test_at_written_with_another_offset_is_the_same_instant() -> None:
    doc = edited(genuine_doc(), at="2026-08-27T20:00:10+02:00")
    assert judge(doc).state == "verified"


def test_covers_edited_after_signing() -> None:
    doc = claim_doc(
        [mutation(digest=DIGEST), mutation("m2", 1, target="other")],
        [evidence(id="e1", covers=["m1"])],
    )
    doc = edited(sign(doc), covers=["m1", "m2"])
    verdict = assert_rejected(doc, "payload_mismatch", "covers")
    assert {u.mutation for u in verdict.unmet if u.code == "mutation_uncovered"} == {"m1", "m2"}


def test_envelope_copied_into_claim_with_another_task_id() -> None:
    doc = genuine_doc()
    other = claim_doc([mutation(digest=DIGEST)], [], task={"id": "another-task"})
    other["evidence"] = doc["evidence"]
    assert_rejected(other, "bound_to_other_task", "deploy-4471")


def test_covered_mutation_digest_changed_after_observation() -> None:
    doc = genuine_doc()
    doc["mutations"][0]["digest"] = "sha256:" + "00" * 32
    verdict = assert_rejected(doc, "mutation_digest_changed", DIGEST)
    assert findings(verdict)[0].mutation == "m1"


def test_signed_with_unknown_key() -> None:
    doc = sign(genuine_doc(), STRANGER)
    assert_rejected(doc, "signature_invalid", "no signature verifies with a key of 'ci/1'")


def test_signed_with_trusted_key_of_observer_not_allowed_for_check_type() -> None:
    doc = claim_doc(
        [mutation(digest=DIGEST)],
        [evidence(id="e1", verifier={"id": DEPLOY_ID, "kind": "independent"})],
    )
    assert_rejected(sign(doc, DEPLOY), "check_type_not_allowed", "may attest endpoint_health")


def test_signed_with_trusted_key_of_another_observer_than_named() -> None:
    assert_rejected(sign(genuine_doc(), DEPLOY), "signature_invalid", "'deploy/1', not 'ci/1'")


def test_signed_with_agent_key() -> None:
    assert_rejected(sign(genuine_doc(), AGENT), "agent_key", AGENT.public.keyid[:16])


def test_signed_with_agent_key_that_is_also_listed_as_observer() -> None:
    both = policy_doc(
        observers=[
            {"id": CI_ID, "public_key": AGENT.public.text, "check_types": ["state_readback"]}
        ]
    )
    verdict = judge(sign(genuine_doc(), AGENT), parse_policy(both))
    assert verdict.state == "unverified"
    assert [f.code for f in findings(verdict)] == ["agent_key"]


def test_truncated_signature() -> None:
    doc = genuine_doc()
    sig = base64.b64decode(envelope(doc)["signatures"][0]["sig"])
    envelope(doc)["signatures"][0]["sig"] = base64.b64encode(sig[:63]).decode()
    assert_rejected(doc, "signature_invalid", "63 bytes")


def test_non_base64_signature() -> None:
    doc = genuine_doc()
    envelope(doc)["signatures"][0]["sig"] = "@@not-base64@@"
    assert_rejected(doc, "signature_invalid", "not base64")


def test_empty_signature() -> None:
    doc = genuine_doc()
    envelope(doc)["signatures"][0]["sig"] = ""
    assert_rejected(doc, "signature_invalid", "empty")


def test_two_signatures_where_only_the_untrusted_one_is_valid() -> None:
    doc = genuine_doc()
    payload = base64.b64decode(envelope(doc)["payload"])
    sig = bytearray(base64.b64decode(envelope(doc)["signatures"][0]["sig"]))
    sig[10] ^= 0x40
    stranger = STRANGER.private.sign(pae(EVIDENCE_PAYLOAD_TYPE, payload))
    envelope(doc)["signatures"] = [
        {"keyid": CI.public.keyid, "sig": base64.b64encode(bytes(sig)).decode()},
        {"keyid": CI.public.keyid, "sig": base64.b64encode(stranger).decode()},
    ]
    assert_rejected(doc, "signature_invalid", "no signature verifies")


def test_payload_type_changed() -> None:
    doc = genuine_doc()
    envelope(doc)["payloadType"] = "application/vnd.in-toto+json"
    assert_rejected(doc, "payload_type_wrong", "application/vnd.in-toto+json")


def test_payload_re_signed_under_another_type_by_the_observer() -> None:
    # Even the observer's own key cannot lend a signature made for another payload type.
    doc = genuine_doc()
    payload = base64.b64decode(envelope(doc)["payload"])
    other = "application/vnd.completion-claim.verdict+json"
    envelope(doc)["payloadType"] = other
    envelope(doc)["signatures"][0]["sig"] = base64.b64encode(
        CI.private.sign(pae(other, payload))
    ).decode()
    assert_rejected(doc, "payload_type_wrong")


def test_unsigned_item_in_signed_mode() -> None:
    doc = genuine_doc()
    del doc["evidence"][0]["attestation"]
    assert_rejected(doc, "no_attestation")


def test_item_naming_an_untrusted_observer() -> None:
    doc = claim_doc(
        [mutation(digest=DIGEST)],
        [evidence(id="e1", verifier={"id": "gitreal-gate/0.3", "kind": "independent"})],
    )
    assert_rejected(sign(doc), "unknown_observer", "gitreal-gate/0.3")


# --- issue 7 -------------------------------------------------------------------------------------


def two_writes_read_back() -> Json:
    """Two state writes, both covered by one readback the CI observer signed."""
    doc = claim_doc(
        [mutation(digest=DIGEST), mutation("m2", 1, target="accounts/4472")],
        [evidence(id="e1", covers=["m1", "m2"])],
    )
    return sign(doc)


def test_attack_12_control_signed_mutations_as_observed_verify() -> None:
    verdict = judge(two_writes_read_back())
    assert verdict.state == "verified"
    assert verdict.independence == "proven"
    assert findings(verdict) == ()


@pytest.mark.parametrize(
    ("relabel", "labels"),
    [
        ({"kind": "deploy", "target": "acct/9999"}, ["kind", "target"]),
        ({"target": "accounts/9999"}, ["target"]),
        ({"at": ts(2)}, ["at"]),
        ({"kind": "file_write"}, ["kind"]),
    ],
)
def test_attack_12_relabelled_mutation_does_not_verify(
    relabel: dict[str, str], labels: list[str]
) -> None:
    # The readback observed a write to accounts/4472; the claim now says m2 was something else,
    # which the verdict would report as covered by a proven observation.
    doc = two_writes_read_back()
    doc["mutations"][1].update(relabel)
    verdict = assert_rejected(doc, "mutation_label_changed")
    (finding,) = findings(verdict)
    assert finding.mutation == "m2"
    assert finding.detail is not None
    assert [part.split()[0] for part in finding.detail.split("; ")] == labels


def test_attack_12_mutation_written_with_another_offset_is_the_same_instant() -> None:
    doc = two_writes_read_back()
    doc["mutations"][1]["at"] = "2026-08-27T20:00:01+02:00"
    assert judge(doc).state == "verified"


def test_attack_06_item_signed_as_self_attested_does_not_count() -> None:
    doc = sign(genuine_doc(verifier={"id": CI_ID, "kind": "self_attested"}))
    verdict = judge(doc)
    assert verdict.state == "unverified"
    assert [f.code for f in findings(verdict)] == ["self_attested"]
    flipped = copy.deepcopy(doc)
    flipped["evidence"][0]["verifier"]["kind"] = "independent"
    assert_rejected(flipped, "payload_mismatch", "verifier.kind")


def test_attack_10_many_signatures_are_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The shape, small: every envelope carries more forged signatures than the cap.
    doc = genuine_doc()
    junk = [forged_signature(j) for j in range(MAX_SIGNATURES_PER_ENVELOPE)]
    envelope(doc)["signatures"] += junk
    with pytest.raises(InvalidDocument) as caught:
        parse_claim(doc)
    assert caught.value.path == "evidence[0].attestation.signatures"
    path = tmp_path / "claim.json"
    path.write_text(json.dumps(doc))
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(policy_doc()))
    assert run(["verify", str(path), "--policy", str(policy)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{path}: evidence[0].attestation.signatures: 9 signatures" in err


def test_attack_10_total_signatures_per_claim_are_bounded() -> None:
    items = MAX_SIGNATURES_PER_CLAIM // MAX_SIGNATURES_PER_ENVELOPE + 1
    doc = genuine_doc()
    envelope(doc)["signatures"] *= MAX_SIGNATURES_PER_ENVELOPE
    doc["evidence"] = [{**doc["evidence"][0], "id": f"e{i}"} for i in range(items)]
    with pytest.raises(InvalidDocument, match=r"signatures in all; a claim may carry at most"):
        parse_claim(doc)
    doc["evidence"].pop()
    assert judge(doc).state == "verified"


def test_attack_10_each_signature_is_tried_once_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # Forged signatures under the CI observer's name make the verifier look for a reason with
    # every key list (usable, agent, the observer's, the others'); still each (signature, key)
    # pair is verified at most once.
    calls: list[tuple[bytes, bytes]] = []
    real = dsse._verifies

    def counted(key: PublicKey, sig: bytes, message: bytes) -> bool:
        calls.append((key.raw, sig))
        return real(key, sig, message)

    monkeypatch.setattr(dsse, "_verifies", counted)
    doc = genuine_doc()
    envelope(doc)["signatures"] = [forged_signature(j) for j in range(8)]
    assert_rejected(doc, "signature_invalid")
    keys = {CI.public.raw, DEPLOY.public.raw, AGENT.public.raw}
    assert len(calls) == len(set(calls)) == 8 * len(keys)


def test_attack_10_control_eight_signatures_with_one_genuine_verify() -> None:
    doc = genuine_doc()
    envelope(doc)["signatures"] += [forged_signature(j) for j in range(7)]
    assert judge(doc).state == "verified"


def forged_signature(n: int) -> dict[str, str]:
    """64 bytes that cost a full Ed25519 verification (a real R, a reduced S) and verify under
    no key."""
    real = STRANGER.private.sign(b"something else")
    sig = real[:32] + bytes([real[32] ^ (n + 1)]) + real[33:]
    return {"keyid": CI.public.keyid, "sig": base64.b64encode(sig).decode()}
