"""``make bench``: how long does it take to build, audit and prove a 100,000-entry ledger?

Builds a SQLite ledger of ``--entries`` decided claims (default 100,000) with one ``append`` per
entry, exactly as the service does (a transaction, a signed tree head each), keeping the head at
half the size the way a client would. Then it measures:

  - appends per second while building;
  - the full audit, as a user runs it: ``claim ledger verify FILE --since HALF.json --log-key``
    (every row rehashed, every head's signature and root checked, consistency with the kept head);
  - an offline consistency check: a proof from a kept head to the latest, built by the ledger and
    checked by ``merkle.verify_consistency`` from the proof and the two roots alone;
  - ``claim ledger prove FILE INDEX`` for one entry.

This is a benchmark, not a test: it prints figures and exits 0. ``--entries 5000`` for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from completion_claim import parse_claim, verify
from completion_claim.gate.run import policy_json
from completion_claim.model import BUILTIN_POLICY
from completion_claim.service import merkle
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import NewEntry
from completion_claim.trust.keys import SigningKey

CLAIM = Path(sys.executable).parent / "claim"
T0 = datetime(2026, 8, 27, 18, 0, 0, tzinfo=UTC)
KEY = SigningKey.from_seed("benchmarks/ledger.py")
CHECKS = 1000


def decided(observed_zip: str | None, task: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A small claim and its real verdict: verified, refuted (another zip) or unverified (no
    evidence)."""
    at = T0.isoformat().replace("+00:00", "Z")
    evidence = []
    if observed_zip is not None:
        evidence.append(
            {
                "check_type": "state_readback",
                "target": "accounts/4471",
                "expected": {"billing_zip": "94107"},
                "observed_value": {"billing_zip": observed_zip},
                "at": (T0 + timedelta(seconds=10)).isoformat().replace("+00:00", "Z"),
                "covers": ["m1"],
                "verifier": {"id": "ci/1", "kind": "independent"},
            }
        )
    claim = {
        "spec_version": "0.1",
        "task": {"id": task, "description": "Update the billing address"},
        "claimed_outcome": "Updated the billing address on account 4471.",
        "mutations": [
            {"id": "m1", "kind": "state_write", "target": "accounts/4471", "at": at},
        ],
        "evidence": evidence,
    }
    verdict = verify(parse_claim(claim), T0 + timedelta(seconds=20), BUILTIN_POLICY)
    return claim, verdict.to_json()


def build(path: Path, entries: int, half: Path) -> float:
    """Append ``entries`` entries; save the head at half the size. Appends per second."""
    kinds = [decided("94107", "deploy"), decided("10001", "deploy"), decided(None, "deploy")]
    policy = policy_json(BUILTIN_POLICY)
    ledger = Ledger.open(str(path), KEY)
    try:
        started = time.perf_counter()
        for i in range(entries):
            claim, verdict = kinds[i % 3]
            ledger.append(
                NewEntry(
                    claim={**claim, "task": {"id": f"task-{i}", "description": "bench"}},
                    policy=policy,
                    verdict=verdict,
                    submitted_by=f"agent-{i % 7}",
                    via="api",
                    recorded_at=T0 + timedelta(seconds=i),
                )
            )
            if i + 1 == entries // 2:
                half.write_text(json.dumps(ledger.tree_head().to_json()), encoding="utf-8")
            if (i + 1) % 20_000 == 0:
                print(f"  {i + 1} entries appended", flush=True)
        return entries / (time.perf_counter() - started)
    finally:
        ledger.close()


def timed_command(*args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(CLAIM), *args], capture_output=True, text=True, timeout=900, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"claim {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return elapsed, done.stdout.splitlines()[0]


def consistency_checks(path: Path, entries: int) -> tuple[float, float, int]:
    """Microseconds to build one consistency proof (from the database) and to check it offline,
    each the mean over ``CHECKS`` old sizes; and the longest proof's length."""
    ledger = Ledger.open(str(path))
    try:
        latest = ledger.tree_head()
        sizes = [1 + (i * 7919) % entries for i in range(CHECKS)]
        started = time.perf_counter()
        proofs = [ledger.consistency_proof(size, latest.size) for size in sizes]
        build_us = (time.perf_counter() - started) / CHECKS * 1e6
        # The old roots a client would have kept: the signed heads of those sizes.
        roots = {size: ledger.tree_head(size).root_hash for size in sizes}
    finally:
        ledger.close()
    started = time.perf_counter()
    for proof in proofs:
        merkle.verify_consistency(proof, roots[proof.old_size], latest.root_hash)
    check_us = (time.perf_counter() - started) / CHECKS * 1e6
    return build_us, check_us, max(len(proof.path) for proof in proofs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    options = parser.parse_args()
    entries = max(2, options.entries)
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as folder:
        path = Path(folder) / "ledger.sqlite"
        half = Path(folder) / "half.json"
        print(f"ledger benchmark: {entries} entries in a SQLite file, one append each")
        rate = build(path, entries, half)
        size_mb = sum(p.stat().st_size for p in Path(folder).glob("ledger.sqlite*")) / 1e6
        print(f"appended:            {rate:,.0f} entries/s ({size_mb:,.0f} MB on disk)")
        audit_s, summary = timed_command(
            "ledger", "verify", str(path), "--since", str(half), "--log-key", KEY.public.text
        )
        print(f"full audit:          {audit_s:.1f} s ({entries / audit_s:,.0f} entries/s)")
        print(f"                     claim says: {summary}")
        build_us, check_us, longest = consistency_checks(path, entries)
        print(f"consistency proof:   {build_us:,.0f} us to build from the database (mean)")
        print(f"offline check:       {check_us:,.0f} us per proof (mean, longest {longest} hashes)")
        prove_s, _ = timed_command("ledger", "prove", str(path), str(entries // 3))
        print(f"claim ledger prove:  {prove_s:.2f} s (the whole command, start-up included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
