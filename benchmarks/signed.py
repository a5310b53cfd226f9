"""Signed claims in ``make bench``: what proving independence costs.

Prints (1) DSSE envelope verifications per second: decoding one evidence envelope and checking
its Ed25519 signature over PAE, with the raw Ed25519 verify rate beside it for scale; (2) the
ratio of verifying a signed claim under a signed policy (on the default threads, and on one) to
verifying the same claim, without its attestations, in declared mode, for a typical claim and a
large one, and that ratio once the Ed25519 checks themselves are subtracted (target: at most 3);
and (3) the worst claim the
signature bounds admit: every envelope full of forged signatures, the claim at its total cap.
Each figure is the best of several repeats (``time.perf_counter``); keys come from fixed seeds,
so every run measures the same bytes.

``python benchmarks/signed.py --write-forged DIR [ITEMS SIGNATURES]`` writes DIR/forged.json
(default: issue 7's 32 MiB claim of 17,781 items x 16 forged signatures) and
DIR/signed-policy.json, to time ``claim verify DIR/forged.json --policy DIR/signed-policy.json``.
"""

from __future__ import annotations

import base64
import copy
import gc
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from completion_claim import load_claim, parse_claim, parse_policy, verify
from completion_claim.signature_bounds import MAX_SIGNATURES_PER_CLAIM, MAX_SIGNATURES_PER_ENVELOPE
from completion_claim.timefmt import format_time
from completion_claim.trust import check_signatures, dsse
from completion_claim.trust.evidence import (
    EVIDENCE_PAYLOAD_TYPE,
    sign_evidence,
    signed_independence,
)
from completion_claim.trust.keys import SigningKey

OBSERVER = SigningKey.from_seed("bench/observer")
AGENT = SigningKey.from_seed("bench/agent")
DEPLOY = SigningKey.from_seed("bench/deploy")
STRANGER = SigningKey.from_seed("bench/stranger")
OBSERVER_ID = "ci-observer/1"
T0 = datetime(2026, 8, 27, 18, 0, tzinfo=UTC)
DECIDED_AT = T0 + timedelta(minutes=4)
REPEATS = 5

Json = dict[str, Any]


def signed_claim(items: int) -> Json:
    """A claim of ``items`` state writes, each read back after it and signed by the observer."""
    doc: Json = {
        "spec_version": "0.1",
        "task": {"id": "bench-task"},
        "claimed_outcome": "Updated the records.",
        "mutations": [],
        "evidence": [],
    }
    for i in range(items):
        doc["mutations"].append(
            {
                "id": f"m{i}",
                "kind": "state_write",
                "target": f"accounts/{i}",
                "at": format_time(T0 + timedelta(milliseconds=i)),
                "digest": f"sha256:{i:064x}",
            }
        )
        doc["evidence"].append(
            {
                "id": f"e{i}",
                "check_type": "state_readback",
                "target": f"accounts/{i}",
                "expected": {"billing_zip": "94107", "owner": f"user-{i}"},
                "observed_value": {"billing_zip": "94107", "owner": f"user-{i}", "version": i},
                "at": format_time(T0 + timedelta(seconds=60, milliseconds=i)),
                "covers": [f"m{i}"],
                "verifier": {"id": OBSERVER_ID, "kind": "independent"},
                "subject": f"sha256:{i + 1:064x}",
            }
        )
    claim = parse_claim(doc)
    for item in doc["evidence"]:
        item["attestation"] = sign_evidence(item, claim, OBSERVER)
    return doc


def unsigned(doc: Json) -> Json:
    out = copy.deepcopy(doc)
    for item in out["evidence"]:
        del item["attestation"]
    return out


def forged_claim(items: int, signatures: int) -> Json:
    """Issue 7's attack, compact: ``items`` readbacks naming the trusted observer, each envelope
    holding ``signatures`` forged signatures that cost a full Ed25519 verification (a real R, a
    reduced S) and verify under no key. Nothing is signed, so it is quick to build."""
    genuine = STRANGER.private.sign(dsse.pae(EVIDENCE_PAYLOAD_TYPE, b"{}"))
    doc: Json = {
        "spec_version": "0.1",
        "task": {"id": "t"},
        "claimed_outcome": "",
        "mutations": [{"id": "m", "kind": "state_write", "target": "a", "at": format_time(T0)}],
        "evidence": [],
    }
    for i in range(items):
        forged = []
        for j in range(signatures):
            k = (i * signatures + j) % 65536
            sig = genuine[:32] + bytes([genuine[32] ^ (k & 0xFF), genuine[33] ^ (k >> 8)])
            forged.append({"sig": base64.b64encode(sig + genuine[34:]).decode()})
        doc["evidence"].append(
            {
                "check_type": "state_readback",
                "target": "a",
                "expected": {"z": 1},
                "observed_value": {"z": 1},
                "at": format_time(T0 + timedelta(seconds=60)),
                "covers": ["m"],
                "verifier": {"id": OBSERVER_ID, "kind": "independent"},
                "attestation": {
                    "payloadType": EVIDENCE_PAYLOAD_TYPE,
                    "payload": "e30=",
                    "signatures": forged,
                },
            }
        )
    return doc


SIGNED_POLICY_DOC: Json = {
    "id": "bench-signed",
    "requires": ["state_readback"],
    "max_age_s": 300,
    "trust": {
        "mode": "signed",
        "observers": [
            {
                "id": OBSERVER_ID,
                "public_key": OBSERVER.public.text,
                "check_types": ["state_readback"],
            },
            {
                "id": "deploy/1",
                "public_key": DEPLOY.public.text,
                "check_types": ["endpoint_health"],
            },
        ],
        "agent_keys": [AGENT.public.text],
    },
}
SIGNED_POLICY = parse_policy(SIGNED_POLICY_DOC)
DECLARED_POLICY = parse_policy(
    {"id": "bench-declared", "requires": ["state_readback"], "max_age_s": 300}
)


def best(work: Callable[[], object], rounds: int) -> float:
    """Seconds per call, best of REPEATS runs of ``rounds`` calls."""
    timings = []
    for _ in range(REPEATS):
        gc.collect()
        start = time.perf_counter()
        for _ in range(rounds):
            work()
        timings.append((time.perf_counter() - start) / rounds)
    return min(timings)


def envelope_rates() -> tuple[float, float]:
    envelope = signed_claim(1)["evidence"][0]["attestation"]
    keys = [AGENT.public, OBSERVER.public]  # the observer's key is tried second, as in a policy
    decoded = dsse.decode_envelope(envelope)
    signature, message = decoded.signatures[0].sig, decoded.pae()
    public = OBSERVER.private.public_key()

    def full() -> object:
        return dsse.first_verifying_key(dsse.decode_envelope(envelope), keys[1:])

    assert full() == OBSERVER.public
    return 1 / best(full, 2000), 1 / best(lambda: public.verify(signature, message), 2000)


@dataclass(frozen=True)
class Ratio:
    """Seconds per claim, signed (on the default threads and on one) and unsigned."""

    items: int
    signed: float
    signed_one_thread: float
    unsigned: float
    signed_full: float  # load_claim included, default threads
    unsigned_full: float

    def over_ed25519(self, verify_s: float) -> float:
        """Signed (one thread) over unsigned once the Ed25519 checks themselves (one per item)
        are subtracted: what proving independence costs beyond the cryptography."""
        return (self.signed_one_thread - self.items * verify_s) / self.unsigned


def claim_ratio(items: int, rounds: int) -> Ratio:
    signed_doc = signed_claim(items)
    unsigned_doc = unsigned(signed_doc)
    signed_claim_obj, unsigned_claim_obj = parse_claim(signed_doc), parse_claim(unsigned_doc)
    one_thread = partial(signed_independence, threads=1)
    for check in (check_signatures, one_thread):
        decided = verify(signed_claim_obj, DECIDED_AT, SIGNED_POLICY, signatures=check)
        assert decided.state == "verified"
    assert verify(unsigned_claim_obj, DECIDED_AT, DECLARED_POLICY).state == "verified"

    def judge(claim: Any, policy: Any, check: Any = check_signatures) -> object:
        return verify(claim, DECIDED_AT, policy, signatures=check)

    signed_bytes, unsigned_bytes = (
        json.dumps(signed_doc).encode(),
        json.dumps(unsigned_doc).encode(),
    )
    return Ratio(
        items,
        best(lambda: judge(signed_claim_obj, SIGNED_POLICY), rounds),
        best(lambda: judge(signed_claim_obj, SIGNED_POLICY, one_thread), rounds),
        best(lambda: judge(unsigned_claim_obj, DECLARED_POLICY), rounds),
        best(lambda: judge(load_claim(signed_bytes), SIGNED_POLICY), rounds),
        best(lambda: judge(load_claim(unsigned_bytes), DECLARED_POLICY), rounds),
    )


def worst_bounded_claim() -> float:
    """Seconds to load and verify the worst claim the bounds admit."""
    items = MAX_SIGNATURES_PER_CLAIM // MAX_SIGNATURES_PER_ENVELOPE
    data = json.dumps(forged_claim(items, MAX_SIGNATURES_PER_ENVELOPE)).encode()
    assert (
        verify(load_claim(data), DECIDED_AT, SIGNED_POLICY, signatures=check_signatures).state
        == "unverified"
    )
    return best(
        lambda: verify(load_claim(data), DECIDED_AT, SIGNED_POLICY, signatures=check_signatures), 1
    )


def write_forged(folder: str, items: int, signatures: int) -> None:
    with open(f"{folder}/forged.json", "w", encoding="utf-8") as out:
        json.dump(forged_claim(items, signatures), out, separators=(",", ":"))
    with open(f"{folder}/signed-policy.json", "w", encoding="utf-8") as out:
        json.dump(SIGNED_POLICY_DOC, out)


def run() -> list[tuple[str, float, float]]:
    """Print the figures; return (label, value, limit) for each target they are measured by."""
    print("signed claims (DSSE, Ed25519)")
    envelopes, raw = envelope_rates()
    print(f"  envelope verifications/s: {envelopes:10,.0f}   (raw Ed25519 verify/s: {raw:,.0f})")
    print(
        f"  {'claim':<22}{'signed':>11}{'1 thread':>11}{'unsigned':>11}{'ratio':>8}"
        f"{'minus Ed25519':>15}{'incl. load':>12}"
    )
    targets = []
    for label, items, rounds in (("typical (3 items)", 3, 300), ("large (1,000 items)", 1000, 2)):
        ratio = claim_ratio(items, rounds)
        beyond = ratio.over_ed25519(1 / raw)
        print(
            f"  {label:<22}{ratio.signed * 1e3:>9.3f}ms{ratio.signed_one_thread * 1e3:>9.3f}ms"
            f"{ratio.unsigned * 1e3:>9.3f}ms{ratio.signed / ratio.unsigned:>8.1f}{beyond:>15.1f}"
            f"{ratio.signed_full / ratio.unsigned_full:>12.1f}"
        )
        targets.append((f"signed over unsigned minus Ed25519, {label}", beyond, 3.0))
    print(
        "  minus Ed25519: (signed on one thread - items x one raw Ed25519 verify) / unsigned;"
        " signed: the default threads"
    )
    worst = worst_bounded_claim()
    print(
        f"  worst bounded claim ({MAX_SIGNATURES_PER_CLAIM:,} forged signatures, 3 keys): "
        f"{worst:.2f}s"
    )
    return targets


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write-forged"]:
        items, signatures = (int(n) for n in sys.argv[3:5] or ("17781", "16"))
        write_forged(sys.argv[2], items, signatures)
    else:
        run()
