"""``claim ledger prove|verify``, run as real ``claim`` processes: against ledger databases
(SQLite and the real PostgreSQL, edited behind the ledger's back with SQL) and against a loopback
HTTP service answering from a real ledger, honest or lying."""

from __future__ import annotations

import json
import re
import socketserver
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from completion_claim.service import merkle
from completion_claim.service.ledger import Ledger, NotInLedger
from completion_claim.service.tree_head import tree_head_from_json
from completion_claim.timefmt import format_time
from completion_claim.trust.keys import write_private_key
from tests.builders import claim_doc, evidence, mutation
from tests.fixtures.serve import served
from tests.service.conftest import LOG_KEY, OTHER_KEY, T0, LedgerDb, fresh_entry

CLAIM = Path(sys.executable).parent / "claim"
EXIT_TAMPERED = 2
EXIT_USAGE = 4
EXIT_UNREACHABLE = 5


def claim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIM), *args], capture_output=True, text=True, timeout=300, check=False
    )


def filled(url: str, count: int, key: Any = LOG_KEY) -> None:
    ledger = Ledger.open(url, key)
    try:
        for i in range(count):
            state = ("verified", "refuted", "unverified")[i % 3]
            ledger.append(
                fresh_entry(state, agent=f"agent-{i}", recorded_at=T0 + timedelta(minutes=i))  # type: ignore[arg-type]
            )
    finally:
        ledger.close()


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


# --- a ledger database --------------------------------------------------------------------


def test_prove_checks_an_entry_against_the_latest_head(ledger_db: LedgerDb) -> None:
    filled(ledger_db.url, 7)
    done = claim("ledger", "prove", ledger_db.url, "3")
    assert done.returncode == 0, done.stderr
    assert (
        "entry 3 is in the log: its inclusion proof checks against the signed tree head at size 7"
        in done.stdout
    )
    assert "not pinned" in done.stdout

    pinned = claim(
        "ledger", "prove", ledger_db.url, "6", "--log-key", LOG_KEY.public.text, "--json"
    )
    assert pinned.returncode == 0, pinned.stderr
    answer = json.loads(pinned.stdout)
    assert answer["log_key_pinned"] is True
    proof = merkle.inclusion_proof_from_json(answer["proof"])
    head = tree_head_from_json(answer["tree_head"])
    assert (proof.index, proof.tree_size, head.size) == (6, 7, 7)
    merkle.verify_inclusion(proof, head.root_hash)


def test_prove_of_an_entry_the_log_does_not_hold(ledger_db: LedgerDb) -> None:
    filled(ledger_db.url, 2)
    done = claim("ledger", "prove", ledger_db.url, "2")
    assert done.returncode == EXIT_USAGE
    assert "no entry 2 in the log of size 2" in one_line_error(done)


def test_prove_of_an_entry_sequenced_but_not_yet_integrated_says_so(ledger_db: LedgerDb) -> None:
    filled(ledger_db.url, 2)
    held = Ledger.open(ledger_db.url, LOG_KEY, merge_delay=600.0)  # no pass while we look
    try:
        held.append(fresh_entry())
        done = claim("ledger", "prove", ledger_db.url, "2")
        assert done.returncode == EXIT_UNREACHABLE
        assert "entry 2 is sequenced but no signed tree head covers it yet (the latest has " in (
            one_line_error(done)
        )
        audited = claim("ledger", "verify", ledger_db.url)
        assert audited.returncode == 0, audited.stderr
        assert "1 more sequenced, not yet under a signed head" in audited.stdout
        held.integrate()
        assert claim("ledger", "prove", ledger_db.url, "2").returncode == 0
    finally:
        held.close()


def test_verify_audits_the_log_and_keeps_its_head_for_next_time(
    ledger_db: LedgerDb, tmp_path: Path
) -> None:
    filled(ledger_db.url, 5)
    kept = tmp_path / "head.json"
    first = claim("ledger", "verify", ledger_db.url, "--save-head", str(kept))
    assert first.returncode == 0, first.stderr
    assert "5 entries and 6 signed tree heads checked" in first.stdout
    assert tree_head_from_json(json.loads(kept.read_text())).size == 5

    filled(ledger_db.url, 3)
    again = claim(
        "ledger",
        "verify",
        ledger_db.url,
        "--since",
        str(kept),
        "--log-key",
        LOG_KEY.public.text,
        "--json",
    )
    assert again.returncode == 0, again.stderr
    answer = json.loads(again.stdout)
    assert (answer["size"], answer["entries_checked"], answer["since"]) == (8, 8, 5)


TAMPERINGS = [
    pytest.param(
        "UPDATE ledger_entries SET submitted_by = 'agent-9', state = 'verified'"
        " WHERE entry_index = 1",
        "entry 1: its state column differs from its leaf document",
        id="a row edited",
    ),
    pytest.param(
        "DELETE FROM ledger_entries WHERE entry_index = 3",
        "entry 3 is missing: the entries jump from 2 to 4",
        id="a row deleted",
    ),
    pytest.param(
        "INSERT INTO ledger_entries SELECT 6, leaf_hash, leaf, recorded_us, recorded_day, state,"
        " policy_id, task_id, submitted_by, via, said_done FROM ledger_entries"
        " WHERE entry_index = 3",  # a verified entry: no unmet codes to copy as well
        "entry 6: sequenced without the log key's seal",
        id="an entry appended behind the service's back",
    ),
]


@pytest.mark.parametrize(("statement", "problem"), TAMPERINGS)
def test_attack_16_verify_names_a_row_changed_behind_the_ledgers_back(
    ledger_db: LedgerDb, statement: str, problem: str
) -> None:
    filled(ledger_db.url, 6)
    ledger_db.execute(statement)
    done = claim("ledger", "verify", ledger_db.url)
    assert done.returncode == EXIT_TAMPERED
    assert problem in one_line_error(done)


def test_prove_refuses_an_entry_whose_bytes_were_edited(ledger_db: LedgerDb) -> None:
    filled(ledger_db.url, 4)
    ledger_db.execute(
        "UPDATE ledger_entries SET leaf = ? WHERE entry_index = 2",
        (
            json.dumps(
                {
                    "claim": {},
                    "policy": {},
                    "verdict": {},
                    "submitted_by": "x",
                    "via": "api",
                    "recorded_at": "2026-08-27T18:00:00Z",
                }
            ).encode(),
        ),
    )
    done = claim("ledger", "prove", ledger_db.url, "2")
    assert done.returncode == EXIT_TAMPERED
    assert "entry 2: its document does not hash to the leaf the proof is for" in one_line_error(
        done
    )


def test_a_log_signed_by_another_key_fails_a_pinned_check(ledger_db: LedgerDb) -> None:
    filled(ledger_db.url, 2, key=OTHER_KEY)
    for command in (["verify", ledger_db.url], ["prove", ledger_db.url, "1"]):
        done = claim("ledger", *command, "--log-key", LOG_KEY.public.text)
        assert done.returncode == EXIT_TAMPERED
        assert "not the pinned" in one_line_error(done)


def test_an_unreachable_ledger_exits_5_without_its_password() -> None:
    done = claim("ledger", "verify", "postgresql://claim:hunter2@127.0.0.1:1/none")
    assert done.returncode == EXIT_UNREACHABLE
    message = one_line_error(done)
    assert "hunter2" not in message
    assert "cannot open ledger postgresql://claim:***@127.0.0.1:1/none" in message


def test_a_missing_ledger_file_exits_5_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nothing.sqlite"
    done = claim("ledger", "prove", str(path), "0")
    assert done.returncode == EXIT_UNREACHABLE
    assert f"no ledger at {path}" in one_line_error(done)
    assert not path.exists()


def test_a_kept_head_that_is_not_a_head_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    filled(str(path), 1)
    kept = tmp_path / "head.json"
    kept.write_text('{"size": 1}')
    done = claim("ledger", "verify", str(path), "--since", str(kept))
    assert done.returncode == EXIT_USAGE
    assert f"--since {kept}: _type is missing" in one_line_error(done)
    bad_key = claim("ledger", "verify", str(path), "--log-key", "ed25519:nope")
    assert bad_key.returncode == EXIT_USAGE
    assert "--log-key: not a public key 'ed25519:nope'" in one_line_error(bad_key)


# --- a service ----------------------------------------------------------------------------


@dataclass
class Service:
    """A loopback HTTP service answering the ledger routes from a real ledger; ``lie`` may
    rewrite an answer (path, answer) -> answer, to play a dishonest service."""

    url: str
    ledger: Ledger
    lie: Callable[[str, Any], Any] | None = None


def _handler(service: Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: int(v[0]) for k, v in parse_qs(parts.query).items()}
            try:
                answer = self._route(parts.path, query)
                status = 200 if answer is not None else 404
            except NotInLedger as error:
                answer, status = {"error": str(error)}, 404
            if answer is None:
                answer = {"error": f"no entry at {parts.path}"}
            elif service.lie is not None and status == 200:
                answer = service.lie(parts.path, answer)
            body = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _route(self, path: str, query: dict[str, int]) -> Any:
            ledger = service.ledger
            if path == "/v1/tree-head":
                return ledger.tree_head().to_json()
            if path == "/v1/consistency":
                return ledger.consistency_proof(query["old_size"], query.get("new_size")).to_json()
            if path.startswith("/v1/claims/"):
                entry = ledger.get(int(path.rsplit("/", 1)[1]))
                return None if entry is None else entry.to_json()
            if path.startswith("/v1/proof/"):
                head = ledger.tree_head()
                proof = ledger.inclusion_proof(int(path.rsplit("/", 1)[1]), head.size)
                return {"proof": proof.to_json(), "tree_head": head.to_json()}
            return None

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads the answers, not a log."""

    return Handler


class _UnixHTTPServer(socketserver.ThreadingUnixStreamServer):
    """The same handler on a Unix socket (``claim serve --socket``)."""


@pytest.fixture(params=["tcp", "unix"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    ledger = Ledger.open(str(tmp_path / "served.sqlite"), LOG_KEY)
    holder = Service("", ledger)
    server: socketserver.BaseServer
    if request.param == "tcp":
        tcp = ThreadingHTTPServer(("127.0.0.1", 0), _handler(holder))
        holder.url = f"http://127.0.0.1:{tcp.server_address[1]}"
        server = tcp
    else:
        socket_path = tmp_path / "ledger.sock"
        server = _UnixHTTPServer(str(socket_path), _handler(holder))
        holder.url = f"unix://{socket_path}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        ledger.close()


def append(service: Service, count: int) -> None:
    for i in range(count):
        service.ledger.append(fresh_entry(agent=f"served-{i}"))


def test_prove_against_a_service(service: Service) -> None:
    append(service, 6)
    done = claim("ledger", "prove", service.url, "4", "--log-key", LOG_KEY.public.text)
    assert done.returncode == 0, done.stderr
    assert "entry 4 is in the log" in done.stdout
    assert "(pinned)" in done.stdout


def test_verify_a_service_since_a_kept_head(service: Service, tmp_path: Path) -> None:
    append(service, 3)
    kept = tmp_path / "head.json"
    first = claim("ledger", "verify", service.url, "--save-head", str(kept))
    assert first.returncode == 0, first.stderr
    assert "only its signature was checked" in first.stdout
    append(service, 9)
    again = claim("ledger", "verify", service.url, "--since", str(kept))
    assert again.returncode == 0, again.stderr
    assert "consistent with the kept tree head at size 3" in again.stdout
    assert "size 12" in again.stdout


def test_attack_17_a_service_that_rewrote_its_log_is_caught(
    service: Service, tmp_path: Path
) -> None:
    """The kept head is from another history under the same key: the service's consistency
    proof cannot join them."""
    other = Ledger.open(str(tmp_path / "other.sqlite"), LOG_KEY)
    try:
        other.append(fresh_entry(agent="the original"))
        other.append(fresh_entry(agent="the original"))
        kept_head = other.tree_head()
    finally:
        other.close()
    kept = tmp_path / "head.json"
    kept.write_text(json.dumps(kept_head.to_json()))
    append(service, 5)
    done = claim("ledger", "verify", service.url, "--since", str(kept))
    assert done.returncode == EXIT_TAMPERED
    assert "the log was rewritten since the kept tree head" in one_line_error(done)


def test_attack_17_a_service_that_shrank_is_caught(service: Service, tmp_path: Path) -> None:
    append(service, 2)
    older = service.ledger.tree_head()
    append(service, 2)
    kept = tmp_path / "head.json"
    assert claim("ledger", "verify", service.url, "--save-head", str(kept)).returncode == 0

    def replayed(path: str, answer: Any) -> Any:
        return older.to_json() if path == "/v1/tree-head" else answer

    service.lie = replayed
    done = claim("ledger", "verify", service.url, "--since", str(kept))
    assert done.returncode == EXIT_TAMPERED
    message = one_line_error(done)
    assert "the kept tree head covers 4 entries but the service's latest covers only 2" in message


def test_attack_17_a_service_showing_another_document_than_it_logged_is_caught(
    service: Service,
) -> None:
    append(service, 3)

    def edited(path: str, answer: Any) -> Any:
        if path == "/v1/claims/1":
            return {**answer, "submitted_by": "someone else"}
        return answer

    service.lie = edited
    done = claim("ledger", "prove", service.url, "1")
    assert done.returncode == EXIT_TAMPERED
    assert "entry 1: its document does not hash to the leaf the proof is for" in one_line_error(
        done
    )


def test_attack_17_a_service_head_with_a_forged_root_is_caught(service: Service) -> None:
    append(service, 3)

    def forged(path: str, answer: Any) -> Any:
        if path.startswith("/v1/proof/"):
            return {**answer, "tree_head": {**answer["tree_head"], "root_hash": "00" * 32}}
        return answer

    service.lie = forged
    done = claim("ledger", "prove", service.url, "0")
    assert done.returncode == EXIT_TAMPERED
    assert "the signed payload differs from the head's members" in one_line_error(done)


def test_an_entry_the_service_does_not_hold(service: Service) -> None:
    append(service, 1)
    done = claim("ledger", "prove", service.url, "5")
    assert done.returncode == EXIT_USAGE
    assert "no entry at /v1/claims/5" in one_line_error(done)


def test_a_service_that_is_down_exits_5() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = claim("ledger", "verify", f"http://127.0.0.1:{port}")
    assert done.returncode == EXIT_UNREACHABLE
    assert "cannot reach the service" in one_line_error(done)


def test_a_kept_head_pins_the_log_key_when_none_is_given(tmp_path: Path) -> None:
    """A log rebuilt and re-signed by another key looks whole on its own; the head a client
    kept names the real key, and that is the key the log must be signed by."""
    original = tmp_path / "original.sqlite"
    filled(str(original), 2)
    kept = tmp_path / "head.json"
    assert claim("ledger", "verify", str(original), "--save-head", str(kept)).returncode == 0
    rebuilt = tmp_path / "rebuilt.sqlite"
    filled(str(rebuilt), 3, key=OTHER_KEY)
    assert claim("ledger", "verify", str(rebuilt)).returncode == 0  # unpinned, it holds together
    done = claim("ledger", "verify", str(rebuilt), "--since", str(kept))
    assert done.returncode == EXIT_TAMPERED
    assert f"not the pinned {LOG_KEY.public.text}" in one_line_error(done)


# --- the real service ---------------------------------------------------------------------


def recent_claim(task: str) -> dict[str, Any]:
    """A claim read back half a minute ago: verified under the service's built-in policy."""
    now = datetime.now(UTC)
    return claim_doc(
        [mutation(at=format_time(now - timedelta(seconds=60)))],
        [evidence(at=format_time(now - timedelta(seconds=30)))],
        task={"id": task, "description": "Update the billing address"},
    )


def test_claim_ledger_checks_a_running_claim_serve(tmp_path: Path) -> None:
    """Claims posted to a real ``claim serve``; its log proven and verified over HTTP, and its
    database audited directly while it runs."""
    key_file = tmp_path / "service.pem"
    write_private_key(str(key_file), LOG_KEY)
    database = f"sqlite:///{tmp_path / 'served.sqlite'}"
    with served("--ledger", database, "--key", str(key_file), "--port", "0") as service:
        url = service.url
        kept = tmp_path / "head.json"
        empty = claim("ledger", "verify", url, "--save-head", str(kept))
        assert empty.returncode == 0, empty.stderr
        with httpx.Client(base_url=url, timeout=30) as client:
            for i in range(5):
                answer = client.post("/v1/claims", json=recent_claim(f"t-{i}"))
                assert answer.status_code == 201, answer.text
        since_empty = claim("ledger", "verify", url, "--since", str(kept), "--save-head", str(kept))
        assert since_empty.returncode == 0, since_empty.stderr
        proven = claim("ledger", "prove", url, "3", "--log-key", LOG_KEY.public.text)
        assert proven.returncode == 0, proven.stderr
        assert "signed tree head at size 5" in proven.stdout
        with httpx.Client(base_url=url, timeout=30) as client:
            for i in range(5, 9):
                answer = client.post("/v1/claims", json=recent_claim(f"t-{i}"))
                assert answer.status_code == 201, answer.text
        later = claim("ledger", "verify", url, "--since", str(kept))
        assert later.returncode == 0, later.stderr
        assert "consistent with the kept tree head at size 5" in later.stdout
        audited = claim("ledger", "verify", database, "--since", str(kept))
        assert audited.returncode == 0, audited.stderr
        # A head per integrated batch: as many as the integrator's passes, at most one a claim.
        assert re.search(r"^9 entries and (\d+) signed tree heads checked", audited.stdout)
