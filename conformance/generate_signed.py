"""Write the signed-mode conformance vectors to ``conformance/signed/`` and their test keys to
``conformance/keys/`` (``python conformance/generate_signed.py``).

Keys come from fixed seeds: the private key named N is the Ed25519 key whose 32-byte seed is
SHA-256 of the UTF-8 text ``completion-claim test key: conformance/N``. Ed25519 signing is
deterministic and payloads are canonical JSON, so running this twice writes identical files.
These keys are public: they prove nothing outside these vectors.

Each vector starts from a claim whose evidence a trusted observer genuinely signed (it verifies
under the signed policy), then applies one attack. Expected outcomes are written here by hand
from docs/spec.md section 8, never computed by running the verifier.

Numbering is the order of ``_vectors()``: append new vectors at the end so numbers stay stable.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from completion_claim.model import parse_claim
from completion_claim.trust.canonical import canonical_bytes
from completion_claim.trust.dsse import pae
from completion_claim.trust.evidence import EVIDENCE_PAYLOAD_TYPE, sign_evidence
from completion_claim.trust.keys import SigningKey

HERE = Path(__file__).resolve().parent
SIGNED_DIR = HERE / "signed"
KEY_DIR = HERE / "keys"

Json = Any
KEY_NAMES = ("observer-ci", "observer-deploy", "agent", "stranger")
KEYS = {name: SigningKey.from_seed(f"conformance/{name}") for name in KEY_NAMES}
CI = KEYS["observer-ci"]
DEPLOY = KEYS["observer-deploy"]
AGENT = KEYS["agent"]
STRANGER = KEYS["stranger"]

CI_ID = "ci-observer/1"
DEPLOY_ID = "deploy-observer/1"
AGENT_ID = "agent/1"
TASK = "task-4471"
DAY = "2026-08-27"
AT = f"{DAY}T18:02:00Z"
RECORD = "accounts/4471"
OTHER_RECORD = "accounts/4472"
ZIP = {"billing_zip": "94107"}
RECORD_READ = {"billing_zip": "94107", "billing_city": "San Francisco"}
OTHER_ZIP = {"billing_zip": "10001", "billing_city": "New York"}
DIGEST = "sha256:" + hashlib.sha256(b'{"billing_zip":"94107"}').hexdigest()


def t(clock: str) -> str:
    return f"{DAY}T18:{clock}Z"


def policy(**trust_over: Json) -> Json:
    """The operator's signed policy: CI may attest readbacks and test runs, the deploy observer
    endpoint checks; the agent's key is listed so that what it signs is named as such."""
    trust: dict[str, Json] = {
        "mode": "signed",
        "observers": [
            {
                "id": CI_ID,
                "public_key": CI.public.text,
                "check_types": ["state_readback", "test_run"],
            },
            {"id": DEPLOY_ID, "public_key": DEPLOY.public.text, "check_types": ["endpoint_health"]},
        ],
        "agent_keys": [AGENT.public.text],
    }
    trust.update(trust_over)
    return {"id": "signed-ops", "requires": ["state_readback"], "max_age_s": 300, "trust": trust}


def readback(observed: Json = RECORD_READ, covers: Sequence[str] = ("m1",), **over: Json) -> Json:
    item: dict[str, Json] = {
        "id": "e1",
        "check_type": "state_readback",
        "target": RECORD,
        "expected": ZIP,
        "observed_value": observed,
        "at": t("01:00"),
        "covers": list(covers),
        "verifier": {"id": CI_ID, "kind": "independent"},
        "subject": "sha256:" + "ab" * 32,
    }
    item.update(over)
    return item


def claim(items: Sequence[Json], mutations: Sequence[Json] | None = None) -> Json:
    return {
        "spec_version": "0.1",
        "task": {"id": TASK, "description": "Update the billing address on account 4471"},
        "claimed_outcome": "Updated the billing address on account 4471.",
        "mutations": list(mutations)
        if mutations is not None
        else [
            {
                "id": "m1",
                "kind": "state_write",
                "target": RECORD,
                "at": t("00:00"),
                "digest": DIGEST,
            }
        ],
        "evidence": list(items),
    }


def signed(doc: Json, key: SigningKey = CI, index: int = 0) -> Json:
    """``doc`` with evidence ``index`` signed by ``key``, bound to the claim as it stands."""
    out = copy.deepcopy(doc)
    item = out["evidence"][index]
    item.pop("attestation", None)
    item["attestation"] = sign_evidence(item, parse_claim(out), key)
    return out


def genuine() -> Json:
    return signed(claim([readback()]))


def envelope(doc: Json, index: int = 0) -> Json:
    envelope: Json = doc["evidence"][index]["attestation"]
    return envelope


def edited(doc: Json, change: Callable[[Json], None]) -> Json:
    out = copy.deepcopy(doc)
    change(out)
    return out


def with_item(doc: Json, **members: Json) -> Json:
    """``doc`` with members of its first evidence item replaced (after signing)."""
    return edited(doc, lambda d: d["evidence"][0].update(members))


def with_signature(doc: Json, **members: Json) -> Json:
    """``doc`` with members of its first item's first signature replaced."""
    return edited(doc, lambda d: envelope(d)["signatures"][0].update(members))


def sig_bytes(key: SigningKey, payload_type: str, payload: bytes) -> bytes:
    signature: bytes = key.private.sign(pae(payload_type, payload))
    return signature


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def vector(
    description: str,
    doc: Json,
    state: str,
    unmet: Sequence[str],
    findings: dict[str, Sequence[str]] | None = None,
    *,
    pol: Json | None = None,
    independence: str = "proven",
) -> dict[str, Json]:
    # Every evidence item is listed: no findings means it counts.
    expected_findings: dict[str, Json] = {item["id"]: [] for item in doc["evidence"]}
    expected_findings.update({ref: sorted(codes) for ref, codes in (findings or {}).items()})
    expect: dict[str, Json] = {
        "state": state,
        "unmet": sorted(unmet),
        "independence": independence,
        "findings": expected_findings,
    }
    return {
        "description": description,
        "claim": doc,
        "policy": policy() if pol is None else pol,
        "at": AT,
        "expect": expect,
    }


def invalid(description: str, doc: Json, error_path: str) -> dict[str, Json]:
    """Invalid input (exit 3) under the signed policy: no verdict at all."""
    return {
        "description": description,
        "claim": doc,
        "policy": policy(),
        "at": AT,
        "expect": {"state": "invalid", "error_path": error_path},
    }


NOT_VERIFIED = ("mutation_uncovered", "no_supporting_evidence", "requirement_unmet")


def rejected(description: str, doc: Json, code: str, **kw: Json) -> dict[str, Json]:
    """The one evidence item does not count, so nothing supports the claim."""
    return vector(description, doc, "unverified", NOT_VERIFIED, {"e1": [code]}, **kw)


# --- the vectors --------------------------------------------------------------------------------


def _vectors() -> Iterator[tuple[str, dict[str, Json]]]:
    base = genuine()
    yield (
        "genuine-signature-verifies",
        vector(
            "A readback signed by a trusted observer proves independence.", base, "verified", []
        ),
    )
    yield (
        "declared-mode-reads-kind",
        vector(
            "Without a trust section the policy is in declared mode: kinds are read as written.",
            base,
            "verified",
            [],
            pol={"id": "declared-ops", "requires": ["state_readback"], "max_age_s": 300},
            independence="declared",
        ),
    )
    agent_item = readback(verifier={"id": AGENT_ID, "kind": "independent"})
    yield (
        "kind-edited-self-attested-to-independent",
        rejected(
            "The agent's own readback, its kind edited from self_attested to independent: "
            "signed mode never trusts a kind no observer signed.",
            claim([agent_item]),
            "no_attestation",
        ),
    )
    yield (
        "kind-edited-and-signed-by-agent",
        rejected(
            "The same edited item, signed with the agent's key.",
            signed(claim([agent_item]), AGENT),
            "agent_key",
        ),
    )
    for member, value in (
        ("observed_value", {"billing_zip": "94107", "billing_city": "SF"}),
        ("expected", RECORD_READ),
        ("at", t("01:30")),
        ("subject", "sha256:" + "cd" * 32),
    ):
        yield (
            f"{member.replace('_', '-')}-edited-after-signing",
            rejected(
                f"The item's {member} was edited after the observer signed it.",
                with_item(base, **{member: value}),
                "payload_mismatch",
            ),
        )
    two = [
        {"id": "m1", "kind": "state_write", "target": RECORD, "at": t("00:00"), "digest": DIGEST},
        {"id": "m2", "kind": "state_write", "target": OTHER_RECORD, "at": t("00:10")},
    ]
    covers_base = signed(claim([readback()], two))
    yield (
        "covers-edited-after-signing",
        vector(
            "covers was widened after signing to claim a second mutation.",
            with_item(covers_base, covers=["m1", "m2"]),
            "unverified",
            ["mutation_uncovered", *NOT_VERIFIED],
            {"e1": ["payload_mismatch"]},
        ),
    )
    yield (
        "envelope-copied-into-another-task",
        rejected(
            "A genuine envelope copied into a claim about another task.",
            edited(base, lambda d: d["task"].update(id="task-9999")),
            "bound_to_other_task",
        ),
    )
    yield (
        "mutation-digest-changed-after-observation",
        rejected(
            "The covered mutation's digest changed after the observation: it no longer speaks "
            "for what was observed.",
            edited(base, lambda d: d["mutations"][0].update(digest="sha256:" + "00" * 32)),
            "mutation_digest_changed",
        ),
    )
    no_digest = claim([readback()], [{k: v for k, v in two[0].items() if k != "digest"}])
    yield (
        "mutation-digest-added-after-observation",
        rejected(
            "A mutation observed without a digest gains one afterwards: the binding changed.",
            edited(signed(no_digest), lambda d: d["mutations"][0].update(digest=DIGEST)),
            "mutation_digest_changed",
        ),
    )
    yield (
        "signed-with-unknown-key",
        rejected(
            "Signed with a key no policy lists, under a trusted observer's id.",
            signed(claim([readback()]), STRANGER),
            "signature_invalid",
        ),
    )
    yield (
        "trusted-key-not-allowed-for-check-type",
        rejected(
            "The deploy observer is trusted for endpoint_health only, not for readbacks.",
            signed(claim([readback(verifier={"id": DEPLOY_ID, "kind": "independent"})]), DEPLOY),
            "check_type_not_allowed",
        ),
    )
    yield (
        "signed-by-another-observer-than-named",
        rejected(
            "Names the CI observer but carries the deploy observer's signature.",
            signed(claim([readback()]), DEPLOY),
            "signature_invalid",
        ),
    )
    yield (
        "signed-with-agent-key",
        rejected(
            "The agent signed its own readback and named the CI observer.",
            signed(claim([readback()]), AGENT),
            "agent_key",
        ),
    )
    yield (
        "agent-key-listed-as-observer-too",
        rejected(
            "A key listed both as an observer's and as the agent's never counts.",
            signed(claim([readback()]), AGENT),
            "agent_key",
            pol=policy(
                observers=[
                    {
                        "id": CI_ID,
                        "public_key": AGENT.public.text,
                        "check_types": ["state_readback"],
                    }
                ]
            ),
        ),
    )
    sig = base64.b64decode(envelope(base)["signatures"][0]["sig"])
    for slug, text, what in (
        ("truncated-signature", b64(sig[:40]), "cut to 40 bytes"),
        ("non-base64-signature", "not*base64!", "not base64"),
        ("empty-signature", "", "empty"),
    ):
        yield (
            slug,
            rejected(
                f"The signature is {what} (an Ed25519 signature is 64 bytes, in base64).",
                with_signature(base, sig=text),
                "signature_invalid",
            ),
        )
    payload = base64.b64decode(envelope(base)["payload"])
    corrupted = bytes([sig[0] ^ 1]) + sig[1:]
    stranger_sig = sig_bytes(STRANGER, EVIDENCE_PAYLOAD_TYPE, payload)
    yield (
        "two-signatures-only-untrusted-valid",
        rejected(
            "Two signatures: the one under the CI key id is broken, the valid one is a stranger's.",
            edited(
                base,
                lambda d: envelope(d).update(
                    signatures=[
                        {"keyid": CI.public.keyid, "sig": b64(corrupted)},
                        {"keyid": STRANGER.public.keyid, "sig": b64(stranger_sig)},
                    ]
                ),
            ),
            "signature_invalid",
        ),
    )
    yield (
        "two-signatures-trusted-one-valid",
        vector(
            "An extra junk signature beside the trusted observer's valid one does not hurt.",
            edited(
                base,
                lambda d: envelope(d)["signatures"].insert(0, {"keyid": "junk", "sig": "AAAA"}),
            ),
            "verified",
            [],
        ),
    )
    yield (
        "payload-type-changed",
        rejected(
            "The envelope's payloadType was changed (it is part of what is signed).",
            edited(base, lambda d: envelope(d).update(payloadType="application/vnd.in-toto+json")),
            "payload_type_wrong",
        ),
    )
    yield (
        "unknown-observer",
        rejected(
            "The item names an observer the policy does not list.",
            signed(claim([readback(verifier={"id": "someone/9", "kind": "independent"})])),
            "unknown_observer",
        ),
    )
    yield (
        "keyid-hint-is-only-a-hint",
        vector(
            "A wrong keyid does not hide a valid signature: keyid only orders the keys tried.",
            with_signature(base, keyid="not-a-key-id"),
            "verified",
            [],
        ),
    )
    url_safe = b64(payload).replace("+", "-").replace("/", "_").rstrip("=")
    yield (
        "url-safe-unpadded-base64-accepted",
        vector(
            "DSSE lets signers use URL-safe base64; padding may be left out.",
            edited(base, lambda d: envelope(d).update(payload=url_safe)),
            "verified",
            [],
        ),
    )
    malformed: list[tuple[str, Callable[[Json], None]]] = [
        ("payload-not-base64", lambda d: envelope(d).update(payload="%%%")),
        ("signatures-not-an-array", lambda d: envelope(d).update(signatures={"sig": "AAAA"})),
        ("payload-type-not-a-string", lambda d: envelope(d).update(payloadType=7)),
        ("no-signatures", lambda d: envelope(d).update(signatures=[])),
    ]
    for slug, change in malformed:
        yield (
            f"malformed-envelope-{slug}",
            rejected(
                f"A malformed envelope ({slug.replace('-', ' ')}) is a finding, never a crash.",
                edited(base, change),
                "attestation_malformed",
            ),
        )
    yield (
        "malformed-envelope-too-many-signatures",
        invalid(
            "An envelope with more than 8 signatures (here 9 copies of a genuine one) is invalid "
            "input: it could only make the verifier try keys for long.",
            edited(base, lambda d: envelope(d).update(signatures=envelope(d)["signatures"] * 9)),
            "evidence[0].attestation.signatures",
        ),
    )
    garbage = b'{"_type": "something else"}'
    yield (
        "trusted-signature-over-a-malformed-payload",
        rejected(
            "The CI key signed bytes that are not an evidence payload.",
            edited(
                base,
                lambda d: envelope(d).update(
                    payload=b64(garbage),
                    signatures=[
                        {
                            "keyid": CI.public.keyid,
                            "sig": b64(sig_bytes(CI, EVIDENCE_PAYLOAD_TYPE, garbage)),
                        }
                    ],
                ),
            ),
            "payload_malformed",
        ),
    )
    contradiction = signed(claim([readback(observed=OTHER_ZIP)]))
    yield (
        "signed-contradiction-refutes",
        vector(
            "A trusted observer's signed contradicting readback refutes the claim.",
            contradiction,
            "refuted",
            ["contradicted", *NOT_VERIFIED],
        ),
    )
    yield (
        "observed-value-forged-over-a-signed-contradiction",
        rejected(
            "The agent rewrote a signed contradiction's observed_value to match.",
            with_item(contradiction, observed_value=RECORD_READ),
            "payload_mismatch",
        ),
    )
    yield (
        "expected-forged-over-a-signed-contradiction",
        rejected(
            "The agent rewrote a signed contradiction's expected value to what was observed.",
            with_item(contradiction, expected=OTHER_ZIP),
            "payload_mismatch",
        ),
    )
    yield (
        "agent-signed-contradiction-does-not-refute",
        rejected(
            "A contradiction signed with the agent's key is the agent's report: it cannot refute.",
            signed(claim([readback(observed=OTHER_ZIP)]), AGENT),
            "agent_key",
        ),
    )
    yield (
        "signed-mode-with-no-observers",
        rejected(
            "A signed policy that trusts nobody counts nothing.",
            base,
            "unknown_observer",
            pol=policy(observers=[]),
        ),
    )
    self_attested = signed(claim([readback(verifier={"id": CI_ID, "kind": "self_attested"})]))
    yield (
        "signed-self-attested-kind",
        vector(
            "The trusted observer signed the item as self_attested (observe --self-attested "
            "--sign-key): the signed kind is read, and rule 1 holds in signed mode too.",
            self_attested,
            "unverified",
            NOT_VERIFIED,
            {"e1": ["self_attested"]},
        ),
    )
    yield (
        "signed-self-attested-kind-flipped",
        rejected(
            "The same item with its kind edited to independent after signing.",
            edited(
                self_attested, lambda d: d["evidence"][0]["verifier"].update(kind="independent")
            ),
            "payload_mismatch",
        ),
    )
    both = signed(claim([readback(covers=("m1", "m2"))], two))
    yield (
        "mutation-labels-as-observed-verify",
        vector(
            "One signed readback covers two state writes, described as when observed.",
            both,
            "verified",
            [],
        ),
    )
    for label, value in (("kind", "deploy"), ("target", "acct/9999"), ("at", t("00:20"))):
        relabelled = copy.deepcopy(both)
        relabelled["mutations"][1][label] = value
        yield (
            f"mutation-{label}-relabelled",
            vector(
                f"m2's {label} was changed after the observation: the signature binds each "
                "covered mutation's kind, target and at.",
                relabelled,
                "unverified",
                ["mutation_uncovered", *NOT_VERIFIED],
                {"e1": ["mutation_label_changed"]},
            ),
        )
    old_payload = {
        "_type": "https://completion-claim.dev/evidence/v0.1",
        "task_id": TASK,
        "evidence": {
            **{k: v for k, v in readback().items() if k not in ("id", "verifier")},
            "verifier": {"id": CI_ID},
        },
        "mutations": [{"id": "m1", "digest": DIGEST}],
    }
    old_bytes = canonical_bytes(old_payload)
    yield (
        "old-payload-version",
        rejected(
            "An evidence payload of the old version v0.1, which did not sign verifier.kind nor "
            "the mutations' labels, genuinely signed by the CI observer, is refused.",
            edited(
                base,
                lambda d: d["evidence"][0].update(
                    attestation=CI.sign_envelope(EVIDENCE_PAYLOAD_TYPE, old_bytes)
                ),
            ),
            "payload_malformed",
        ),
    )


# --- output -------------------------------------------------------------------------------------


def build() -> dict[str, str]:
    """Every file, by path relative to ``conformance/``, as the exact text ``main`` writes."""
    files: dict[str, str] = {}
    for name, key in KEYS.items():
        files[f"keys/{name}.key"] = key.pem().decode("ascii")
        files[f"keys/{name}.pub"] = key.public.text + "\n"
    seen: set[str] = set()
    for number, (slug, body) in enumerate(_vectors(), start=1):
        assert slug not in seen, f"duplicate slug {slug}"
        seen.add(slug)
        text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        files[f"signed/{number:03d}-{slug}.json"] = text
    return files


def main() -> int:
    files = build()
    for folder, pattern in ((SIGNED_DIR, "*.json"), (KEY_DIR, "*.key"), (KEY_DIR, "*.pub")):
        folder.mkdir(exist_ok=True)
        for stale in folder.glob(pattern):
            if f"{folder.name}/{stale.name}" not in files:
                stale.unlink()
    for name, text in files.items():
        path = HERE / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {SIGNED_DIR} and {KEY_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
