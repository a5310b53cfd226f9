"""``/healthz``, ``/readyz`` and ``/metrics`` of a real ``claim serve`` process: readiness lost
for real (a ledger file its user can no longer read, a PostgreSQL database dropped), and the
Prometheus numbers scraped before and after real requests."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from completion_claim.trust.keys import SigningKey, write_private_key
from tests.cli.test_serve_cmd import JSON, fresh_claim
from tests.fixtures.gate_service import false_done_for_a_tokenless_service
from tests.fixtures.installed import installed_python
from tests.fixtures.serve import ready_line, served
from tests.needs import service_unavailable, unique
from tests.service.conftest import CONNECT_TIMEOUT, POSTGRES_URL, postgres_schema_url
from tests.service.test_gate_api import User, as_root_in_ci, own, spare_ids

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: httpx.Client) -> Samples:
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "service-key.pem"
    write_private_key(str(path), SigningKey.generate())
    return path


# --- metrics ----------------------------------------------------------------------------------


def test_metrics_move_with_real_requests(tmp_path: Path, key: Path) -> None:
    ledger = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    with (
        served("--ledger", ledger, "--key", str(key), "--port", "0") as service,
        httpx.Client(base_url=service.url, timeout=10) as client,
    ):
        before = scrape(client)
        assert value(before, "claim_ledger_up") == 1
        assert value(before, "claim_ledger_entries") == 0

        states = []
        for _ in range(2):
            posted = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
            assert posted.status_code == 201, posted.text
            states.append(posted.json()["verdict"]["state"])
        (state,) = set(states)
        assert value(before, "claim_claims_total", verdict=state, via="api") == 0
        for index in (0, 1, 7):
            client.get(f"/v1/claims/{index}")
        for scan in ("/wp-admin/1", "/wp-admin/2", "/.env"):
            assert client.get(scan).status_code == 404

        after = scrape(client)
        assert value(after, "claim_ledger_entries") == 2
        assert value(after, "claim_claims_total", verdict=state, via="api") == 2
        count = "claim_http_request_duration_seconds_count"
        assert value(after, count, method="POST", route="/v1/claims", status="201") == 2
        # Route templates, not raw paths: three entries read are one series per status.
        assert value(after, count, method="GET", route="/v1/claims/{index}", status="200") == 2
        assert value(after, count, method="GET", route="/v1/claims/{index}", status="404") == 1
        assert value(after, count, method="GET", route="unmatched", status="404") == 3
        routes = {dict(labels).get("route") for _, labels in after}
        assert not {"/v1/claims/0", "/v1/claims/7", "/wp-admin/1", "/.env"} & routes
        latency = value(after, "claim_http_request_duration_seconds_sum", method="POST",
                        route="/v1/claims", status="201")  # fmt: skip
        assert latency > 0
        assert service.stop()[0] == 0


def test_attack_69_labels_a_client_chooses_make_no_new_series(tmp_path: Path, key: Path) -> None:
    ledger = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    args = ("--ledger", ledger, "--key", str(key), "--port", "0", "--access-log")
    with (
        served(*args, "--log-format", "json") as service,
        httpx.Client(base_url=service.url, timeout=10) as client,
    ):
        for n in range(5):
            client.request(f"BREW{n}", f"/v1/claims/{n}")
            client.request(f"BREW{n}", f"/scan/{n}")
        assert client.get("/v1/claims/0%0AINFO:%20forged").status_code == 422
        after = scrape(client)
        count = "claim_http_request_duration_seconds_count"
        series = {labels for name, labels in after if name == count}
        methods = {dict(labels)["method"] for labels in series}
        routes = {dict(labels)["route"] for labels in series}
        assert methods == {"GET", "other"}
        assert routes == {"/v1/claims/{index}", "unmatched"}
        assert sum(value(after, count, **dict(labels)) for labels in series
                   if dict(labels)["method"] == "other") == 10  # fmt: skip
        code, err = service.stop()
    assert code == 0
    # The access log keeps the path as sent: a %0A in it starts no line of its own.
    paths = [json.loads(line).get("path") for line in err.splitlines()]
    assert "/v1/claims/0%0AINFO:%20forged" in paths


def test_a_gate_run_is_counted_and_timed(tmp_path: Path) -> None:
    repo, args = false_done_for_a_tokenless_service(tmp_path)
    with (
        served(*args, "--port", "0") as service,
        httpx.Client(base_url=service.url, timeout=120) as client,
    ):
        assert value(scrape(client), "claim_gate_run_seconds_count", verdict="refuted") == 0
        answer = client.post("/v1/gate", json={"repo": str(repo), "outcome": "fixed add()"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["verdict"]["state"] == "refuted"
        refused = client.post("/v1/gate", json={"repo": str(tmp_path), "outcome": "done"})
        assert refused.status_code in (403, 422)

        after = scrape(client)
        assert value(after, "claim_gate_run_seconds_count", verdict="refuted") == 1
        assert value(after, "claim_gate_run_seconds_sum", verdict="refuted") > 0
        assert value(after, "claim_gate_run_seconds_count", verdict="error") == 1
        assert value(after, "claim_claims_total", verdict="refuted", via="gate") == 1
        assert value(after, "claim_ledger_entries") == 1
        assert service.stop()[0] == 0


# --- health and readiness ---------------------------------------------------------------------


def probe(client: httpx.Client, path: str) -> tuple[int, dict[str, str]]:
    answer = client.get(path)
    body: dict[str, str] = answer.json()
    return answer.status_code, body


def test_readiness_follows_a_sqlite_ledger_its_user_cannot_reach() -> None:
    # As root the file's mode stops nothing: the service runs as a user of its own.
    as_root_in_ci()
    (service_id,) = spare_ids(1)
    base = Path(tempfile.mkdtemp(prefix="cc-ready-"))
    base.chmod(0o755)
    try:
        python = installed_python()
        user = User(service_id, service_id, base / "home")
        user.home.mkdir()
        own(user.home, user, 0o700)
        data = base / "data"
        data.mkdir()
        own(data, user, 0o700)
        key = data / "service-key.pem"
        write_private_key(str(key), SigningKey.generate())
        own(key, user, 0o600)
        ledger_file = data / "ledger.sqlite"
        serve = user.run([
            str(python), "-m", "completion_claim", "serve", "--port", "0",
            "--ledger", f"sqlite:///{ledger_file}", "--key", str(key),
        ])  # fmt: skip
        with ServedAs(serve, base / "serve.log") as url, httpx.Client(base_url=url) as client:
            assert probe(client, "/readyz") == (200, {"status": "ready"})
            # SQLite hands a new connection to a file this process holds open the descriptor
            # it has, so the file's own mode changes nothing here; its folder's does.
            data.chmod(0)
            status, body = probe(client, "/readyz")
            assert (status, body) == (503, {"error": f"no ledger at {ledger_file}"})
            assert probe(client, "/healthz") == (200, {"status": "ok"})  # alive all the same
            data.chmod(0o700)
            assert probe(client, "/readyz") == (200, {"status": "ready"})
            moved = data / "moved.sqlite"
            ledger_file.rename(moved)  # a volume gone, while the old descriptor still writes
            assert probe(client, "/readyz") == (503, {"error": f"no ledger at {ledger_file}"})
            moved.rename(ledger_file)
            assert probe(client, "/readyz") == (200, {"status": "ready"})
    finally:
        shutil.rmtree(base)


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A database of the test's own in the real PostgreSQL; the test may drop it."""
    import psycopg

    name = unique("ready")
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as error:
        service_unavailable("PostgreSQL", error)
    with admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
        try:
            yield name
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


def test_readiness_follows_a_postgresql_database_that_is_dropped(
    postgres_database: str, key: Path
) -> None:
    import psycopg

    url = POSTGRES_URL.rsplit("/", 1)[0] + "/" + postgres_database
    with (
        served("--ledger", url, "--key", str(key), "--port", "0") as service,
        httpx.Client(base_url=service.url, timeout=30) as client,
    ):
        assert probe(client, "/readyz") == (200, {"status": "ready"})
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {postgres_database} WITH (FORCE)".encode())
        status, body = probe(client, "/readyz")
        assert status == 503
        assert "does not exist" in body["error"]
        assert probe(client, "/healthz") == (200, {"status": "ok"})
        assert value(scrape(client), "claim_ledger_up") == 0
        assert service.stop()[0] == 0


def test_readiness_follows_a_postgresql_port_that_closes(postgres_schema: str, key: Path) -> None:
    with Forwarder(("127.0.0.1", 5432)) as forwarder:
        url = postgres_schema_url(postgres_schema).replace(":5432/", f":{forwarder.port}/")
        with (
            served("--ledger", url, "--key", str(key), "--port", "0") as service,
            httpx.Client(base_url=service.url, timeout=30) as client,
        ):
            assert probe(client, "/readyz") == (200, {"status": "ready"})
            forwarder.close()
            status, body = probe(client, "/readyz")
            assert status == 503
            assert str(forwarder.port) in body["error"]
            assert "refused" in body["error"].lower()
            assert probe(client, "/healthz") == (200, {"status": "ok"})
            assert service.stop()[0] == 0


class Forwarder:
    """A port of its own relaying to ``target`` until the test closes it, connections and all:
    the ledger's database port going away while the service runs."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.open: list[socket.socket] = []
        self.closed = threading.Event()
        self.port: int = self.listener.getsockname()[1]

    def __enter__(self) -> Forwarder:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.closed.set()
        for connection in [self.listener, *self.open]:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


class ServedAs:
    """``argv`` (a ``claim serve``) until its ready line, its log in a file, killed after."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.argv = argv
        self.log = log

    def __enter__(self) -> str:
        with self.log.open("w") as log_file:
            self.process = subprocess.Popen(
                self.argv, stdout=subprocess.PIPE, stderr=log_file, text=True, env=os.environ
            )
        line = ready_line(self.process)
        assert "listening on" in line, line + self.log.read_text()
        return line.split("listening on ", 1)[1].split(" ", 1)[0]

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        self.process.communicate(timeout=15)
