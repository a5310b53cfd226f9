"""Keys, signed policies and genuinely signed claims for the trust tests."""

from __future__ import annotations

import copy
from typing import Any

from completion_claim import Claim, Policy, Verdict, parse_claim, parse_policy, verify
from completion_claim.trust import check_signatures
from completion_claim.trust.evidence import sign_evidence
from completion_claim.trust.keys import SigningKey
from completion_claim.verify import Finding

from .builders import at, claim_doc, evidence, mutation

CI = SigningKey.from_seed("tests/ci")
DEPLOY = SigningKey.from_seed("tests/deploy")
AGENT = SigningKey.from_seed("tests/agent")
STRANGER = SigningKey.from_seed("tests/stranger")
CI_ID = "ci/1"  # the verifier id builders.evidence writes
DEPLOY_ID = "deploy/1"
DIGEST = "sha256:" + "5e" * 32
DECIDE = at(20)

Json = Any


def policy_doc(**trust_over: Json) -> dict[str, Json]:
    trust: dict[str, Json] = {
        "mode": "signed",
        "observers": [
            {"id": CI_ID, "public_key": CI.public.text, "check_types": ["state_readback"]},
            {"id": DEPLOY_ID, "public_key": DEPLOY.public.text, "check_types": ["endpoint_health"]},
        ],
        "agent_keys": [AGENT.public.text],
    }
    trust.update(trust_over)
    return {"id": "signed-ops", "requires": ["state_readback"], "max_age_s": 300, "trust": trust}


SIGNED_POLICY = parse_policy(policy_doc())


def sign(doc: Json, key: SigningKey = CI, index: int = 0) -> Json:
    """A copy of ``doc`` whose evidence ``index`` carries ``key``'s signature, bound to the
    claim as it stands."""
    out = copy.deepcopy(doc)
    item = out["evidence"][index]
    item.pop("attestation", None)
    item["attestation"] = sign_evidence(item, parse_claim(out), key)
    return out


def genuine_doc(**item_over: Json) -> Json:
    """One state_write with a digest, read back after it by the trusted CI observer, signed."""
    doc = claim_doc([mutation(digest=DIGEST)], [evidence(id="e1", **item_over)])
    return sign(doc)


def judge(doc: Json, policy: Policy | None = SIGNED_POLICY) -> Verdict:
    claim: Claim = parse_claim(doc)
    return verify(claim, DECIDE, policy, signatures=check_signatures)


def findings(verdict: Verdict, ref: str = "e1") -> tuple[Finding, ...]:
    return next(r.reasons for r in verdict.evidence if r.evidence == ref)


def envelope(doc: Json, index: int = 0) -> Json:
    return doc["evidence"][index]["attestation"]
