"""Real services for the observer tests: PostgreSQL, MariaDB and Redis on 127.0.0.1, SQLite files
and a local HTTP server. Each test gets its own uniquely named table or keys, dropped afterwards.
Readbacks connect as a role created for the test that may only read what it is granted (the
observer refuses a superuser); the fixtures set up and clean up as the superuser.

A service that cannot be reached skips its tests on a developer's machine and fails them under
``CI=true``, where the services are part of the contract.
"""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from completion_claim import load_claim, verify
from completion_claim.cli import run
from tests.needs import service_unavailable, unique

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"  # a superuser
MARIADB_URL = "mysql://root@127.0.0.1:3306/test"  # ALL PRIVILEGES
REDIS_URL = "redis://127.0.0.1:6379/0"
CONNECT_TIMEOUT = 3


@pytest.fixture
def claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A new claim file for an observer to record into (a test file may define its own)."""
    path = tmp_path / "claim.json"
    assert run(["new", str(path), "--task-id", "t-1", "--outcome", "fixed add()"]) == 0
    capsys.readouterr()
    return path


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
class Reader:
    """A login role with no privilege but what ``grant`` gives it (trust authentication or no
    password: any password in its URL is accepted or not needed)."""

    name: str
    url: str
    grant: Callable[[str], None]  # GRANT SELECT ON the table (NAME or SCHEMA.NAME) to the role

    def url_with(self, userinfo: str, port: int | None = None) -> str:
        """The role's URL with other user information (``name:password``) or another port."""
        scheme, _, rest = self.url.partition("://")
        host = rest.partition("@")[2]
        if port is not None:
            host = host.replace(host.partition("/")[0], f"127.0.0.1:{port}", 1)
        return f"{scheme}://{userinfo}@{host}"


@dataclass
class SqlTable:
    """A freshly created table in one store, a writer-side connection to it, and the URL of a
    role that may only read it (the superuser's for ``admin_url``)."""

    store: str  # postgresql | mariadb | sqlite
    url: str
    admin_url: str
    table: str
    execute: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]  # "?" placeholders
    grant: Callable[[str], None]

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


@pytest.fixture
def postgres_reader(postgres: Any) -> Iterator[Reader]:
    name = unique("claim_reader")
    postgres.execute(f"CREATE ROLE {name} LOGIN")

    def grant(table: str) -> None:
        postgres.execute(f"GRANT SELECT ON {table} TO {name}")

    try:
        yield Reader(name, f"postgresql://{name}@127.0.0.1:5432/test", grant)
    finally:
        postgres.execute(f"DROP OWNED BY {name}")  # revokes what was granted
        postgres.execute(f"DROP ROLE {name}")


@pytest.fixture
def mariadb_reader(mariadb: Any) -> Iterator[Reader]:
    name = unique("claim_reader")
    with mariadb.cursor() as cursor:
        cursor.execute(f"CREATE USER '{name}'@'%'")

    def grant(table: str) -> None:
        qualified = table if "." in table else f"test.{table}"
        with mariadb.cursor() as cursor:
            cursor.execute(f"GRANT SELECT ON {qualified} TO '{name}'@'%'")

    try:
        yield Reader(name, f"mysql://{name}@127.0.0.1:3306/test", grant)
    finally:
        with mariadb.cursor() as cursor:
            cursor.execute(f"DROP USER IF EXISTS '{name}'@'%'")


def _postgres_table(request: pytest.FixtureRequest) -> SqlTable:
    conn = request.getfixturevalue("postgres")
    reader: Reader = request.getfixturevalue("postgres_reader")

    def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = conn.execute(sql.replace("?", "%s"), params)
        return list(cursor.fetchall()) if cursor.description else []

    return SqlTable(
        "postgresql", reader.url, POSTGRES_URL, unique("accounts"), execute, reader.grant
    )


def _mariadb_table(request: pytest.FixtureRequest) -> SqlTable:
    conn = request.getfixturevalue("mariadb")
    reader: Reader = request.getfixturevalue("mariadb_reader")

    def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with conn.cursor() as cursor:
            cursor.execute(sql.replace("?", "%s"), params)
            return list(cursor.fetchall()) if cursor.description else []

    return SqlTable("mariadb", reader.url, MARIADB_URL, unique("accounts"), execute, reader.grant)


def _sqlite_table(request: pytest.FixtureRequest) -> SqlTable:
    tmp_path: Path = request.getfixturevalue("tmp_path")
    path = tmp_path / "store.db"
    conn = sqlite3.connect(path, isolation_level=None)
    request.addfinalizer(conn.close)

    def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return conn.execute(sql, params).fetchall()

    def grant(table: str) -> None:
        """SQLite has no roles: the observer opens the file read-only."""

    url = f"sqlite:///{path}"
    return SqlTable("sqlite", url, url, unique("accounts"), execute, grant)


SQL_TABLES = {"postgresql": _postgres_table, "mariadb": _mariadb_table, "sqlite": _sqlite_table}


@pytest.fixture(params=sorted(SQL_TABLES))
def sql_table(request: pytest.FixtureRequest) -> Iterator[SqlTable]:
    """The accounts table (ROWS) in each SQL store in turn."""
    yield from _accounts_table(request)


@pytest.fixture(params=["mariadb", "postgresql"])
def server_table(request: pytest.FixtureRequest) -> Iterator[SqlTable]:
    """The accounts table in each SQL server (the stores with roles: not SQLite)."""
    yield from _accounts_table(request)


def _accounts_table(request: pytest.FixtureRequest) -> Iterator[SqlTable]:
    table = SQL_TABLES[request.param](request)
    table.execute(f"CREATE TABLE {table.table} ({COLUMNS})", [])
    try:
        table.grant(table.table)
        for row in ROWS:
            table.execute(f"INSERT INTO {table.table} VALUES (?, ?, ?, ?, ?)", row)
        yield table
    finally:
        table.execute(f"DROP TABLE IF EXISTS {table.table}", [])


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """A directory the database servers (which run as their own users) can write to, so that
    a test can tell whether a statement made the server write a file or run a program."""
    path = Path(tempfile.mkdtemp(prefix="claim-server-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path)


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
        path = path.partition("?")[0]  # a query string (an api_key, say) selects nothing here
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
