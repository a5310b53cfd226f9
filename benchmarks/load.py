"""Load on the verification service: several ``claim serve`` processes, one ledger, many clients.

Starts ``--servers`` service processes on loopback (ports chosen by the system) sharing one
ledger database and one key, then ``--clients`` threads post ``--claims`` claims in all, spread
over the processes; each request has a timeout and the whole run a deadline. Afterwards it checks
what a team would need to trust the numbers: every posted claim is in the ledger exactly once,
the indices run 0..N-1 without a gap, the full audit passes, and every tree head a client saw
during the run is consistent with the final one (RFC 6962 consistency proofs, checked offline).

Prints throughput and the p50/p99 latency of ``POST /v1/claims`` for each configuration:
SQLite with one process, and PostgreSQL with two (the "several machines" shape). PostgreSQL runs
in its own schema on 127.0.0.1:5432, dropped at the end.

Run: ``.venv/bin/python benchmarks/load.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

from completion_claim.service.ledger import Ledger
from completion_claim.service.merkle import verify_consistency
from completion_claim.service.records import ConsistencyProof
from completion_claim.service.tree_head import tree_head_from_json
from completion_claim.timefmt import format_time
from completion_claim.trust.keys import SigningKey, write_private_key

CLAIM = str(Path(sys.executable).with_name("claim"))
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
LISTENING = re.compile(r"listening on (http://\S+)")
REQUEST_TIMEOUT_S = 30.0
Json = dict[str, Any]


def claim_document(number: int, now: datetime) -> Json:
    """A small claim; one in three is verified, refuted and unverified under the built-in policy."""
    changed = now - timedelta(seconds=90)
    document: Json = {
        "spec_version": "0.1",
        "task": {"id": f"load-{number}", "description": "load test"},
        "claimed_outcome": f"Fixed bug {number}; tests pass",
        "mutations": [
            {
                "id": "m1",
                "kind": "file_write",
                "target": f"src/mod{number % 50}.py",
                "at": format_time(changed),
            },
        ],
        "evidence": [],
    }
    if number % 3 != 2:
        passed = number % 3 == 0
        document["evidence"].append(
            {
                "id": "e1",
                "check_type": "test_run",
                "target": "tests",
                "covers": ["m1"],
                "verifier": {"kind": "independent", "id": "ci/load"},
                "at": format_time(changed + timedelta(seconds=30)),
                "expected": {"exit_code": 0, "failed": 0},
                "observed_value": {
                    "exit_code": 0 if passed else 1,
                    "passed": 12 if passed else 11,
                    "failed": 0 if passed else 1,
                },
            }
        )
    return document


@dataclass
class Outcome:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    heads: list[Json] = field(default_factory=list)
    indices: dict[str, int] = field(default_factory=dict)  # task id -> ledger index
    lock: threading.Lock = field(default_factory=threading.Lock)


def post_all(urls: Sequence[str], claims: int, clients: int, deadline_s: float) -> Outcome:
    work: queue.Queue[int] = queue.Queue()
    for number in range(claims):
        work.put(number)
    outcome = Outcome()
    stop_at = time.monotonic() + deadline_s
    now = datetime.now(UTC)

    def client(position: int) -> None:
        base = urls[position % len(urls)]
        with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT_S) as http:
            while time.monotonic() < stop_at:
                try:
                    number = work.get_nowait()
                except queue.Empty:
                    return
                body = json.dumps(claim_document(number, now)).encode()
                started = time.perf_counter()
                try:
                    answer = http.post(
                        "/v1/claims", content=body, headers={"content-type": "application/json"}
                    )
                except httpx.HTTPError as exc:
                    with outcome.lock:
                        outcome.errors.append(f"load-{number}: {type(exc).__name__}: {exc}")
                    continue
                elapsed = time.perf_counter() - started
                with outcome.lock:
                    if answer.status_code != 201:
                        outcome.errors.append(f"load-{number}: {answer.status_code} {answer.text}")
                        continue
                    outcome.latencies.append(elapsed)
                    outcome.indices[f"load-{number}"] = answer.json()["index"]
                if number % 100 == 0:  # heads seen along the way, checked against the last
                    head = http.get("/v1/tree-head").json()
                    with outcome.lock:
                        outcome.heads.append(head)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if not work.empty():
        outcome.errors.append(f"deadline of {deadline_s:.0f} s reached with claims left to post")
    return outcome


@contextmanager
def servers(count: int, ledger_url: str, key: Path, logs: Path) -> Iterator[list[str]]:
    """The access log goes to a file: a pipe nobody reads would fill and stall the server."""
    processes: list[subprocess.Popen[str]] = []
    urls = []
    try:
        for number in range(count):
            log = logs / f"serve-{number}.log"
            with log.open("w") as stderr:
                process = subprocess.Popen(
                    [CLAIM, "serve", "--ledger", ledger_url, "--key", str(key), "--port", "0"],
                    stdout=subprocess.PIPE, stderr=stderr, text=True,
                )  # fmt: skip
            processes.append(process)
            assert process.stdout is not None
            line = process.stdout.readline()  # printed once the port is bound
            found = LISTENING.search(line)
            if found is None:
                raise SystemExit(f"load: claim serve did not start: {line}{log.read_text()}")
            urls.append(found.group(1))
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)


def check(ledger_url: str, outcome: Outcome, key: SigningKey, claims: int) -> list[str]:
    """What must hold after the run; each problem as one line."""
    problems = list(outcome.errors)
    ledger = Ledger.open(ledger_url)
    try:
        final = ledger.tree_head()
        if final.size != claims:
            problems.append(f"ledger holds {final.size} entries, {claims} were posted")
        seen: dict[str, int] = {}
        for index in range(final.size):
            entry = ledger.get(index)
            if entry is None:
                problems.append(f"entry {index} is missing")
                continue
            if entry.task_id in seen:
                problems.append(f"{entry.task_id} recorded twice ({seen[entry.task_id]}, {index})")
            seen[entry.task_id] = index
        if seen != outcome.indices:
            problems.append("the indices the service answered differ from the ledger's")
        ledger.audit(log_key=key.public)
        for shown in outcome.heads:
            head = tree_head_from_json(shown)
            if head.size == 0:
                continue
            proof: ConsistencyProof = ledger.consistency_proof(head.size, final.size)
            verify_consistency(proof, head.root_hash, final.root_hash)
    finally:
        ledger.close()
    return problems


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run(name: str, ledger_url: str, processes: int, args: argparse.Namespace) -> bool:
    with tempfile.TemporaryDirectory(prefix="claim-load-") as folder:
        key = SigningKey.generate()
        key_path = Path(folder) / "service-key.pem"
        write_private_key(str(key_path), key)
        with servers(processes, ledger_url, key_path, Path(folder)) as urls:
            started = time.perf_counter()
            outcome = post_all(urls, args.claims, args.clients, args.deadline)
            elapsed = time.perf_counter() - started
        problems = check(ledger_url, outcome, key, args.claims)
    done = len(outcome.latencies)
    print(
        f"{name:<28} {processes} process(es) {args.clients} clients  "
        f"{done} claims in {elapsed:6.2f} s  {done / elapsed:7.1f} claims/s  "
        f"p50 {percentile(outcome.latencies, 0.50) * 1000:6.1f} ms  "
        f"p99 {percentile(outcome.latencies, 0.99) * 1000:6.1f} ms  "
        f"heads checked {len(outcome.heads)}"
        if done
        else f"{name}: no claim was recorded"
    )
    for problem in problems[:10]:
        print(f"  PROBLEM {problem}")
    return not problems and done == args.claims


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds for all requests")
    parser.add_argument("--quick", action="store_true", help="200 claims, for a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.claims = 200
    ok = True
    with tempfile.TemporaryDirectory(prefix="claim-load-sqlite-") as folder:
        ok &= run("SQLite", f"sqlite:///{folder}/ledger.sqlite", 1, args)
    schema = f"ledger_load_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        try:
            ok &= run("PostgreSQL", f"{POSTGRES}?options=-csearch_path%3D{schema}", 2, args)
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
    print("every check held" if ok else "load: a check failed (see PROBLEM lines)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
