"""A readback imports the driver of its own store and nothing else: SQLite by table and key needs
no extra at all, each other store only its driver, and a missing one is named in one line with
the extra that brings it. The real command runs in a new interpreter where the other packages
cannot be imported (``tests/blocked.py``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ..blocked import EVERY_OPTIONAL, missing_extra_line, run_without
from .conftest import closed_port

EXPECT = ["--expect", "verified=1"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    result = run_without(
        (), ["new", "claim.json", "--task-id", "t-1", "--outcome", "done"], tmp_path
    )
    assert result.code == 0, result.err
    run_without((), ["mutate", "claim.json", "--kind", "state_write", "--target", "u/1"], tmp_path)
    with sqlite3.connect(tmp_path / "app.db") as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, verified INTEGER)")
        db.execute("INSERT INTO users VALUES (1, 1)")
    db.close()
    return tmp_path


def test_a_sqlite_readback_needs_no_extra(folder: Path) -> None:
    args = ["observe", "readback", "claim.json", "sqlite:///app.db", "--table", "users"]
    result = run_without(EVERY_OPTIONAL, [*args, "--key", "id=1", *EXPECT], folder)
    assert (result.code, result.err) == (0, ""), result.err
    assert result.out.startswith("recorded e1: state_readback ")
    (item,) = json.loads((folder / "claim.json").read_text())["evidence"]
    assert item["observed_value"] == {"verified": 1}


def test_a_sqlite_query_needs_the_sql_parser(folder: Path) -> None:
    query = ["--query", "SELECT verified FROM users WHERE id = :id", "--param", "id=1"]
    args = ["observe", "readback", "claim.json", "sqlite:///app.db", *query, *EXPECT]
    result = run_without(("sqlglot",), args, folder)
    assert result.err.splitlines() == [
        f"claim: readback --query {missing_extra_line('observe', 'sqlglot')}"
    ]
    assert result.code == 4
    assert run_without(tuple(set(EVERY_OPTIONAL) - {"sqlglot"}), args, folder).code == 0


TABLE = ["--table", "users", "--key", "id=1"]
# store: (module, its distribution, what the message calls the readback, URL, lookup options)
STORES = {
    "postgresql": (
        "psycopg", "psycopg", "a PostgreSQL readback", "postgresql://reader@127.0.0.1:{port}/test",
        TABLE,
    ),
    "mysql": (
        "pymysql", "PyMySQL", "a MariaDB/MySQL readback", "mysql://reader@127.0.0.1:{port}/test",
        TABLE,
    ),
    "redis": ("redis", "redis", "a Redis readback", "redis://127.0.0.1:{port}/0", ["--key", "u:1"]),
    "http": ("httpx", "httpx", "an HTTP readback", "http://127.0.0.1:{port}/users/1", []),
}  # fmt: skip


@pytest.mark.parametrize("store", STORES)
def test_a_missing_driver_is_named_with_its_extra(folder: Path, store: str) -> None:
    module, distribution, what, url, lookup = STORES[store]
    args = ["observe", "readback", "claim.json", url.format(port=closed_port()), *lookup, *EXPECT]
    result = run_without((module,), args, folder)
    assert result.err.splitlines() == [
        f"claim: {what} {missing_extra_line('observe', distribution)}"
    ]
    assert result.code == 4


@pytest.mark.parametrize("store", STORES)
def test_each_store_needs_its_own_driver_only(folder: Path, store: str) -> None:
    """With every other optional package missing, the readback gets as far as connecting: a
    closed port is an observation that could not be made (exit 5), not a missing driver."""
    module, _, _, url, lookup = STORES[store]
    others = tuple(name for name in EVERY_OPTIONAL if name != module)
    args = ["observe", "readback", "claim.json", url.format(port=closed_port()), *lookup, *EXPECT]
    result = run_without(others, args, folder)
    assert result.code == 5, result.err
    assert "not installed" not in result.err
