"""Signed claims in ``make bench``: what proving independence costs.

Prints (1) DSSE envelope verifications per second: decoding one evidence envelope and checking
its Ed25519 signature over PAE, with the raw Ed25519 verify rate beside it for scale; and (2) the
ratio of verifying a signed claim under a signed policy to verifying the same claim, without its
attestations, in declared mode, for a typical claim and a large one. Each figure is the best of
several repeats (``time.perf_counter``); keys come from fixed seeds, so every run measures the
same bytes.
"""

from __future__ import annotations

import copy
import gc
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from completion_claim import load_claim, parse_claim, parse_policy, verify
from completion_claim.timefmt import format_time
from completion_claim.trust import dsse
from completion_claim.trust.evidence import sign_evidence
from completion_claim.trust.keys import SigningKey

OBSERVER = SigningKey.from_seed("bench/observer")
AGENT = SigningKey.from_seed("bench/agent")
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


SIGNED_POLICY = parse_policy(
    {
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
                }
            ],
            "agent_keys": [AGENT.public.text],
        },
    }
)
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


def claim_ratio(items: int, rounds: int) -> tuple[float, float, float, float]:
    """(signed s, unsigned s, ratio verify-only, ratio with load_claim) per claim."""
    signed_doc = signed_claim(items)
    unsigned_doc = unsigned(signed_doc)
    signed_claim_obj, unsigned_claim_obj = parse_claim(signed_doc), parse_claim(unsigned_doc)
    assert verify(signed_claim_obj, DECIDED_AT, SIGNED_POLICY).state == "verified"
    assert verify(unsigned_claim_obj, DECIDED_AT, DECLARED_POLICY).state == "verified"
    signed_s = best(lambda: verify(signed_claim_obj, DECIDED_AT, SIGNED_POLICY), rounds)
    unsigned_s = best(lambda: verify(unsigned_claim_obj, DECIDED_AT, DECLARED_POLICY), rounds)
    signed_bytes, unsigned_bytes = (
        json.dumps(signed_doc).encode(),
        json.dumps(unsigned_doc).encode(),
    )
    signed_full = best(lambda: verify(load_claim(signed_bytes), DECIDED_AT, SIGNED_POLICY), rounds)
    unsigned_full = best(
        lambda: verify(load_claim(unsigned_bytes), DECIDED_AT, DECLARED_POLICY), rounds
    )
    return signed_s, unsigned_s, signed_s / unsigned_s, signed_full / unsigned_full


def run() -> None:
    print("signed claims (DSSE, Ed25519)")
    envelopes, raw = envelope_rates()
    print(f"  envelope verifications/s: {envelopes:10,.0f}   (raw Ed25519 verify/s: {raw:,.0f})")
    print(f"  {'claim':<26}{'signed':>12}{'unsigned':>12}{'ratio':>9}{'ratio incl. load':>19}")
    for label, items, rounds in (("typical (3 items)", 3, 300), ("large (1,000 items)", 1000, 2)):
        signed_s, unsigned_s, ratio, ratio_full = claim_ratio(items, rounds)
        print(
            f"  {label:<26}{signed_s * 1e3:>10.3f}ms{unsigned_s * 1e3:>10.3f}ms"
            f"{ratio:>9.1f}{ratio_full:>19.1f}"
        )


if __name__ == "__main__":
    run()
