"""Real services for the observer tests: PostgreSQL, MariaDB and Redis on 127.0.0.1, SQLite files
and a local HTTP server. Each test gets its own uniquely named table or keys, dropped afterwards.

A service that cannot be reached skips its tests on a developer's machine and fails them under
``CI=true``, where the services are part of the contract.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn

import pytest

from completion_claim import load_claim, verify
from completion_claim.cli import run

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
MARIADB_URL = "mysql://root@127.0.0.1:3306/test"
REDIS_URL = "redis://127.0.0.1:6379/0"
CONNECT_TIMEOUT = 3


def service_unavailable(service: str, error: BaseException) -> NoReturn:
    """Skip when a service is down, except in CI, where a skipped service would hide a failure."""
    reason = f"{service} is not reachable on 127.0.0.1: {type(error).__name__}: {error}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# --- claims ---------------------------------------------------------------------------------


@pytest.fixture
def make_claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Path]:
    """A new claim with one mutation (recorded now), so evidence observed next postdates it."""

    def make(kind: str = "state_write", target: str = "accounts/4471") -> Path:
        path = tmp_path / f"{unique('claim')}.json"
        assert run(["new", str(path), "--task-id", "t-1", "--outcome", "done"]) == 0
        assert run(["mutate", str(path), "--kind", kind, "--target", target]) == 0
        capsys.readouterr()
        return path

    return make


def verdict_of(path: Path) -> str:
    """The verdict the real verifier gives the claim now."""
    return verify(load_claim(path.read_bytes()), datetime.now(UTC)).state


def last_evidence(path: Path) -> dict[str, Any]:
    item: dict[str, Any] = json.loads(path.read_text())["evidence"][-1]
    return item


# --- SQL stores -----------------------------------------------------------------------------

COLUMNS = (
    "id INTEGER PRIMARY KEY, code VARCHAR(40), zip VARCHAR(10), zip_n INTEGER, amount NUMERIC(10,2)"
)
ROWS = [
    (4471, "acct-4471", "94107", 94107, "12.50"),
    (4472, "acct-4472", "10001", 10001, "99.99"),
    (4473, "acct-4473", "10001", 10001, "0.10"),
]


@dataclass
class SqlTable:
    """A freshly created table in one store, and a writer-side connection to it."""

    store: str  # postgresql | mariadb | sqlite
    url: str
    table: str
    execute: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]  # "?" placeholders

    def rows(self) -> list[tuple[Any, ...]]:
        return self.execute(f"SELECT id, zip FROM {self.table} ORDER BY id", [])

    def exists(self) -> bool:
        try:
            self.execute(f"SELECT COUNT(*) FROM {self.table}", [])
        except Exception:
            return False
        return True


@pytest.fixture
def postgres() -> Iterator[Any]:
    import psycopg

    try:
        conn = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as error:
        service_unavailable("PostgreSQL", error)
    with conn:
        yield conn


@pytest.fixture
def mariadb() -> Iterator[Any]:
    import pymysql

    try:
        conn = pymysql.connect(
            host="127.0.0.1",
            port=3306,
            user="root",
            database="test",
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT,
        )
    except pymysql.err.MySQLError as error:
        service_unavailable("MariaDB", error)
    try:
        yield conn
    finally:
        conn.close()


def _postgres_table(request: pytest.FixtureRequest) -> SqlTable:
    conn = request.getfixturevalue("postgres")

    def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = conn.execute(sql.replace("?", "%s"), params)
        return list(cursor.fetchall()) if cursor.description else []

    return SqlTable("postgresql", POSTGRES_URL, unique("accounts"), execute)


def _mariadb_table(request: pytest.FixtureRequest) -> SqlTable:
    conn = request.getfixturevalue("mariadb")

    def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with conn.cursor() as cursor:
            cursor.execute(sql.replace("?", "%s"), params)
            return list(cursor.fetchall()) if cursor.description else []

    return SqlTable("mariadb", MARIADB_URL, unique("accounts"), execute)


def _sqlite_table(request: pytest.FixtureRequest) -> SqlTable:
    tmp_path: Path = request.getfixturevalue("tmp_path")
    path = tmp_path / "store.db"
    conn = sqlite3.connect(path, isolation_level=None)
    request.addfinalizer(conn.close)

    def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return conn.execute(sql, params).fetchall()

    return SqlTable("sqlite", f"sqlite:///{path}", unique("accounts"), execute)


SQL_TABLES = {"postgresql": _postgres_table, "mariadb": _mariadb_table, "sqlite": _sqlite_table}


@pytest.fixture(params=sorted(SQL_TABLES))
def sql_table(request: pytest.FixtureRequest) -> Iterator[SqlTable]:
    """The accounts table (ROWS) in each SQL store in turn."""
    table = SQL_TABLES[request.param](request)
    table.execute(f"CREATE TABLE {table.table} ({COLUMNS})", [])
    try:
        for row in ROWS:
            table.execute(f"INSERT INTO {table.table} VALUES (?, ?, ?, ?, ?)", row)
        yield table
    finally:
        table.execute(f"DROP TABLE IF EXISTS {table.table}", [])


# --- Redis ----------------------------------------------------------------------------------


@dataclass
class RedisKeys:
    client: Any
    prefix: str  # every key a test writes starts with it; all are deleted afterwards

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"


@pytest.fixture
def redis_keys() -> Iterator[RedisKeys]:
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=CONNECT_TIMEOUT)
    try:
        client.ping()
    except redis.RedisError as error:
        service_unavailable("Redis", error)
    keys = RedisKeys(client, f"{unique('claimtest')}:")
    try:
        yield keys
    finally:
        for name in client.scan_iter(match=f"{keys.prefix}*"):
            client.delete(name)
        client.close()


# --- HTTP -----------------------------------------------------------------------------------


@dataclass
class Site:
    """A tiny service that is "deployed" by changing ``build``; ``requests`` counts hits."""

    build: str = "b1"
    delay_s: float = 1.5
    requests: int = 0
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    url: str = ""

    def respond(self, path: str) -> tuple[int, dict[str, str], bytes]:
        self.requests += 1
        as_json = {"content-type": "application/json"}
        if path == "/health":
            body = {
                "build": self.build,
                "version": 3,
                "checks": [{"name": "db", "ok": True}],
                "a/b": {"m~n": "slashed"},
                "maybe": None,
            }
            return 200, {**as_json, "x-build": self.build}, json.dumps(body).encode()
        if path == "/down":
            return 503, as_json, json.dumps({"build": self.build}).encode()
        if path == "/html":
            return 200, {"content-type": "text/html"}, b"<html><body>build b2</body></html>"
        if path == "/slow":
            time.sleep(self.delay_s)
            return 200, as_json, json.dumps({"build": self.build}).encode()
        if path == "/old":
            return 302, {"location": "/health"}, b""
        if path.startswith("/records/"):
            name = path.removeprefix("/records/")
            if name == "broken":
                return 500, as_json, b'{"error": "boom"}'
            if name == "list":
                return 200, as_json, b"[1, 2]"
            if name == "text":
                return 200, {"content-type": "text/plain"}, b"zip=94107"
            if name == "moved":
                return 301, {"location": "/records/4471"}, b""
            if name in self.records:
                return 200, as_json, json.dumps(self.records[name]).encode()
            return 404, as_json, b'{"error": "not found"}'
        return 404, {}, b""


@pytest.fixture
def site() -> Iterator[Site]:
    """A real HTTP server on 127.0.0.1 (ephemeral port), in a thread."""
    state = Site()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = state.respond(self.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests assert on what the observer records, not on the access log."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll interval keeps shutdown() (once per test) from costing half a second.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
