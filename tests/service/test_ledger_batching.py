"""Sequencing apart from integration, on a real SQLite file and the real PostgreSQL: concurrent
appends share transactions and get consecutive indices, a signed head covers each batch, a proof
is answered once its entry is integrated, and an acknowledged claim survives a kill -9 of a real
``claim serve``."""

from __future__ import annotations

import json
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from completion_claim.service import merkle
from completion_claim.service.app import create_app
from completion_claim.service.ledger import Ledger, LedgerTampered
from completion_claim.service.settings import ServiceSettings
from completion_claim.trust.canonical import canonical_bytes
from completion_claim.trust.keys import write_private_key
from tests.fixtures.serve import served
from tests.service._api import JSON, fresh_claim
from tests.service.conftest import LOG_KEY, T0, LedgerDb, fresh_entry

# Long enough that nothing is integrated by the integrator's own passes while a test looks:
# a pass comes a tenth of the delay after a sequencing, and ``close`` cuts the wait short.
HELD_S = 600.0


def test_concurrent_appends_get_distinct_consecutive_indices(ledger: Ledger) -> None:
    with ThreadPoolExecutor(8) as pool:
        appended = list(pool.map(lambda _: ledger.append(fresh_entry()), range(40)))
    assert sorted(entry.index for entry in appended) == list(range(40))
    for entry in appended:
        assert ledger.get(entry.index) == entry
    report = ledger.audit(log_key=LOG_KEY.public)
    assert (report.size, report.pending) == (40, 0)
    # With no merge delay an append returns under a signed head: one head per batch at most.
    assert report.heads <= 41


def test_with_no_merge_delay_each_append_returns_under_a_signed_head(ledger: Ledger) -> None:
    with ThreadPoolExecutor(4) as pool:
        sizes = list(
            pool.map(lambda _: (ledger.append(fresh_entry()).index, ledger.sizes()), range(12))
        )
    for index, (integrated, _) in sizes:
        assert index < integrated


def test_a_sequenced_entry_is_durable_and_a_head_covers_its_batch(ledger_url: str) -> None:
    held = Ledger.open(ledger_url, LOG_KEY, clock=lambda: T0, merge_delay=HELD_S)
    try:
        with ThreadPoolExecutor(4) as pool:
            appended = list(pool.map(lambda _: held.append(fresh_entry()), range(6)))
        assert held.sizes() == (0, 6)  # sequenced at once, not yet integrated
        reader = Ledger.open(ledger_url)
        try:
            for entry in appended:
                assert reader.get(entry.index) == entry
            report = reader.audit(log_key=LOG_KEY.public)
            assert (report.size, report.pending, report.head.size) == (6, 6, 0)
        finally:
            reader.close()
        head = held.integrate()
        assert head is not None
        assert head.size == 6
        assert held.integrate() is None  # nothing waits any more
        for entry in appended:
            proof = held.inclusion_proof(entry.index)
            assert proof.leaf_hash == entry.leaf_hash
            merkle.verify_inclusion(proof, head.root_hash)
    finally:
        held.close()


def test_close_integrates_what_is_left(ledger_url: str) -> None:
    held = Ledger.open(ledger_url, LOG_KEY, clock=lambda: T0, merge_delay=HELD_S)
    held.append(fresh_entry())
    held.close()
    reader = Ledger.open(ledger_url)
    try:
        assert reader.sizes() == (1, 1)
    finally:
        reader.close()


def test_another_keyholders_sequenced_entries_are_integrated(
    ledger: Ledger, ledger_url: str
) -> None:
    """Two processes of one service: what one sequenced, the other's integrator signs."""
    other = Ledger.open(ledger_url, LOG_KEY, clock=lambda: T0, merge_delay=HELD_S)
    try:
        entry = other.append(fresh_entry())
        head = ledger.integrate()
        assert head is not None
        assert head.size == entry.index + 1
    finally:
        other.close()


def test_attack_195_an_entry_written_behind_the_services_back_is_never_integrated(
    ledger: Ledger, ledger_db: LedgerDb
) -> None:
    """A row added to the entries table by someone without the log key is not signed into the
    log by the integrator, and the audit names it."""
    ledger.append(fresh_entry())
    ledger_db.execute(
        "INSERT INTO ledger_entries SELECT 1, leaf_hash, leaf, recorded_us, recorded_day, state,"
        " policy_id, task_id, submitted_by, via, said_done FROM ledger_entries"
        " WHERE entry_index = 0"
    )
    with pytest.raises(LedgerTampered, match="entry 1: sequenced without the log key's seal"):
        ledger.integrate()
    assert ledger.tree_head().size == 1
    with pytest.raises(LedgerTampered, match="entry 1: sequenced without the log key's seal"):
        ledger.audit()


def test_attack_195_a_seal_moved_to_other_entries_does_not_verify(
    ledger_url: str, ledger_db: LedgerDb
) -> None:
    held = Ledger.open(ledger_url, LOG_KEY, clock=lambda: T0, merge_delay=HELD_S)
    try:
        held.append(fresh_entry(task="one"))
        held.append(fresh_entry(task="two"))
        ledger_db.execute(
            "UPDATE ledger_batches"
            " SET seal = (SELECT seal FROM ledger_batches WHERE first_index = 1)"
            " WHERE first_index = 0"
        )
        with pytest.raises(LedgerTampered, match="entries 0 to 0: their batch's seal does not"):
            held.integrate()
        assert held.sizes() == (0, 2)
    finally:
        held.close()  # its last pass is refused the same way, and logged


def test_a_proof_waits_for_integration_or_says_the_entry_is_not_integrated_yet(
    ledger_url: str,
) -> None:
    """A service whose merge delay is 0 does not wait: an entry another process sequenced and
    has not integrated is answered 503 with Retry-After; once integrated, the proof is there."""
    held = Ledger.open(ledger_url, LOG_KEY, clock=lambda: T0, merge_delay=HELD_S)
    answering = Ledger.open(ledger_url, LOG_KEY, clock=lambda: T0)
    try:
        entry = held.append(fresh_entry())
        app = create_app(ServiceSettings(ledger_url=ledger_url, key_path=Path("unused")), answering)
        with TestClient(app) as client:
            assert client.get(f"/v1/claims/{entry.index}").status_code == 200  # durable
            pending = client.get(f"/v1/proof/{entry.index}")
            assert pending.status_code == 503
            assert pending.headers["retry-after"] == "1"
            assert "sequenced but no signed tree head covers it yet" in pending.json()["error"]
            assert client.get(f"/v1/proof/{entry.index + 1}").status_code == 404
            held.integrate()
            proven = client.get(f"/v1/proof/{entry.index}")
            assert proven.status_code == 200
            assert proven.json()["tree_head"]["size"] == entry.index + 1
    finally:
        held.close()
        answering.close()


def test_a_proof_asked_for_at_once_is_answered_within_the_merge_delay(tmp_path: Path) -> None:
    """The real service, default merge delay: a proof asked for the moment a claim is
    acknowledged is waited for and checks against the head it comes with."""
    key = tmp_path / "key.pem"
    write_private_key(str(key), LOG_KEY)
    ledger = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    with served("--ledger", ledger, "--key", str(key), "--port", "0") as service:
        with httpx.Client(base_url=service.url, timeout=30) as client:
            posted = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
            assert posted.status_code == 201, posted.text
            index = posted.json()["index"]
            answer = client.get(f"/v1/proof/{index}")
            assert answer.status_code == 200, answer.text
        assert service.stop()[0] == 0
    reader = Ledger.open(ledger)
    try:
        entry = reader.get(index)
    finally:
        reader.close()
    assert entry is not None
    proof = merkle.inclusion_proof_from_json(answer.json()["proof"])
    assert proof.leaf_hash == merkle.leaf_hash(canonical_bytes(entry.leaf_document())).hex()
    merkle.verify_inclusion(proof, answer.json()["tree_head"]["root_hash"])


def test_an_acknowledged_claim_survives_a_kill_9_of_the_service(
    ledger_url: str, tmp_path: Path
) -> None:
    """Claims acknowledged by a real ``claim serve`` (held back from integration) are in the
    ledger after the process is killed with SIGKILL, and the next start integrates them."""
    key = tmp_path / "key.pem"
    write_private_key(str(key), LOG_KEY)
    args = ("--ledger", ledger_url, "--key", str(key), "--port", "0", "--max-merge-delay", "60")
    acknowledged = {}
    with served(*args) as service:
        with httpx.Client(base_url=service.url, timeout=30) as client:
            for number in range(5):
                doc = fresh_claim(task=f"kill-{number}")
                answer = client.post("/v1/claims", content=json.dumps(doc), headers=JSON)
                assert answer.status_code == 201, answer.text
                acknowledged[f"kill-{number}"] = answer.json()["index"]
        service.process.send_signal(signal.SIGKILL)
        service.process.wait()
    with served(*args) as again:  # opening integrates what the killed process left
        with httpx.Client(base_url=again.url, timeout=30) as client:
            assert client.get("/v1/tree-head").json()["size"] == 5
        assert again.stop()[0] == 0
    reader = Ledger.open(ledger_url)
    try:
        found = {}
        for index in range(5):
            entry = reader.get(index)
            assert entry is not None
            found[entry.task_id] = index
        assert found == acknowledged
        report = reader.audit(log_key=LOG_KEY.public)
        assert (report.size, report.pending) == (5, 0)
    finally:
        reader.close()
