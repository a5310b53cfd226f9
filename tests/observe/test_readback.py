"""``claim observe readback``: real PostgreSQL, MariaDB, Redis, SQLite and HTTP stores."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from completion_claim.cli import run
from completion_claim.errors import UsageError
from completion_claim.model import ABSENT
from completion_claim.observe import readback_sql
from completion_claim.observe.readback_sql import translate_query
from completion_claim.observe.values import (
    canonical_json,
    expected_value,
    redact_url,
    sha256_digest,
    to_json,
)
from tests.needs import service_unavailable, unique

from .conftest import (
    MARIADB_URL,
    POSTGRES_URL,
    REDIS_URL,
    ROWS,
    Reader,
    RedisKeys,
    Site,
    SqlTable,
    closed_port,
    last_evidence,
    verdict_of,
)
from .test_readback_query import FINDING_45

CLAIM = str(Path(sys.executable).parent / "claim")
MakeClaim = Callable[..., Path]


def readback(path: Path, url: str, *options: str) -> int:
    return run(["observe", "readback", str(path), url, *options])


@pytest.fixture
def claim(make_claim: MakeClaim) -> Path:
    return make_claim()


def by_key(table: SqlTable, key: str, *expect: str) -> list[str]:
    args = ["--table", table.table, "--key", key]
    for expectation in expect:
        args += ["--expect", expectation]
    return args


# --- SQL: PostgreSQL, MariaDB and SQLite alike --------------------------------------------


def test_a_matching_record_verifies(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = by_key(sql_table, "id=4471", "zip=94107", "zip_n=94107", "amount=12.50")
    assert readback(claim, sql_table.url, *args) == 0
    assert "observed as expected" in capsys.readouterr().out
    item = last_evidence(claim)
    # Each VALUE took the type of its column: text, integer, decimal.
    assert item["observed_value"] == {"zip": "94107", "zip_n": 94107, "amount": 12.5}
    assert item["expected"] == {"zip": "94107", "zip_n": 94107, "amount": 12.5}
    assert item["check_type"] == "state_readback"
    assert item["target"] == f"{sql_table.url} table {sql_table.table} where id=4471"
    assert item["details"]["store"] == sql_table.store
    record = {"id": 4471, "code": "acct-4471", "zip": "94107", "zip_n": 94107, "amount": 12.5}
    assert item["subject"] == sha256_digest(canonical_json(record))
    assert verdict_of(claim) == "verified"


def test_a_contradicting_record_refutes(sql_table: SqlTable, claim: Path) -> None:
    assert readback(claim, sql_table.url, *by_key(sql_table, "id=4472", "zip=94107")) == 0
    item = last_evidence(claim)
    assert item["observed_value"] == {"zip": "10001"}
    assert verdict_of(claim) == "refuted"


def test_a_quoted_value_is_a_string_and_does_not_match_an_integer(
    sql_table: SqlTable, claim: Path
) -> None:
    assert readback(claim, sql_table.url, *by_key(sql_table, "id=4471", 'zip_n="94107"')) == 0
    assert last_evidence(claim)["expected"] == {"zip_n": "94107"}
    assert verdict_of(claim) == "refuted"


def test_a_missing_record_is_observed_as_null_and_refutes(sql_table: SqlTable, claim: Path) -> None:
    assert readback(claim, sql_table.url, *by_key(sql_table, "id=9999", "zip=94107")) == 0
    item = last_evidence(claim)
    assert item["observed_value"] is None
    assert item["expected"] == {"zip": 94107}  # no column to take a type from: JSON, else text
    assert item["details"]["record"] == "absent"
    assert "subject" not in item
    assert verdict_of(claim) == "refuted"


def test_expect_absent_verifies_a_deleted_record(sql_table: SqlTable, claim: Path) -> None:
    args = ["--table", sql_table.table, "--key", "id=9999", "--expect-absent"]
    assert readback(claim, sql_table.url, *args) == 0
    item = last_evidence(claim)
    assert item["expected"] is None
    assert item["observed_value"] is None
    assert verdict_of(claim) == "verified"


def test_expect_absent_is_refuted_by_a_record_that_is_still_there(
    sql_table: SqlTable, claim: Path
) -> None:
    args = ["--table", sql_table.table, "--key", "id=4471", "--expect-absent"]
    assert readback(claim, sql_table.url, *args) == 0
    item = last_evidence(claim)
    assert item["expected"] is None
    assert item["observed_value"] == {}  # present; its fields are not copied into the claim
    assert item["details"]["record"] == "present"
    assert item["subject"].startswith("sha256:")
    assert verdict_of(claim) == "refuted"


def test_expect_absent_and_expect_together_are_a_usage_error(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*by_key(sql_table, "id=1", "zip=1"), "--expect-absent"]
    assert readback(claim, sql_table.url, *args) == 4
    assert "--expect-absent asserts that there is no record" in capsys.readouterr().err


def test_attack_13_misspelt_column_is_an_observer_error(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A column the record lacks is a broken check (exit 5, nothing observed), not a refutation
    of the agent's write."""
    before = claim.read_bytes()
    args = by_key(sql_table, "id=4471", "zip=94107", "billing_zp=94107")
    assert readback(claim, sql_table.url, *args) == 5
    err = capsys.readouterr().err
    assert (
        "--expect billing_zp: no such column in the record (columns: id, code, zip, zip_n, amount)"
        in err
    )
    assert len(err.splitlines()) == 1
    assert claim.read_bytes() == before
    assert readback(claim, sql_table.url, *args, "--record-failure") == 5
    item = last_evidence(claim)
    assert "observed_value" not in item
    assert "billing_zp: no such column" in item["details"]["error"]
    assert verdict_of(claim) == "unverified"  # never refuted
    # Control: the column spelt right is observed, and the same record verifies.
    assert readback(claim, sql_table.url, *by_key(sql_table, "id=4471", "zip=94107")) == 0
    assert last_evidence(claim)["observed_value"] == {"zip": "94107"}
    assert verdict_of(claim) == "verified"


def test_a_column_a_query_does_not_select_is_an_observer_error(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = f"SELECT zip FROM {sql_table.table} WHERE id = :id"
    args = ["--query", query, "--param", "id=4471", "--expect", "zip_n=94107"]
    assert readback(claim, sql_table.url, *args) == 5
    assert "--expect zip_n: no such column in the record (columns: zip)" in capsys.readouterr().err


def test_a_composite_key(sql_table: SqlTable, claim: Path) -> None:
    args = [*by_key(sql_table, "zip=10001", "amount=0.1"), "--key", "id=4473"]
    assert readback(claim, sql_table.url, *args) == 0
    assert last_evidence(claim)["target"].endswith("where zip=10001 and id=4473")
    assert verdict_of(claim) == "verified"


def test_a_query_with_named_parameters(sql_table: SqlTable, claim: Path) -> None:
    # ':x' in a literal is not a parameter, '%' is a literal percent sign on every driver.
    query = (
        f"SELECT zip, ':x' AS lit, 'a%b' AS pct FROM {sql_table.table} "
        "WHERE code = :code AND zip LIKE '9%'"
    )
    args = [
        "--query",
        query,
        "--param",
        "code=acct-4471",
        "--expect",
        "zip=94107",
        "--expect",
        "lit=:x",
        "--expect",
        "pct=a%b",
    ]
    assert readback(claim, sql_table.url, *args) == 0
    item = last_evidence(claim)
    assert item["observed_value"] == {"zip": "94107", "lit": ":x", "pct": "a%b"}
    assert item["target"].endswith("with code=acct-4471")
    assert verdict_of(claim) == "verified"


def test_a_query_matching_no_row_is_an_absent_record(sql_table: SqlTable, claim: Path) -> None:
    query = f"SELECT zip FROM {sql_table.table} WHERE code = :code"
    args = ["--query", query, "--param", "code=acct-0", "--expect", "zip=94107"]
    assert readback(claim, sql_table.url, *args) == 0
    assert last_evidence(claim)["observed_value"] is None
    assert verdict_of(claim) == "refuted"


def test_a_two_row_query_is_an_observation_failure(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = claim.read_bytes()
    query = f"SELECT * FROM {sql_table.table} WHERE zip = :zip"
    args = ["--query", query, "--param", "zip=10001", "--expect", "zip=10001"]
    assert readback(claim, sql_table.url, *args) == 5
    assert "query returned 2 rows; a readback must identify one record" in capsys.readouterr().err
    assert claim.read_bytes() == before
    assert verdict_of(claim) == "unverified"


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE {t} SET zip = '00000' WHERE id = :id",
        "DELETE FROM {t} WHERE id = :id",
        "INSERT INTO {t} (id, zip) VALUES (:id + 1000, '00000')",
    ],
)
def test_a_write_through_query_fails_and_changes_nothing(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str], statement: str
) -> None:
    before = sql_table.rows()
    args = [
        "--query",
        statement.format(t=sql_table.table),
        "--param",
        "id=4471",
        "--expect",
        "zip=00000",
    ]
    assert readback(claim, sql_table.url, *args) == 4
    assert "is not a plain SELECT" in capsys.readouterr().err
    assert sql_table.rows() == before


@pytest.mark.parametrize(
    "statement",
    ["DROP TABLE {t}", "COMMIT", "COMMIT; DROP TABLE {t}", "SELECT 1; DROP TABLE {t}"],
)
def test_ending_the_transaction_or_a_second_statement_cannot_write(
    sql_table: SqlTable, claim: Path, statement: str
) -> None:
    args = ["--query", statement.format(t=sql_table.table), "--expect", "zip=00000"]
    assert readback(claim, sql_table.url, *args) == 4  # refused before connecting
    assert sql_table.exists()
    assert len(sql_table.rows()) == len(ROWS)


@pytest.mark.parametrize(
    "key",
    [
        "code=x' OR '1'='1",
        "code=x'; DROP TABLE {t}; --",
        'code=x" OR "1"="1',
        "code=acct-4471' --",
    ],
)
def test_an_injection_in_the_key_is_bound_as_a_value(
    sql_table: SqlTable, claim: Path, key: str
) -> None:
    args = by_key(sql_table, key.format(t=sql_table.table), "zip=94107")
    assert readback(claim, sql_table.url, *args) == 0
    assert last_evidence(claim)["observed_value"] is None  # no such code: nothing was executed
    assert sql_table.exists()
    assert len(sql_table.rows()) == len(ROWS)


@pytest.mark.parametrize(
    ("key", "refused_by"),
    [("id=1 OR 1=1", {"postgresql"}), ("id=4471abc", {"postgresql", "mariadb"})],
)
def test_a_value_that_is_not_an_integer_never_matches_an_integer_key(
    sql_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
    refused_by: set[str],
) -> None:
    """PostgreSQL refuses the text for an integer. MariaDB reads '4471abc' as 4471 with a
    warning, and the observer refuses such a conversion; it finds no row for '1 OR 1=1'.
    SQLite compares the text with the integers and finds none equal. Never the row 4471."""
    code = readback(claim, sql_table.url, *by_key(sql_table, key, "zip=94107"))
    if sql_table.store in refused_by:
        assert code == 5
        assert key.partition("=")[2] in capsys.readouterr().err
    else:
        assert code == 0
        assert last_evidence(claim)["observed_value"] is None
    assert len(sql_table.rows()) == len(ROWS)


def test_an_injection_in_the_table_name_is_quoted_as_an_identifier(
    sql_table: SqlTable, claim: Path
) -> None:
    hostile = f"{sql_table.table} WHERE 1=1; DROP TABLE {sql_table.table}; --"
    args = ["--table", hostile, "--key", "id=4471", "--expect", "zip=94107"]
    assert readback(claim, sql_table.url, *args) == 5
    assert sql_table.exists()


def test_an_unknown_table_or_column_fails_clearly(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--table", f"{sql_table.table}_nope", "--key", "id=4471", "--expect", "zip=94107"]
    assert readback(claim, sql_table.url, *args) == 5
    err = capsys.readouterr().err
    assert f"{sql_table.table}_nope" in err
    assert len(err.splitlines()) == 1
    # A mistyped key column is an error, never an "absent record" (SQLite would otherwise
    # read an unknown double-quoted name as a string).
    assert readback(claim, sql_table.url, *by_key(sql_table, "idd=4471", "zip=94107")) == 5
    assert "idd" in capsys.readouterr().err


def test_a_recorded_failure_keeps_the_claim_unverified(sql_table: SqlTable, claim: Path) -> None:
    args = [
        "--table",
        f"{sql_table.table}_nope",
        "--key",
        "id=4471",
        "--expect",
        "zip=94107",
        "--record-failure",
    ]
    assert readback(claim, sql_table.url, *args) == 5
    item = last_evidence(claim)
    assert "observed_value" not in item
    assert "error" in item["details"]
    assert verdict_of(claim) == "unverified"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--table", "t", "--key", "id=1"], "(or --expect-absent) is required"),
        (["--table", "t", "--expect", "a=1"], "needs --table T --key COL=VALUE, or --query"),
        (["--key", "id=1", "--expect", "a=1"], "needs --table T --key COL=VALUE, or --query"),
        (["--query", "SELECT 1", "--table", "t", "--expect", "a=1"], "--query replaces"),
        (
            ["--table", "t", "--key", "id=1", "--param", "a=1", "--expect", "a=1"],
            "--param goes with --query",
        ),
        (["--query", "SELECT :a", "--expect", "a=1"], "no --param a=VALUE"),
        (["--query", "SELECT 1", "--param", "a=1", "--expect", "a=1"], "has no :a"),
        (["--table", "t", "--key", "id", "--expect", "a=1"], "expected NAME=VALUE"),
        (["--table", "t", "--key", "id=1", "--expect", "a=1", "--expect", "a=2"], "given twice"),
    ],
)
def test_bad_options_are_usage_errors(
    sql_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    before = claim.read_bytes()
    assert readback(claim, sql_table.url, *args) == 4
    assert message in capsys.readouterr().err
    assert claim.read_bytes() == before


# --- Read-only for real (issue 7, item 8) ---------------------------------------------------


def assert_refused(
    claim: Path, capsys: pytest.CaptureFixture[str], before: bytes, message: str
) -> None:
    err = capsys.readouterr().err
    assert message in err, err
    assert len(err.splitlines()) == 1
    assert claim.read_bytes() == before  # nothing recorded, not even with --record-failure


def privileged_query(claim: Path, url: str, query: str) -> int:
    """The query as the superuser, allowed to read as one: only the query check stands between
    the statement and the server."""
    args = ["--query", query, "--expect", "x=1", "--allow-privileged-role", "--record-failure"]
    return readback(claim, url, *args)


def test_attack_08_postgresql_copy_to_program_is_refused(
    postgres: Any, server_dir: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = server_dir / "ran"
    attack = f"COPY (SELECT 1) TO PROGRAM 'touch {marker}'"
    # Control: the statement does run a program when a superuser sends it.
    postgres.execute(attack)
    assert marker.exists()
    marker.unlink()
    before = claim.read_bytes()
    assert privileged_query(claim, POSTGRES_URL, attack) == 4
    assert_refused(claim, capsys, before, "claim: --query: COPY is not a plain SELECT")
    assert not marker.exists()


def test_attack_08_postgresql_copy_to_file_is_refused(
    postgres: Any, server_dir: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = server_dir / "out"
    attack = f"COPY (SELECT 1 AS x) TO '{written}'"
    postgres.execute(attack)  # control: the server writes the file for a superuser
    assert written.exists()
    written.unlink()
    before = claim.read_bytes()
    assert privileged_query(claim, POSTGRES_URL, attack) == 4
    assert_refused(claim, capsys, before, "--query: COPY is not a plain SELECT")
    assert not written.exists()


@pytest.mark.parametrize(
    "attack",
    [
        "SELECT pg_read_file('/etc/hostname') AS x",
        "SELECT x FROM pg_catalog.pg_read_file('/etc/hostname') AS f(x)",
        "SELECT \"PG_READ_BINARY_FILE\"('/etc/hostname') AS x",
        "SELECT lo_import('/etc/hostname') AS x",
        "SELECT pg_ls_dir('/etc') AS x",
        "SELECT pg_advisory_lock(1) AS x",
        "SELECT set_config('default_transaction_read_only', 'off', false) AS x",
        "SELECT query_to_xml('SELECT 1', true, true, '') AS x",
        "SELECT nextval('s') AS x",
        "SELECT dblink_exec('dbname=test', 'DROP TABLE t') AS x",
    ],
)
def test_attack_08_postgresql_file_and_server_functions_are_refused(
    postgres: Any, claim: Path, capsys: pytest.CaptureFixture[str], attack: str
) -> None:
    hostname = postgres.execute("SELECT pg_read_file('/etc/hostname')").fetchone()[0]
    assert hostname  # control: a superuser can copy a server file into a result
    before = claim.read_bytes()
    assert privileged_query(claim, POSTGRES_URL, attack) == 4
    assert_refused(claim, capsys, before, "is not allowed (allowed: see docs/spec.md")


def mariadb_status(mariadb: Any, query: str) -> Any:
    with mariadb.cursor() as cursor:
        cursor.execute(query)
        return cursor.fetchone()[-1]


def test_attack_08_mariadb_into_outfile_is_refused(
    mariadb: Any, server_dir: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = server_dir / "out"
    attack = f"SELECT 1 AS x INTO OUTFILE '{written}'"
    with mariadb.cursor() as cursor:
        cursor.execute(attack)
    assert written.exists()  # control: the server writes the file for root
    written.unlink()
    before = claim.read_bytes()
    assert privileged_query(claim, MARIADB_URL, attack) == 4
    assert_refused(claim, capsys, before, "--query: not a statement the MariaDB parser")
    assert not written.exists()
    assert privileged_query(claim, MARIADB_URL, f"SELECT 1 AS x INTO DUMPFILE '{written}'") == 4
    assert not written.exists()


def test_attack_08_mariadb_set_global_is_refused(
    mariadb: Any, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limit = mariadb_status(mariadb, "SELECT @@global.max_connections")
    before = claim.read_bytes()
    attack = f"SET GLOBAL max_connections = {limit + 7}"
    assert privileged_query(claim, MARIADB_URL, attack) == 4
    assert_refused(claim, capsys, before, "--query: SET is not a plain SELECT")
    assert mariadb_status(mariadb, "SELECT @@global.max_connections") == limit


def test_attack_08_mariadb_flush_is_refused(
    mariadb: Any, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flushes = mariadb_status(mariadb, "SHOW GLOBAL STATUS LIKE 'Com_flush'")
    before = claim.read_bytes()
    assert privileged_query(claim, MARIADB_URL, "FLUSH TABLES") == 4
    assert_refused(claim, capsys, before, "--query: FLUSH is not a plain SELECT")
    assert mariadb_status(mariadb, "SHOW GLOBAL STATUS LIKE 'Com_flush'") == flushes


def test_attack_08_mariadb_kill_is_refused(
    mariadb: Any, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = mariadb_status(mariadb, "SELECT CONNECTION_ID()")
    before = claim.read_bytes()
    assert privileged_query(claim, MARIADB_URL, f"KILL {victim}") == 4
    assert_refused(claim, capsys, before, "--query: KILL is not a plain SELECT")
    assert mariadb_status(mariadb, "SELECT CONNECTION_ID()") == victim  # still connected


@pytest.mark.parametrize(
    "attack",
    [
        "SELECT LOAD_FILE('/etc/hostname') AS x",
        "SELECT 1 AS x /*! , LOAD_FILE('/etc/hostname') */",
        "SELECT GET_LOCK('claim', 1) AS x",
        "SELECT 1 AS x FROM DUAL FOR UPDATE",
    ],
)
def test_attack_08_mariadb_load_file_and_server_functions_are_refused(
    mariadb: Any, claim: Path, capsys: pytest.CaptureFixture[str], attack: str
) -> None:
    assert mariadb_status(mariadb, "SELECT LOAD_FILE('/etc/hostname')")  # control: root can
    before = claim.read_bytes()
    assert privileged_query(claim, MARIADB_URL, attack) == 4
    assert_refused(claim, capsys, before, "--query: ")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT * FROM {t} WHERE id = 4471 FOR UPDATE", "a locking clause"),
        ("SELECT * FROM {t} WHERE id = 4471 FOR SHARE", "a locking clause"),
        ("SELECT * INTO copy_of_t FROM {t}", "SELECT ... INTO is not a plain SELECT"),
        (
            "WITH gone AS (DELETE FROM {t} WHERE id = 4471 RETURNING zip) SELECT zip FROM gone",
            "DELETE is not a plain SELECT",
        ),
        ("SELECT zip FROM {t} WHERE id = 4471 -- note", "comments are not allowed"),
    ],
)
def test_a_query_that_is_not_a_plain_select_is_refused(
    sql_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    query: str,
    message: str,
) -> None:
    before, rows = claim.read_bytes(), sql_table.rows()
    args = ["--query", query.format(t=sql_table.table), "--expect", "zip=94107"]
    assert readback(claim, sql_table.url, *args) == 4
    assert message in capsys.readouterr().err
    assert claim.read_bytes() == before
    assert sql_table.rows() == rows


def test_a_plain_select_with_a_cte_and_a_union_is_read(sql_table: SqlTable, claim: Path) -> None:
    """Control for the query check: CTEs, UNION, functions and subqueries that only read."""
    query = (
        f"WITH one AS (SELECT id, zip FROM {sql_table.table} WHERE id = :id) "
        "SELECT UPPER(zip) AS zip, (SELECT COUNT(*) FROM one) AS n FROM one "
        f"UNION SELECT zip, 0 AS n FROM {sql_table.table} WHERE id = 0"
    )
    args = ["--query", query, "--param", "id=4471", "--expect", "zip=94107", "--expect", "n=1"]
    assert readback(claim, sql_table.url, *args) == 0
    item = last_evidence(claim)
    assert item["observed_value"] == {"zip": "94107", "n": 1}
    assert "privileged_role" not in item["details"]
    assert verdict_of(claim) == "verified"


def test_attack_08_superuser_is_refused(
    server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = claim.read_bytes()
    args = [*by_key(server_table, "id=4471", "zip=94107"), "--record-failure"]
    assert readback(claim, server_table.admin_url, *args) == 4
    err = capsys.readouterr().err
    role = {"postgresql": "is (or can become) a superuser", "mariadb": "holds ALL PRIVILEGES"}
    assert role[server_table.store] in err
    assert "a readback needs a role that can only read (or --allow-privileged-role" in err
    assert len(err.splitlines()) == 1
    assert claim.read_bytes() == before


def test_attack_08_superuser_with_allow_privileged_role_is_recorded_as_such(
    server_table: SqlTable, claim: Path
) -> None:
    args = [*by_key(server_table, "id=4471", "zip=94107"), "--allow-privileged-role"]
    assert readback(claim, server_table.admin_url, *args) == 0
    item = last_evidence(claim)
    assert item["details"]["privileged_role"] is True
    assert item["observed_value"] == {"zip": "94107"}
    # Control: the read-only role reads the same record and is not marked.
    assert readback(claim, server_table.url, *args) == 0
    assert "privileged_role" not in last_evidence(claim)["details"]


WRITER_GRANTS = {
    "postgresql": {
        "table": ("GRANT INSERT ON {t} TO {r}", "can write to"),
        "column": ("GRANT UPDATE (zip) ON {t} TO {r}", "can write to"),
        "truncate": ("GRANT TRUNCATE ON {t} TO {r}", "can write to"),
        "server files": ("GRANT pg_read_server_files TO {r}", "member of pg_read_server_files"),
        "programs": ("GRANT pg_execute_server_program TO {r}", "member of pg_execute_server"),
    },
    "mariadb": {
        "table": ("GRANT INSERT ON test.{t} TO '{r}'@'%'", "holds INSERT on `test`.`"),
        "column": ("GRANT UPDATE (zip) ON test.{t} TO '{r}'@'%'", "holds UPDATE on `test`.`"),
        "schema": ("GRANT DELETE ON test.* TO '{r}'@'%'", "holds DELETE on `test`.*"),
        "server files": ("GRANT FILE ON *.* TO '{r}'@'%'", "holds FILE on *.*"),
        "public": ("GRANT INSERT ON test.{t} TO PUBLIC", "holds INSERT on `test`.`"),
    },
}


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize("how", ["table", "column", "truncate", "server files", "programs"])
def test_attack_08_postgresql_role_that_can_write_is_refused(
    postgres: Any,
    server_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    grant, message = WRITER_GRANTS["postgresql"][how]
    role = server_table.url.partition("://")[2].partition("@")[0]
    postgres.execute(grant.format(t=server_table.table, r=role))
    args = by_key(server_table, "id=4471", "zip=94107")
    assert readback(claim, server_table.url, *args) == 4
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("server_table", ["mariadb"], indirect=True)
@pytest.mark.parametrize("how", ["table", "column", "schema", "server files", "public"])
def test_attack_08_mariadb_role_that_can_write_is_refused(
    mariadb: Any,
    server_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    grant, message = WRITER_GRANTS["mariadb"][how]
    role = server_table.url.partition("://")[2].partition("@")[0]
    with mariadb.cursor() as cursor:
        cursor.execute(grant.format(t=server_table.table, r=role))
    try:
        args = by_key(server_table, "id=4471", "zip=94107")
        assert readback(claim, server_table.url, *args) == 4
        assert message in capsys.readouterr().err
    finally:
        if how == "public":
            with mariadb.cursor() as cursor:
                cursor.execute(f"REVOKE INSERT ON test.{server_table.table} FROM PUBLIC")


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_a_postgresql_function_that_writes_is_stopped_by_the_read_only_transaction(
    postgres: Any, server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The query calls no function, but a view it reads does; the read-only transaction still
    stops a write inside it, even one the function makes with its owner's (superuser) rights."""
    function, view = unique("writes"), unique("writing_view")
    postgres.execute(
        f"CREATE FUNCTION {function}() RETURNS int LANGUAGE sql SECURITY DEFINER AS "
        f"$$ INSERT INTO {server_table.table} (id, zip) VALUES (9001, 'w') RETURNING 1 $$"
    )
    postgres.execute(f"CREATE VIEW {view} AS SELECT {function}() AS x")
    server_table.grant(view)
    try:
        args = ["--query", f"SELECT x FROM {view}", "--expect", "x=1", "--allow-view", view]
        assert readback(claim, server_table.url, *args) == 5
        assert "cannot execute INSERT in a read-only transaction" in capsys.readouterr().err
        assert len(server_table.rows()) == len(ROWS)
    finally:
        postgres.execute(f"DROP VIEW {view}")
        postgres.execute(f"DROP FUNCTION {function}()")


@pytest.mark.parametrize("server_table", ["mariadb"], indirect=True)
def test_a_mariadb_function_that_writes_is_stopped_by_the_read_only_transaction(
    mariadb: Any, server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    function, view = unique("writes"), unique("writing_view")
    with mariadb.cursor() as cursor:
        cursor.execute(
            f"CREATE FUNCTION {function}() RETURNS INT MODIFIES SQL DATA SQL SECURITY DEFINER "
            f"BEGIN INSERT INTO {server_table.table} (id, zip) VALUES (9001, 'w'); RETURN 1; END"
        )
        cursor.execute(f"CREATE SQL SECURITY DEFINER VIEW {view} AS SELECT {function}() AS x")
    server_table.grant(view)
    try:
        args = ["--query", f"SELECT x FROM {view}", "--expect", "x=1", "--allow-view", view]
        assert readback(claim, server_table.url, *args) == 5
        assert "READ ONLY transaction" in capsys.readouterr().err
        assert len(server_table.rows()) == len(ROWS)
    finally:
        with mariadb.cursor() as cursor:
            cursor.execute(f"DROP VIEW {view}")
            cursor.execute(f"DROP FUNCTION {function}")


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_postgresql_reads_string_literals_as_the_query_check_does(
    postgres: Any, server_table: SqlTable, postgres_reader: Reader, claim: Path
) -> None:
    """With standard_conforming_strings off, the server would read 'a\\' as an open string and
    code the parser took for text; the observer sets it on for its transaction."""
    postgres.execute(f"ALTER ROLE {postgres_reader.name} SET standard_conforming_strings = off")
    query = "SELECT 'a\\' AS x"
    assert readback(claim, server_table.url, "--query", query, "--expect", "x=a\\") == 0
    assert last_evidence(claim)["observed_value"] == {"x": "a\\"}  # off, it would not end
    assert verdict_of(claim) == "verified"


@pytest.mark.parametrize("server_table", ["mariadb"], indirect=True)
def test_mariadb_reads_quotes_as_the_query_check_does(server_table: SqlTable, claim: Path) -> None:
    args = ["--query", "SELECT @@session.sql_mode AS m, 'it''s' AS q"]
    mode = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
    assert readback(claim, server_table.url, *args, "--expect", f"m={mode}") == 0
    assert last_evidence(claim)["observed_value"] == {"m": mode}
    assert verdict_of(claim) == "verified"


# --- Functions by allow-list (issue 17, finding 6) -------------------------------------------

UNICODE_FILE_READ = "SELECT U&\"\\0070g_read_file\"('/etc/hostname') AS f"


@pytest.mark.parametrize(("query", "function"), FINDING_45)
def test_attack_45_refused_before_any_connection(
    claim: Path, capsys: pytest.CaptureFixture[str], query: str, function: str
) -> None:
    """Exit 4 and the function's name from a URL where nothing listens: no connection was
    tried (one would fail with exit 5)."""
    url = f"postgresql://postgres@127.0.0.1:{closed_port()}/test"
    before = claim.read_bytes()
    args = ["--query", query, "--expect", "f=x", "--record-failure"]
    assert readback(claim, url, *args) == 4
    assert_refused(claim, capsys, before, f"claim: --query: function {function} is not allowed")


def test_attack_45_the_escaped_file_read_never_reaches_postgresql(
    postgres: Any, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostname = postgres.execute(UNICODE_FILE_READ).fetchone()[0]
    assert hostname  # control: the server reads U&"\0070g_read_file" as pg_read_file
    before = claim.read_bytes()
    assert privileged_query(claim, POSTGRES_URL, UNICODE_FILE_READ.replace("AS f", "AS x")) == 4
    captured = capsys.readouterr()
    assert captured.err == (
        "claim: --query: function pg_read_file is not allowed (allowed: see docs/spec.md, "
        "section 7.3)\n"
    )
    assert hostname.strip() not in captured.out + claim.read_text()
    assert claim.read_bytes() == before


HONEST_QUERIES = {
    "postgresql": "SELECT lower(a.code) AS code, coalesce(a.zip, 'none') AS zip,"
    " (SELECT count(*) FROM {t}) AS n, '{\"s\": \"open\"}'::jsonb ->> 's' AS s,"
    " date_part('year', DATE '2026-08-27')::int AS y, upper(b.code) AS b"
    " FROM {t} a JOIN {t} b ON b.id = a.id WHERE a.id = :id",
    "mariadb": "SELECT lower(a.code) AS code, coalesce(a.zip, 'none') AS zip,"
    " (SELECT count(*) FROM {t}) AS n, JSON_UNQUOTE(JSON_EXTRACT('{\"s\": \"open\"}', '$.s'))"
    " AS s, YEAR('2026-08-27') AS y, upper(b.code) AS b"
    " FROM {t} a JOIN {t} b ON b.id = a.id WHERE a.id = :id",
    "sqlite": "SELECT lower(a.code) AS code, coalesce(a.zip, 'none') AS zip,"
    " (SELECT count(*) FROM {t}) AS n, json_extract('{\"s\": \"open\"}', '$.s') AS s,"
    " CAST(strftime('%Y', '2026-08-27') AS INTEGER) AS y, upper(b.code) AS b"
    " FROM {t} a JOIN {t} b ON b.id = a.id WHERE a.id = :id",
}


def test_attack_45_ordinary_functions_still_read(sql_table: SqlTable, claim: Path) -> None:
    """Control: string, conditional, aggregate, JSON and date functions, a join and a subquery
    pass the allow-list and read the record on each store."""
    query = HONEST_QUERIES[sql_table.store].replace("{t}", sql_table.table)
    expect = ["code=acct-4471", "zip=94107", "n=3", "s=open", "y=2026", "b=ACCT-4471"]
    args = ["--query", query, "--param", "id=4471"]
    for expectation in expect:
        args += ["--expect", expectation]
    assert readback(claim, sql_table.url, *args) == 0
    assert last_evidence(claim)["observed_value"] == {
        "code": "acct-4471",
        "zip": "94107",
        "n": 3,
        "s": "open",
        "y": 2026,
        "b": "ACCT-4471",
    }
    assert verdict_of(claim) == "verified"


SHADOWS = {
    # lower(zip) on a varchar column: the schema's lower(varchar) matches better than
    # pg_catalog's lower(text), wherever the schema stands on the search path.
    "function": (
        "CREATE FUNCTION {s}.lower(varchar) RETURNS text LANGUAGE sql AS $$ SELECT '94107' $$",
        "SELECT lower(zip) AS zip FROM {t} WHERE id = 4472",
        "zip=94107",
        "function {s}.lower(character varying)",
    ),
    # zip = '...' on a varchar column: the schema's = (varchar, varchar) wins the same way.
    "operator": (
        "CREATE FUNCTION {s}.always(varchar, varchar) RETURNS boolean LANGUAGE sql AS"
        " $$ SELECT true $$; CREATE OPERATOR {s}.= (LEFTARG = varchar, RIGHTARG = varchar,"
        " FUNCTION = {s}.always)",
        "SELECT code FROM {t} WHERE zip = 'written' ORDER BY id LIMIT 1",
        "code=acct-4471",
        "operator {s}.=",
    ),
    # a.state on a table without that column: PostgreSQL calls state(a).
    "attribute": (
        "CREATE FUNCTION {s}.state({t}) RETURNS text LANGUAGE sql AS $$ SELECT 'closed' $$",
        "SELECT a.state FROM {t} a WHERE id = 4472",
        "state=closed",
        "function {s}.state({t})",
    ),
}


# lower(m) for an enum m: the type's owner casts it to text implicitly by its own function. A
# cast belongs to the whole database (no schema holds it), and the readback refuses every query
# while one of the database's own exists: it is made in a database of its own, so that no other
# test's readback (another worker's, another run's) meets it.
CAST_SHADOW = (
    "CREATE TYPE {s}.mood AS ENUM ('low'); CREATE FUNCTION {s}.lie({s}.mood) RETURNS text"
    " LANGUAGE sql AS $$ SELECT '94107' $$; CREATE CAST ({s}.mood AS text) WITH FUNCTION"
    " {s}.lie({s}.mood) AS IMPLICIT; CREATE TABLE {s}.moods (m {s}.mood);"
    " INSERT INTO {s}.moods VALUES ('low'); GRANT SELECT ON {s}.moods TO {s}"
)


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize("shadow", sorted(SHADOWS))
def test_attack_56_a_schema_on_the_search_path_cannot_answer_for_pg_catalog(
    postgres: Any,
    server_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    shadow: str,
) -> None:
    """The agent creates a schema named after the reader role ("$user" on the default search
    path) holding a function or operator of an allowed name that returns what the check
    expects."""
    import psycopg

    create, query, expect, named = SHADOWS[shadow]
    role = server_table.url.partition("://")[2].partition("@")[0]
    query = query.format(t=server_table.table, s=role)
    postgres.execute(f"CREATE SCHEMA {role}")
    try:
        postgres.execute(f"GRANT USAGE ON SCHEMA {role} TO {role}")
        postgres.execute(create.format(s=role, t=server_table.table))
        with psycopg.connect(server_table.url) as conn:  # control: the role's query lies
            assert conn.execute(query).fetchone() == (expect.partition("=")[2],)
        before = claim.read_bytes()
        assert readback(claim, server_table.url, "--query", query, "--expect", expect) == 4
        err = capsys.readouterr().err
        shown = named.format(s=role, t=server_table.table)
        assert f"{shown}, the database's own code" in err, err
        assert claim.read_bytes() == before
    finally:
        postgres.execute(f"DROP SCHEMA {role} CASCADE")
    # Without the schema the same query reads the record as it is, or fails: the table has no
    # state column, and the table of moods is gone.
    exit_code = readback(claim, server_table.url, "--query", query, "--expect", expect)
    failed = shadow == "attribute"
    assert exit_code == (5 if failed else 0)
    assert verdict_of(claim) == ("unverified" if failed else "refuted")


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_attack_56_a_cast_of_the_databases_own_cannot_answer_for_pg_catalog(
    postgres: Any, server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent's enum type, cast to text implicitly by its own function: lower(m) returns
    what the check expects. In a database of its own (see CAST_SHADOW)."""
    import psycopg

    role = server_table.url.partition("://")[2].partition("@")[0]
    database = unique("claim_casts")
    postgres.execute(f"CREATE DATABASE {database}")
    try:
        admin = server_table.admin_url.rpartition("/")[0] + f"/{database}"
        with psycopg.connect(admin, autocommit=True) as own:
            own.execute(f"CREATE SCHEMA {role}")
            own.execute(f"GRANT USAGE ON SCHEMA {role} TO {role}")
            own.execute(CAST_SHADOW.format(s=role))
        url = server_table.url.rpartition("/")[0] + f"/{database}"
        query = f"SELECT lower(m) AS zip FROM {role}.moods"
        with psycopg.connect(url) as conn:  # control: the role's query lies
            assert conn.execute(query).fetchone() == ("94107",)
        before = claim.read_bytes()
        assert readback(claim, url, "--query", query, "--expect", "zip=94107") == 4
        err = capsys.readouterr().err
        assert f"to text by {role}.lie, the database's own code" in err, err
        assert claim.read_bytes() == before
    finally:
        postgres.execute(f"DROP DATABASE {database} WITH (FORCE)")


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize(
    ("answer", "args"), [("true", ["--expect", "id=4471"]), ("false", ["--expect-absent"])]
)
def test_attack_56_a_key_lookup_cannot_be_answered_by_a_schemas_operator(
    postgres: Any,
    server_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    answer: str,
    args: list[str],
) -> None:
    """``--table T --key zip=...`` compares with ``=``: an operator ``=`` for varchar in the
    reader role's schema matched any row (or none: a deletion read as done)."""
    import psycopg

    t, role = server_table.table, server_table.url.partition("://")[2].partition("@")[0]
    postgres.execute(f"CREATE SCHEMA {role}")
    try:
        postgres.execute(f"GRANT USAGE ON SCHEMA {role} TO {role}")
        postgres.execute(
            f"CREATE FUNCTION {role}.answer(varchar, varchar) RETURNS boolean LANGUAGE sql AS"
            f" $$ SELECT {answer} AND $1::text = '94107'::text $$"
        )
        postgres.execute(
            f"CREATE OPERATOR {role}.= (LEFTARG = varchar, RIGHTARG = varchar,"
            f" FUNCTION = {role}.answer)"
        )
        key = ["--table", t, "--key", "zip=" + ("written" if answer == "true" else "94107")]
        with psycopg.connect(server_table.url) as conn:  # control: the role's lookup lies
            found = conn.execute(f"SELECT id FROM {t} WHERE zip = %s", [key[-1][4:]]).fetchall()
            assert found == ([(4471,)] if answer == "true" else [])
        before = claim.read_bytes()
        assert readback(claim, server_table.url, *key, *args) == 4
        assert f"operator {role}.=, the database's own code" in capsys.readouterr().err
        assert claim.read_bytes() == before
    finally:
        postgres.execute(f"DROP SCHEMA {role} CASCADE")


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_an_extension_a_superuser_installed_on_the_search_path_is_no_shadow(
    postgres: Any, server_table: SqlTable, claim: Path
) -> None:
    """Control for attack 56: seg's operators (=, <, ...) in a schema on the search path are
    the server's code, installed by the superuser, and do not stop a readback."""
    role = server_table.url.partition("://")[2].partition("@")[0]
    postgres.execute(f"CREATE SCHEMA {role}")
    try:
        postgres.execute(f"GRANT USAGE ON SCHEMA {role} TO {role}")
        postgres.execute(f"CREATE EXTENSION seg SCHEMA {role}")
        query = f"SELECT zip FROM {server_table.table} WHERE id = 4471 AND zip >= '9'"
        assert readback(claim, server_table.url, "--query", query, "--expect", "zip=94107") == 0
        assert verdict_of(claim) == "verified"
    finally:
        postgres.execute(f"DROP SCHEMA {role} CASCADE")


@pytest.mark.parametrize("server_table", ["mariadb"], indirect=True)
def test_attack_57_mariadb_stored_function_named_like_a_built_in_is_not_reached(
    mariadb: Any, server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stored function `sum` in the database answers ``sum (x)`` and `` `sum`(x) ``; only
    ``sum(x)`` is the built-in. The function must sit in the reader's own database (`test`)
    under the built-in's name, so the spellings are tried in one test, one after another: as
    separate tests, two xdist workers would make the function at once."""
    import pymysql

    role = server_table.url.partition("://")[2].partition("@")[0]
    with mariadb.cursor() as cursor:
        cursor.execute("CREATE FUNCTION `sum`(x INT) RETURNS INT DETERMINISTIC RETURN 94107")
        cursor.execute(f"GRANT EXECUTE ON FUNCTION test.`sum` TO '{role}'@'%'")
    try:
        for spelling in ("`sum`(zip_n)", "sum (zip_n)", "SUM\n(zip_n)"):
            query = f"SELECT {spelling} AS n FROM {server_table.table} WHERE id = 4472"
            conn = pymysql.connect(host="127.0.0.1", user=role, database="test")
            try:
                with conn.cursor() as cursor:  # control: the role's query reaches the function
                    cursor.execute("SET SESSION sql_mode = %s", [readback_sql.MARIADB_SQL_MODE])
                    cursor.execute(query)
                    assert cursor.fetchone() == (94107,), spelling
            finally:
                conn.close()
            before = claim.read_bytes()
            assert readback(claim, server_table.url, "--query", query, "--expect", "n=94107") == 4
            assert "calls the database's stored function of that name" in capsys.readouterr().err
            assert claim.read_bytes() == before
        honest = query.replace("SUM\n(zip_n)", "sum(zip_n)")
        assert readback(claim, server_table.url, "--query", honest, "--expect", "n=94107") == 0
        assert last_evidence(claim)["observed_value"] == {"n": 10001}
        assert verdict_of(claim) == "refuted"
    finally:
        with mariadb.cursor() as cursor:
            cursor.execute("DROP FUNCTION `sum`")


# --- A readback reads the table, not what the agent put in its place (attacks 67, 68) ------


def read_as_reader(table: SqlTable, query: str) -> list[tuple[Any, ...]]:
    """The rows the readback's own role gets for ``query``: what the observer would read."""
    if table.store == "postgresql":
        import psycopg

        with psycopg.connect(table.url) as server:
            return list(server.execute(query).fetchall())
    if table.store == "mariadb":
        import pymysql

        role = table.url.partition("://")[2].partition("@")[0]
        conn = pymysql.connect(host="127.0.0.1", user=role, database="test")
        try:
            with conn.cursor() as cursor:
                cursor.execute(query)
                return list(cursor.fetchall())
        finally:
            conn.close()
    store = sqlite3.connect(table.url.removeprefix("sqlite:///"))
    try:
        return list(store.execute(query).fetchall())
    finally:
        store.close()


def assert_not_the_table(
    claim: Path, capsys: pytest.CaptureFixture[str], before: bytes, message: str
) -> None:
    err = capsys.readouterr().err
    assert message in err, err
    assert "a readback reads the table itself" in err or "BYPASSRLS" in err, err
    assert len(err.splitlines()) == 1
    assert claim.read_bytes() == before  # nothing observed
    assert verdict_of(claim) == "unverified"


# Row-level security: (the policy's condition, the readback, what the role reads meanwhile).
RLS_CASES = {
    # A claimed deletion: the policy hides the row that is still there.
    "deleted": ("id <> 4471", ["--key", "id=4471", "--expect-absent"], "id = 4471", []),
    # A stale duplicate hidden, so that one record (the expected one) shows.
    "stale": (
        "id <> 4473",
        ["--key", "zip_n=10001", "--expect", "id=4472"],
        "zip_n = 10001",
        [(4472,)],
    ),
}


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize("case", sorted(RLS_CASES))
def test_attack_67_row_level_security_cannot_hide_a_row(
    postgres: Any,
    server_table: SqlTable,
    postgres_reader: Reader,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    """The agent, owning the table, turns row-level security on with a policy that hides from
    the reader role what contradicts its claim."""
    policy, args, where, seen = RLS_CASES[case]
    t = server_table.table
    postgres.execute(f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY")
    postgres.execute(f"CREATE POLICY hide ON {t} USING ({policy})")
    assert read_as_reader(server_table, f"SELECT id FROM {t} WHERE {where}") == seen  # it lies
    before = claim.read_bytes()
    assert readback(claim, server_table.url, "--table", t, *args) == 5
    assert_not_the_table(
        claim, capsys, before, f"row-level security on public.{t} decides which of its rows"
    )
    # Control: a role that row-level security does not filter reads the table as it is: the
    # deleted row is there, the stale one makes two.
    postgres.execute(f"ALTER ROLE {postgres_reader.name} BYPASSRLS")
    exit_code = readback(claim, server_table.url, "--table", t, *args)
    if case == "deleted":
        assert exit_code == 0
        assert last_evidence(claim)["details"]["record"] == "present"
        assert verdict_of(claim) == "refuted"
    else:
        assert exit_code == 5
        assert "query returned 2 rows" in capsys.readouterr().err


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_attack_67_row_level_security_behind_an_allowed_view_fails_the_read(
    postgres: Any, server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through a view the operator allowed, the table's policies filter as the view's owner:
    the observer reads with row_security off, so such a read fails rather than filters."""
    t, view, owner = server_table.table, unique("accounts_view"), unique("view_owner")
    postgres.execute(f"CREATE ROLE {owner}")
    try:
        postgres.execute(f"GRANT SELECT ON {t} TO {owner}")
        postgres.execute(f"CREATE VIEW {view} AS SELECT id, zip FROM {t}")
        postgres.execute(f"ALTER VIEW {view} OWNER TO {owner}")
        server_table.grant(view)
        postgres.execute(f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY")
        postgres.execute(f"CREATE POLICY hide ON {t} TO {owner} USING (id <> 4471)")
        assert read_as_reader(server_table, f"SELECT id FROM {view} WHERE id = 4471") == []
        args = ["--table", view, "--key", "id=4471", "--expect-absent", "--allow-view", view]
        before = claim.read_bytes()
        assert readback(claim, server_table.url, *args) == 5
        assert_not_the_table(
            claim,
            capsys,
            before,
            f'query would be affected by row-level security policy for table "{t}"',
        )
    finally:
        postgres.execute(f"DROP POLICY IF EXISTS hide ON {t}")
        postgres.execute(f"DROP VIEW IF EXISTS {view}")
        postgres.execute(f"DROP OWNED BY {owner}")
        postgres.execute(f"DROP ROLE {owner}")


def test_attack_68_a_view_in_the_tables_place_is_refused(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent renames the table and puts a view of that name in its place, hiding the row it
    claims to have deleted. PostgreSQL, MariaDB and SQLite alike."""
    t = sql_table.table
    rename = {"mariadb": "RENAME TABLE {a} TO {b}"}.get(
        sql_table.store, "ALTER TABLE {a} RENAME TO {b}"
    )
    sql_table.execute(rename.format(a=t, b=f"{t}_real"), [])
    try:
        sql_table.execute(f"CREATE VIEW {t} AS SELECT * FROM {t}_real WHERE id <> 4471", [])
        if sql_table.store == "postgresql":
            sql_table.grant(t)  # MariaDB keeps the grant by name; SQLite has none
        assert read_as_reader(sql_table, f"SELECT id FROM {t} WHERE id = 4471") == []  # it lies
        before = claim.read_bytes()
        args = ["--table", t, "--key", "id=4471", "--expect-absent"]
        assert readback(claim, sql_table.url, *args) == 5
        shown = f"public.{t}" if sql_table.store == "postgresql" else t
        assert_not_the_table(
            claim, capsys, before, f"{shown} is a view, not a table (or --allow-view {t})"
        )
        # The same refusal for a query reading it.
        query = f"SELECT id FROM {t} WHERE id = 4471"
        assert readback(claim, sql_table.url, "--query", query, "--expect-absent") == 5
        assert_not_the_table(claim, capsys, before, f"{shown} is a view, not a table")
    finally:
        sql_table.execute(f"DROP VIEW IF EXISTS {t}", [])
        sql_table.execute(rename.format(a=f"{t}_real", b=t), [])
    # Control: the table itself shows the row.
    assert readback(claim, sql_table.url, "--table", t, "--key", "id=4471", "--expect-absent") == 0
    assert last_evidence(claim)["details"] == {"store": sql_table.store, "record": "present"}
    assert verdict_of(claim) == "refuted"


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_attack_68_a_name_is_checked_as_the_server_reads_it(
    postgres: Any, server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PostgreSQL folds only ASCII letters of an unquoted name: ``É`` stays ``É``. Checked as
    ``é``, the view's name found nothing, and the check let the read through the view."""
    t = server_table.table
    view = f"{t}_É"
    postgres.execute(f"CREATE VIEW {view} AS SELECT * FROM {t} WHERE id <> 4471")
    try:
        server_table.grant(view)
        query = f"SELECT id FROM {view} WHERE id = 4471"
        assert read_as_reader(server_table, query) == []  # it lies
        before = claim.read_bytes()
        assert readback(claim, server_table.url, "--query", query, "--expect-absent") == 5
        assert_not_the_table(claim, capsys, before, f'public."{view}" is a view, not a table')
    finally:
        postgres.execute(f"DROP VIEW {view}")


# What can stand in a PostgreSQL table's place, or answer for part of it: (the setup, the
# message). {t} is the table, {r} the reader role, {f} a CSV file of rows without 4471 and
# with 4474.
STAND_INS = {
    "materialized view": (
        "ALTER TABLE {t} RENAME TO {t}_real;"
        " CREATE MATERIALIZED VIEW {t} AS SELECT * FROM {t}_real WHERE id <> 4471;"
        " GRANT SELECT ON {t} TO {r}",
        "public.{t} is a materialized view, not a table (or --allow-view {t})",
    ),
    "select rule": (
        "ALTER TABLE {t} RENAME TO {t}_real; CREATE TABLE {t} (LIKE {t}_real);"
        ' CREATE RULE "_RETURN" AS ON SELECT TO {t} DO INSTEAD'
        " SELECT * FROM {t}_real WHERE id <> 4471; GRANT SELECT ON {t} TO {r}",
        "public.{t} is a view, not a table",
    ),
    "foreign table": (
        "ALTER TABLE {t} RENAME TO {t}_real;"
        " CREATE FOREIGN TABLE {t} (id int, code text, zip text, zip_n int, amount numeric)"
        " SERVER {t}_files OPTIONS (filename '{f}', format 'csv'); GRANT SELECT ON {t} TO {r}",
        "public.{t} is a foreign table, not a table",
    ),
    "foreign child": (
        "DELETE FROM {t} WHERE id = 4471;"
        " CREATE FOREIGN TABLE {t}_child () INHERITS ({t})"
        " SERVER {t}_files OPTIONS (filename '{f}', format 'csv')",
        "rows of public.{t} come from public.{t}_child, a foreign table",
    ),
    "same name on the search path": (
        # A schema named after the reader role is first on the default search path ("$user").
        "CREATE SCHEMA {r}; GRANT USAGE ON SCHEMA {r} TO {r};"
        " CREATE TABLE {r}.{t} AS SELECT * FROM {t} WHERE id <> 4471;"
        " GRANT SELECT ON {r}.{t} TO {r}",
        "{t} is {r}.{t} on this role's search path, and public.{t} is another relation of that"
        " name (name the schema: {r}.{t})",
    ),
}


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize("stand_in", sorted(STAND_INS))
def test_attack_68_what_stands_in_a_postgresql_tables_place_is_refused(
    postgres: Any,
    server_table: SqlTable,
    postgres_reader: Reader,
    server_dir: Path,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    stand_in: str,
) -> None:
    """A materialized view, a view made by a SELECT rule, a foreign table (file_fdw: rows from a
    file), a foreign child table answering for part of the table, or a table of the same name
    in a schema earlier on the reader's search path: each made the deletion of 4471 read as
    done (it is not: 4471 is in the table, or the child brings it back)."""
    t, r = server_table.table, postgres_reader.name
    rows = server_dir / "rows.csv"
    rows.write_text(
        "4471,acct-4471,94107,94107,12.50\n"
        if stand_in == "foreign child"
        else "4472,acct-4472,10001,10001,99.99\n"
    )
    rows.chmod(0o644)
    setup, message = STAND_INS[stand_in]
    postgres.execute("CREATE EXTENSION IF NOT EXISTS file_fdw")  # kept: others may use it
    postgres.execute(f"CREATE SERVER {t}_files FOREIGN DATA WRAPPER file_fdw")
    try:
        for statement in setup.format(t=t, r=r, f=rows).split("; "):
            postgres.execute(statement)
        query = f"SELECT id FROM {t} WHERE id = 4471"
        expected = [(4471,)] if stand_in == "foreign child" else []
        assert read_as_reader(server_table, query) == expected
        before = claim.read_bytes()
        if stand_in == "foreign child":  # the claim: 4471 written back
            args = ["--key", "id=4471", "--expect", "zip=94107"]
        else:
            args = ["--key", "id=4471", "--expect-absent"]
        assert readback(claim, server_table.url, "--table", t, *args) == 5
        assert_not_the_table(claim, capsys, before, message.format(t=t, r=r))
    finally:
        postgres.execute(f"DROP SERVER {t}_files CASCADE")
        postgres.execute(f"DROP SCHEMA IF EXISTS {r} CASCADE")
        if postgres.execute("SELECT to_regclass(%s)", [f"{t}_real"]).fetchone() != (None,):
            drop_relation(postgres, t)
            postgres.execute(f"ALTER TABLE {t}_real RENAME TO {t}")


def drop_relation(postgres: Any, name: str) -> None:
    """Drop whatever relation ``name`` is, by its kind."""
    found = postgres.execute(
        "SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [name]
    ).fetchone()
    if found is not None:
        kind = {"r": "TABLE", "v": "VIEW", "m": "MATERIALIZED VIEW", "f": "FOREIGN TABLE"}
        postgres.execute(f"DROP {kind[found[0]]} {name}")


@pytest.mark.parametrize("sql_table", ["sqlite"], indirect=True)
def test_attack_68_an_sqlite_virtual_table_in_the_tables_place_is_refused(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full-text (fts5) table of the same name, without the row the claim deleted."""
    t = sql_table.table
    sql_table.execute(f"ALTER TABLE {t} RENAME TO {t}_real", [])
    sql_table.execute(f"CREATE VIRTUAL TABLE {t} USING fts5(id, zip)", [])
    sql_table.execute(f"INSERT INTO {t} SELECT id, zip FROM {t}_real WHERE id <> 4471", [])
    assert read_as_reader(sql_table, f"SELECT id FROM {t} WHERE id = 4471") == []  # it lies
    before = claim.read_bytes()
    args = ["--table", t, "--key", "id=4471", "--expect-absent"]
    assert readback(claim, sql_table.url, *args) == 5
    assert_not_the_table(claim, capsys, before, f"{t} is a virtual table, not a table")


def test_a_view_the_operator_allows_is_read_and_recorded(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Control for attack 68: an operator who means to read a view says so, and the evidence
    says it was a view."""
    t, view = sql_table.table, unique("accounts_view")
    sql_table.execute(f"CREATE VIEW {view} AS SELECT id, zip FROM {t}", [])
    try:
        sql_table.grant(view)
        args = ["--table", view, "--key", "id=4471", "--expect", "zip=94107"]
        before = claim.read_bytes()
        assert readback(claim, sql_table.url, *args) == 5  # not without the operator's word
        assert_not_the_table(claim, capsys, before, "is a view, not a table")
        assert readback(claim, sql_table.url, *args, "--allow-view", view) == 0
        item = last_evidence(claim)
        assert item["details"]["views"] == [view]
        assert item["observed_value"] == {"zip": "94107"}
        assert verdict_of(claim) == "verified"
        query = f"SELECT v.zip FROM {view} v JOIN {t} a ON a.id = v.id WHERE v.id = 4471"
        args = ["--query", query, "--expect", "zip=94107", "--allow-view", view]
        assert readback(claim, sql_table.url, *args) == 0
        assert last_evidence(claim)["details"]["views"] == [view]
    finally:
        sql_table.execute(f"DROP VIEW {view}", [])


def test_allow_view_names_a_table_the_readback_reads(
    claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--table", "accounts", "--key", "id=1", "--expect", "zip=1", "--allow-view", "acct"]
    assert readback(claim, "sqlite:///nowhere.db", *args) == 4
    err = capsys.readouterr().err
    assert "--allow-view acct: the readback reads no such table (it reads: accounts)" in err
    redis_args = ["--key", "k", "--expect", "a=1", "--allow-view", "k"]
    assert readback(claim, REDIS_URL, *redis_args) == 4
    assert "--allow-view goes with a SQL readback" in capsys.readouterr().err


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize("how", ["inherits", "partition of"])
def test_a_table_whose_children_are_tables_still_reads(
    postgres: Any, server_table: SqlTable, claim: Path, how: str
) -> None:
    """Control for attack 68: an inheritance child or a partition that is a table holds rows of
    the table every reader sees alike."""
    parent, child = unique("parent"), unique("child")
    if how == "inherits":
        postgres.execute(f"CREATE TABLE {parent} (id int PRIMARY KEY, zip text)")
        postgres.execute(f"CREATE TABLE {child} () INHERITS ({parent})")
    else:
        postgres.execute(f"CREATE TABLE {parent} (id int, zip text) PARTITION BY RANGE (id)")
        postgres.execute(
            f"CREATE TABLE {child} PARTITION OF {parent} FOR VALUES FROM (0) TO (10000)"
        )
    try:
        postgres.execute(f"INSERT INTO {child} VALUES (4474, '94107')")
        server_table.grant(parent)
        args = ["--table", parent, "--key", "id=4474", "--expect", "zip=94107"]
        assert readback(claim, server_table.url, *args) == 0
        assert verdict_of(claim) == "verified"
    finally:
        postgres.execute(f"DROP TABLE {parent} CASCADE")


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_a_name_with_its_schema_reads_that_table_whatever_else_shares_the_name(
    postgres: Any, server_table: SqlTable, postgres_reader: Reader, claim: Path
) -> None:
    """Control for attack 68: the name another schema also holds, written with its schema."""
    t, r = server_table.table, postgres_reader.name
    postgres.execute(f"CREATE SCHEMA {r}")
    try:
        postgres.execute(f"CREATE TABLE {r}.{t} (id int)")
        args = ["--key", "id=4471", "--expect", "zip=94107"]
        assert readback(claim, server_table.url, "--table", f"public.{t}", *args) == 0
        assert verdict_of(claim) == "verified"
        query = f"SELECT zip FROM public.{t} WHERE id = 4471"
        assert readback(claim, server_table.url, "--query", query, "--expect", "zip=94107") == 0
    finally:
        postgres.execute(f"DROP SCHEMA {r} CASCADE")


# --- Passwords ----------------------------------------------------------------------------


def assert_secret_nowhere(secret: str, claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    captured = capsys.readouterr()
    assert secret not in captured.out + captured.err
    assert secret not in claim.read_text()


def test_a_postgresql_password_never_leaks(
    postgres: Any, postgres_reader: Reader, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = unique("accounts")
    postgres.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, zip TEXT)")
    try:
        postgres.execute(f"INSERT INTO {table} VALUES (4471, '94107')")
        postgres_reader.grant(table)
        # Trust authentication accepts any password, so the observation succeeds.
        url = postgres_reader.url_with(f"{postgres_reader.name}:s3cret")
        args = ["--table", table, "--key", "id=4471", "--expect", "zip=94107"]
        assert readback(claim, url, *args) == 0
        shown = f"postgresql://{postgres_reader.name}:***@127.0.0.1"
        assert last_evidence(claim)["target"].startswith(shown)
        wrong_port = postgres_reader.url_with(f"{postgres_reader.name}:s3cret", closed_port())
        assert readback(claim, wrong_port, *args, "--record-failure") == 5
        unknown_role = "postgresql://nosuch:s3cret@127.0.0.1:5432/test"
        assert readback(claim, unknown_role, *args) == 5
        err = capsys.readouterr().err
        assert 'role "nosuch" does not exist' in err
        assert "s3cret" not in err
        query_password = f"postgresql://postgres@127.0.0.1:{closed_port()}/test?password=s3cret"
        assert readback(claim, query_password, *args, "--record-failure") == 5
        assert_secret_nowhere("s3cret", claim, capsys)
        assert verdict_of(claim) == "verified"  # the failed attempts record no observation
    finally:
        postgres.execute(f"DROP TABLE IF EXISTS {table}")


def test_a_mariadb_password_never_leaks(
    mariadb: Any, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user, table = unique("claim"), unique("accounts")
    with mariadb.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, zip VARCHAR(10))")
        cursor.execute(f"INSERT INTO {table} VALUES (4471, '94107')")
        cursor.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 's3cret'")
        cursor.execute(f"GRANT SELECT ON test.{table} TO '{user}'@'%'")
    try:
        args = ["--table", table, "--key", "id=4471", "--expect", "zip=94107"]
        assert readback(claim, f"mysql://{user}:s3cret@127.0.0.1:3306/test", *args) == 0
        assert last_evidence(claim)["target"].startswith(f"mysql://{user}:***@127.0.0.1")
        # A wrong password is refused by the server; neither password may appear.
        assert readback(claim, f"mysql://{user}:wr0ng@127.0.0.1:3306/test", *args) == 5
        err = capsys.readouterr().err
        assert "Access denied" in err
        assert "wr0ng" not in err
        wrong_port = f"mysql://{user}:s3cret@127.0.0.1:{closed_port()}/test"
        assert readback(claim, wrong_port, *args, "--record-failure") == 5
        assert_secret_nowhere("s3cret", claim, capsys)
        assert "wr0ng" not in claim.read_text()
    finally:
        with mariadb.cursor() as cursor:
            cursor.execute(f"DROP USER IF EXISTS '{user}'@'%'")
            cursor.execute(f"DROP TABLE IF EXISTS {table}")


def test_a_redis_password_never_leaks(
    redis_keys: RedisKeys, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user, key = unique("claim"), redis_keys.key("account:4471")
    redis_keys.client.hset(key, mapping={"zip": "94107"})
    redis_keys.client.acl_setuser(
        user,
        enabled=True,
        passwords=["+s3cret"],
        keys=[f"{redis_keys.prefix}*"],
        commands=["+type", "+hgetall", "+get", "+multi", "+exec"],
    )
    try:
        url = f"redis://{user}:s3cret@127.0.0.1:6379/0"
        assert readback(claim, url, "--key", key, "--expect", "zip=94107") == 0
        assert last_evidence(claim)["target"].startswith(f"redis://{user}:***@127.0.0.1")
        wrong = f"redis://{user}:wr0ng@127.0.0.1:6379/0"
        assert readback(claim, wrong, "--key", key, "--expect", "zip=94107") == 5
        wrong_port = f"redis://{user}:s3cret@127.0.0.1:{closed_port()}/0"
        assert (
            readback(claim, wrong_port, "--key", key, "--expect", "zip=94107", "--record-failure")
            == 5
        )
        assert_secret_nowhere("s3cret", claim, capsys)
    finally:
        redis_keys.client.acl_deluser(user)


def test_a_password_never_leaks_through_the_real_command(
    claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://postgres:s3cret@127.0.0.1:{closed_port()}/test"
    done = subprocess.run(
        [
            CLAIM,
            "observe",
            "readback",
            str(claim),
            url,
            "--table",
            "t",
            "--key",
            "id=1",
            "--expect",
            "zip=94107",
            "--record-failure",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 5
    assert done.stderr.startswith("claim: readback from postgresql://postgres:***@127.0.0.1:")
    assert "s3cret" not in done.stdout + done.stderr + claim.read_text()


# Secrets never stored (issue 7, item 9). The password's pieces are distinctive words, so that a
# piece a parser split off (at '#' or '?') is caught wherever it lands.
PIECES = ("pw-one", "pw-two", "pw-three")


def assert_pieces_nowhere(claim: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """No piece of the password in the claim, on stdout or on stderr; returns stderr."""
    captured = capsys.readouterr()
    for piece in PIECES:
        assert piece not in captured.out, captured.out
        assert piece not in captured.err, captured.err
        assert piece not in claim.read_text()
    return captured.err


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize(
    ("name", "password"),
    [("hash", "pw-one#pw-two"), ("both", "pw-one#pw-two?pw-three")],
)
def test_attack_09_hash_in_password_never_leaks(
    server_table: SqlTable,
    postgres_reader: Reader,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    password: str,
) -> None:
    """libpq reads an unencoded '#' (or '?') as part of the password; trust authentication
    accepts it, so the read succeeds, and the target shows the password as ***."""
    args = by_key(server_table, "id=4471", "zip=94107")
    url = postgres_reader.url_with(f"{postgres_reader.name}:{password}")
    assert readback(claim, url, *args) == 0
    target = last_evidence(claim)["target"]
    assert target.startswith(f"postgresql://{postgres_reader.name}:***@127.0.0.1:5432/test ")
    assert "recorded e1" in capsys.readouterr().out
    assert readback(claim, url, *args, "--print") == 0
    unreachable = postgres_reader.url_with(f"{postgres_reader.name}:{password}", closed_port())
    assert readback(claim, unreachable, *args, "--record-failure") == 5
    assert "pw-" not in last_evidence(claim)["details"]["error"]
    err = assert_pieces_nowhere(claim, capsys)
    assert err.startswith(f"claim: readback from postgresql://{postgres_reader.name}:***@")
    assert verdict_of(claim) == "verified"


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_attack_09_question_mark_in_password_never_leaks(
    server_table: SqlTable, postgres_reader: Reader, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = by_key(server_table, "id=4471", "zip=94107")
    url = postgres_reader.url_with(f"{postgres_reader.name}:pw-one?pw-two")
    assert readback(claim, url, *args) == 0
    assert last_evidence(claim)["target"].startswith(f"postgresql://{postgres_reader.name}:***@")
    unreachable = postgres_reader.url_with(f"{postgres_reader.name}:pw-one?pw-two", closed_port())
    assert readback(claim, unreachable, *args, "--record-failure") == 5
    assert_pieces_nowhere(claim, capsys)


@pytest.mark.parametrize("server_table", ["mariadb"], indirect=True)
@pytest.mark.parametrize("password", ["pw-one#pw-two", "pw-one?pw-two", "pw-one/pw-two"])
def test_attack_09_hash_or_question_mark_in_a_mariadb_password_is_refused_unshown(
    mariadb: Any,
    server_table: SqlTable,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    password: str,
) -> None:
    """urlsplit (which reads mysql:// URLs) would end the password at '#', '?' or '/' and read
    the rest as a fragment, query or path: the URL is refused, showing the scheme only."""
    before = claim.read_bytes()
    role = server_table.url.partition("://")[2].partition("@")[0]
    with mariadb.cursor() as cursor:
        cursor.execute(f"ALTER USER '{role}'@'%%' IDENTIFIED BY %s", [password])
    url = f"mysql://{role}:{password}@127.0.0.1:3306/test"
    args = [*by_key(server_table, "id=4471", "zip=94107"), "--record-failure"]
    assert readback(claim, url, *args) == 4
    err = assert_pieces_nowhere(claim, capsys)
    assert err.startswith("claim: URL 'mysql://***': percent-encode '#', '?', '/' and '@'")
    assert claim.read_bytes() == before
    # Control: the same password percent-encoded is read, and shown as ***.
    encoded = url.replace(password, quote(password, safe=""))
    assert readback(claim, encoded, *args) == 0
    assert last_evidence(claim)["target"].startswith(f"mysql://{role}:***@127.0.0.1:3306/test ")
    assert_pieces_nowhere(claim, capsys)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://{r}:pw-one@[::1/test",  # libpq quotes the whole URI in its error
        "postgresql://{r}:pw-one%zzpw-two@127.0.0.1:5432/test",  # bad percent-encoding
        "postgresql://{r}:pw-one@127.0.0.1:5432/test?pw-two=pw-three",  # unknown option
        "postgresql://{r}:pw-one@127.0.0.1:5432/test?api_key=pw-two",
        "postgresql://{r}:pw-one@pw-two@127.0.0.1:5432/test",  # two '@': read as host "pw-two@…"
        "redis://{r}:pw-one@[::1/0",
        "mysql://{r}:pw-one@127.0.0.1:pw-two/test",
    ],
)
def test_attack_09_malformed_uri_echoed_by_driver_is_never_shown(
    claim: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    before = claim.read_bytes()
    hostile = url.format(r="reader")
    args = ["--table", "t", "--key", "id=1", "--expect", "zip=1", "--record-failure"]
    if hostile.startswith("redis"):
        args = ["--key", "k", "--expect", "zip=1", "--record-failure"]
    code = readback(claim, hostile, *args)
    err = assert_pieces_nowhere(claim, capsys)
    scheme = hostile.partition("://")[0]
    assert code == 4, err
    assert err.startswith(f"claim: URL '{scheme}://***': "), err
    assert claim.read_bytes() == before


def test_attack_09_api_key_query_parameter_never_leaks(
    site: Site, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.records["4471"] = {"zip": "94107"}
    url = f"{site.url}/records/4471?api_key=pw-one&Access_Token=pw-two&page=1"
    assert readback(claim, url, "--expect", "zip=94107") == 0
    item = last_evidence(claim)
    assert item["target"] == f"{site.url}/records/4471?api_key=***&Access_Token=***&page=1"
    assert verdict_of(claim) == "verified"
    unreachable = f"http://127.0.0.1:{closed_port()}/records/4471?client_secret=pw-three"
    assert readback(claim, unreachable, "--expect", "zip=94107", "--record-failure") == 5
    err = assert_pieces_nowhere(claim, capsys)
    assert "client_secret=***" in err


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
def test_attack_09_libpq_secret_options_never_leak(
    server_table: SqlTable, postgres_reader: Reader, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """libpq's own secret options (password, sslpassword) are masked wherever they are written;
    the rest of the URI is shown as libpq read it."""
    url = f"{postgres_reader.url}?sslmode=disable&sslpassword=pw-one&password=pw-two"
    assert readback(claim, url, *by_key(server_table, "id=4471", "zip=94107")) == 0
    target = last_evidence(claim)["target"]
    assert target.startswith(
        f"postgresql://{postgres_reader.name}:***@127.0.0.1:5432/test?sslmode=disable"
        "&sslpassword=***"
    )
    assert_pieces_nowhere(claim, capsys)


# --- PostgreSQL and MariaDB value types ------------------------------------------------------


def test_postgresql_values_keep_their_types(
    postgres: Any, postgres_reader: Reader, claim: Path
) -> None:
    table = unique("typed")
    postgres.execute(
        f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, price NUMERIC(30,20), whole NUMERIC, "
        "at TIMESTAMPTZ, day DATE, raw BYTEA, doc JSONB, flag BOOLEAN, note TEXT, "
        "ratio DOUBLE PRECISION, span INTERVAL)"
    )
    try:
        postgres.execute(
            f"INSERT INTO {table} VALUES (1, 1.23456789012345678901, 94107, "
            "'2026-08-27 20:04:02+02', '2026-08-27', '\\x00ff', '{\"zip\": \"94107\", \"n\": 2}',"
            " true, NULL, 'NaN', '1 hour 30 seconds')"
        )
        postgres_reader.grant(table)
        expectations = {
            "price": "1.23456789012345678901",
            "whole": "94107",
            "at": "2026-08-27T18:04:02Z",
            "day": "2026-08-27",
            "raw": "base64:AP8=",
            "doc": '{"zip": "94107"}',
            "flag": "true",
            "note": "null",
            "ratio": "NaN",
            "span": "3630",
        }
        args = ["--table", table, "--key", "id=1"]
        for field_name, value in expectations.items():
            args += ["--expect", f"{field_name}={value}"]
        assert readback(claim, postgres_reader.url, *args) == 0
        item = last_evidence(claim)
        assert item["observed_value"] == {
            "price": "1.23456789012345678901",
            "whole": 94107,
            "at": "2026-08-27T18:04:02Z",
            "day": "2026-08-27",
            "raw": "base64:AP8=",
            "doc": {"zip": "94107", "n": 2},
            "flag": True,
            "note": None,
            "ratio": "NaN",
            "span": 3630,
        }
        assert verdict_of(claim) == "verified"
    finally:
        postgres.execute(f"DROP TABLE IF EXISTS {table}")


def test_postgresql_statement_timeout(
    postgres_reader: Reader, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = "SELECT count(*) AS n FROM generate_series(1, 1000000000) AS g(i)"
    args = ["--query", slow, "--expect", "n=0", "--timeout", "0.5"]
    assert readback(claim, postgres_reader.url, *args) == 5
    assert "statement timeout" in capsys.readouterr().err


def test_mariadb_values_keep_their_types(mariadb: Any, mariadb_reader: Reader, claim: Path) -> None:
    table = unique("typed")
    with mariadb.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, price DECIMAL(10,2), at DATETIME, "
            "span TIME, raw BLOB, active TINYINT(1), note VARCHAR(10))"
        )
        cursor.execute(
            f"INSERT INTO {table} VALUES (1, 12.50, '2026-08-27 18:04:02', '01:00:30', "
            "x'00ff', 1, NULL)"
        )
    mariadb_reader.grant(table)
    try:
        args = [
            "--table",
            table,
            "--key",
            "id=1",
            "--expect",
            "price=12.5",
            "--expect",
            "at=2026-08-27T18:04:02",
            "--expect",
            "span=3630",
            "--expect",
            "raw=base64:AP8=",
            "--expect",
            "active=1",
            "--expect",
            "note=null",
        ]
        assert readback(claim, mariadb_reader.url, *args) == 0
        assert last_evidence(claim)["observed_value"] == {
            "price": 12.5,
            "at": "2026-08-27T18:04:02",
            "span": 3630,
            "raw": "base64:AP8=",
            "active": 1,
            "note": None,
        }
        assert verdict_of(claim) == "verified"
    finally:
        with mariadb.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")


def test_an_sqlite_query_past_the_timeout_is_interrupted(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "empty.db"
    sqlite3.connect(store).close()
    endless = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) AS m FROM c"
    )
    args = ["--query", endless, "--expect", "m=1", "--timeout", "0.3"]
    assert readback(claim, f"sqlite:///{store}", *args) == 5
    assert "no result within 0.3s" in capsys.readouterr().err


def test_an_sqlite_file_that_does_not_exist_is_not_created(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    args = ["--table", "t", "--key", "id=1", "--expect", "zip=94107"]
    assert readback(claim, f"sqlite:///{missing}", *args) == 5
    assert "unable to open database file" in capsys.readouterr().err
    assert not missing.exists()


# --- Redis -------------------------------------------------------------------------------


def test_a_redis_hash_matches_as_text(redis_keys: RedisKeys, claim: Path) -> None:
    key = redis_keys.key("account:4471")
    redis_keys.client.hset(key, mapping={"zip": "94107", "visits": "5"})
    args = ["--key", key, "--expect", "zip=94107", "--expect", "visits=5"]
    assert readback(claim, REDIS_URL, *args) == 0
    item = last_evidence(claim)
    # A hash field is text in Redis, so the unquoted 5 is the text "5".
    assert item["observed_value"] == item["expected"] == {"zip": "94107", "visits": "5"}
    assert item["target"] == f"{REDIS_URL} key {key}"
    assert item["subject"] == sha256_digest(canonical_json({"zip": "94107", "visits": "5"}))
    assert verdict_of(claim) == "verified"


def test_a_redis_json_string_keeps_json_types(redis_keys: RedisKeys, claim: Path) -> None:
    key = redis_keys.key("account:4471")
    redis_keys.client.set(key, json.dumps({"zip": "94107", "visits": 5, "vip": False}))
    args = ["--key", key, "--expect", "visits=5", "--expect", "vip=false"]
    assert readback(claim, REDIS_URL, *args) == 0
    assert last_evidence(claim)["observed_value"] == {"visits": 5, "vip": False}
    assert verdict_of(claim) == "verified"


def test_a_contradicting_redis_record_refutes(redis_keys: RedisKeys, claim: Path) -> None:
    key = redis_keys.key("account:4471")
    redis_keys.client.hset(key, mapping={"zip": "10001"})
    assert readback(claim, REDIS_URL, "--key", key, "--expect", "zip=94107") == 0
    assert last_evidence(claim)["observed_value"] == {"zip": "10001"}
    assert verdict_of(claim) == "refuted"


def test_a_missing_redis_key_is_an_absent_record(redis_keys: RedisKeys, claim: Path) -> None:
    key = redis_keys.key("account:missing")
    assert readback(claim, REDIS_URL, "--key", key, "--expect", "zip=94107") == 0
    assert last_evidence(claim)["observed_value"] is None
    assert verdict_of(claim) == "refuted"


@pytest.mark.parametrize(
    ("kind", "message"),
    [("list", "holds a list; a readback reads a hash"), ("text", "not a JSON object")],
)
def test_a_redis_value_that_is_not_a_record_fails(
    redis_keys: RedisKeys,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    message: str,
) -> None:
    key = redis_keys.key("account:4471")
    if kind == "list":
        redis_keys.client.rpush(key, "94107")
    else:
        redis_keys.client.set(key, "94107")
    assert readback(claim, REDIS_URL, "--key", key, "--expect", "zip=94107") == 5
    assert message in capsys.readouterr().err
    assert verdict_of(claim) == "unverified"


def test_a_field_a_redis_record_lacks_is_an_observer_error(
    redis_keys: RedisKeys, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = redis_keys.key("account:4471")
    redis_keys.client.hset(key, mapping={"zip": "94107", "visits": "5"})
    assert readback(claim, REDIS_URL, "--key", key, "--expect", "zp=94107") == 5
    assert "--expect zp: no such field in the record (fields: zip, visits)" in (
        capsys.readouterr().err
    )
    assert verdict_of(claim) == "unverified"


def test_a_redis_key_is_sent_as_one_argument(redis_keys: RedisKeys, claim: Path) -> None:
    other = redis_keys.key("other")
    redis_keys.client.set(other, "keep")
    for hostile in (f"x\r\nDEL {other}\r\n", redis_keys.key("*"), f"x DEL {other}"):
        assert readback(claim, REDIS_URL, "--key", hostile, "--expect", "zip=94107") == 0
        assert last_evidence(claim)["observed_value"] is None
    assert redis_keys.client.get(other) == b"keep"


def test_a_redis_write_cannot_be_asked_for(
    redis_keys: RedisKeys, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = redis_keys.key("account:4471")
    redis_keys.client.set(key, "keep")
    args = ["--key", key, "--query", f"SET {key} changed", "--expect", "zip=94107"]
    assert readback(claim, REDIS_URL, *args) == 4
    assert "--key REDIS_KEY only" in capsys.readouterr().err
    assert redis_keys.client.get(key) == b"keep"


def test_redis_unreachable_fails(claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    assert readback(claim, url, "--key", "k", "--expect", "zip=94107", "--timeout", "2") == 5
    assert "Connection refused" in capsys.readouterr().err


# --- HTTP JSON resources -----------------------------------------------------------------


def test_an_http_record_matches(site: Site, claim: Path) -> None:
    site.records["4471"] = {"id": 4471, "zip": "94107", "zip_n": 94107}
    args = ["--expect", "zip=94107", "--expect", "zip_n=94107"]
    assert readback(claim, f"{site.url}/records/4471", *args) == 0
    item = last_evidence(claim)
    assert item["observed_value"] == {"zip": "94107", "zip_n": 94107}
    assert item["target"] == f"{site.url}/records/4471"
    assert verdict_of(claim) == "verified"


def test_an_http_record_that_contradicts_refutes(site: Site, claim: Path) -> None:
    site.records["4471"] = {"zip": "10001"}
    assert readback(claim, f"{site.url}/records/4471", "--expect", "zip=94107") == 0
    assert verdict_of(claim) == "refuted"


def test_a_field_an_http_record_lacks_is_an_observer_error(
    site: Site, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.records["4471"] = {"zip": "94107"}
    assert readback(claim, f"{site.url}/records/4471", "--expect", "zp=94107") == 5
    assert "--expect zp: no such field in the record (fields: zip)" in capsys.readouterr().err
    assert verdict_of(claim) == "unverified"


def test_an_http_404_is_an_absent_record(site: Site, claim: Path) -> None:
    assert readback(claim, f"{site.url}/records/9999", "--expect", "zip=94107") == 0
    assert last_evidence(claim)["observed_value"] is None
    assert verdict_of(claim) == "refuted"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("broken", "HTTP 500"),
        ("moved", "HTTP 301 to /records/4471"),
        ("list", "not a JSON object"),
        ("text", "not a JSON object"),
    ],
)
def test_an_http_resource_that_is_not_a_record_fails(
    site: Site, claim: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    assert readback(claim, f"{site.url}/records/{name}", "--expect", "zip=94107") == 5
    assert message in capsys.readouterr().err
    assert verdict_of(claim) == "unverified"


def test_an_http_readback_takes_no_table_or_key(
    site: Site, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--key", "id=1", "--expect", "zip=94107"]
    assert readback(claim, f"{site.url}/records/4471", *args) == 4
    assert "reads the URL itself" in capsys.readouterr().err
    assert site.requests == 0


def test_an_unsupported_url_is_a_usage_error(
    claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert readback(claim, "mongodb://u:s3cret@h/db", "--key", "k", "--expect", "a=1") == 4
    err = capsys.readouterr().err
    assert "expected postgresql://" in err
    assert "s3cret" not in err


def test_a_readback_through_the_real_command(tmp_path: Path, claim: Path) -> None:
    store = tmp_path / "accounts.db"
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, zip TEXT)")
        conn.execute("INSERT INTO accounts VALUES (4471, '94107')")
    conn.close()
    done = subprocess.run(
        [
            CLAIM,
            "observe",
            "readback",
            str(claim),
            f"sqlite:///{store}",
            "--table",
            "accounts",
            "--key",
            "id=4471",
            "--expect",
            "zip=94107",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("recorded e1: state_readback sqlite:///")
    verified = subprocess.run(
        [CLAIM, "verify", str(claim)], capture_output=True, text=True, timeout=60, check=False
    )
    assert verified.returncode == 0, verified.stdout


# --- value rules (pure) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "observed", "expected"),
    [
        ("94107", 94107, 94107),
        ("94107", "94107", "94107"),
        ('"94107"', 94107, "94107"),
        ('"94107"', "94107", "94107"),
        ("true", "true", "true"),
        ("true", True, True),
        ("null", None, None),
        ("abc", None, "abc"),
        ("abc", 5, "abc"),
        ("1.50", 1.5, 1.5),
        ('{"a": 1}', {"a": 1, "b": 2}, {"a": 1}),
        ("94107", ABSENT, 94107),
        ("x=y", ABSENT, "x=y"),
        ("", ABSENT, ""),
        ("NaN", ABSENT, "NaN"),
    ],
)
def test_an_unquoted_value_takes_the_observed_type(text: str, observed: Any, expected: Any) -> None:
    result = expected_value(text, observed)
    assert (result, type(result)) == (expected, type(expected))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("12.50"), 12.5),
        (Decimal("94107"), 94107),
        (Decimal("0.1"), 0.1),
        (Decimal("12345678901234567.891"), "12345678901234567.891"),
        (Decimal("NaN"), "NaN"),
        (float("-inf"), "-Infinity"),
        (
            datetime(2026, 8, 27, 20, 4, 2, tzinfo=timezone(timedelta(hours=2))),
            "2026-08-27T18:04:02Z",
        ),
        (datetime(2026, 8, 27, 18, 4, 2, 500, tzinfo=UTC), "2026-08-27T18:04:02.000500Z"),
        (datetime(2026, 8, 27, 18, 4, 2), "2026-08-27T18:04:02"),
        (date(2026, 8, 27), "2026-08-27"),
        (time(18, 4), "18:04:00"),
        (timedelta(seconds=1.5), 1.5),
        (b"\x00\xff", "base64:AP8="),
        (memoryview(b"ab"), "base64:YWI="),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        ([Decimal("1"), None], [1, None]),
        (True, True),
    ],
)
def test_store_values_as_json(value: Any, expected: Any) -> None:
    result = to_json(value)
    assert (result, type(result)) == (expected, type(expected))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://postgres:s3cret@127.0.0.1:5432/test",
            "postgresql://postgres:***@127.0.0.1:5432/test",
        ),
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        (
            # Rebuilt from libpq's parameters: the password is the password wherever written.
            "postgresql://u@h/db?sslmode=require&password=s3cret",
            "postgresql://u:***@h/db?sslmode=require",
        ),
        ("mysql://root@127.0.0.1/test", "mysql://root@127.0.0.1/test"),
        ("sqlite:////tmp/a.db", "sqlite:////tmp/a.db"),
        ("https://u:p%40ss@h/x", "https://u:***@h/x"),
    ],
)
def test_urls_are_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    ("dialect", "query", "translated"),
    [
        (
            "postgresql",
            "SELECT a::text, ':x', \":y\", $$:z$$, $q$ :w $q$ FROM t -- :c\nWHERE b = :b",
            "SELECT a::text, ':x', \":y\", $$:z$$, $q$ :w $q$ FROM t -- :c\nWHERE b = %(b)s",
        ),
        (
            "postgresql",
            "SELECT '50%' WHERE b LIKE :b /* :c % */",
            "SELECT '50%%' WHERE b LIKE %(b)s /* :c %% */",
        ),
        (
            "mariadb",
            "SELECT 'it\\':s', `:t` # :c\nFROM t WHERE b=:b",
            "SELECT 'it\\':s', `:t` # :c\nFROM t WHERE b=%(b)s",
        ),
        ("sqlite", "SELECT '%', [:x] FROM t WHERE b = :b", "SELECT '%', [:x] FROM t WHERE b = :b"),
    ],
)
def test_named_parameters_are_translated_outside_literals(
    dialect: str, query: str, translated: str
) -> None:
    assert translate_query(query, dialect, {"b": "1"}) == translated


def test_a_parameter_used_twice_needs_one_value() -> None:
    assert translate_query("SELECT :b, :b", "postgresql", {"b": "1"}) == "SELECT %(b)s, %(b)s"
    with pytest.raises(UsageError, match="no --param c"):
        translate_query("SELECT :b, :c", "postgresql", {"b": "1"})


READER_GRANTS = [
    "GRANT USAGE ON *.* TO `reader`@`%`",
    "GRANT SELECT, SHOW VIEW ON `test`.* TO `reader`@`%`",
    "GRANT SELECT ON `test`.`accounts` TO `reader`@`%`",
    "GRANT EXECUTE, ALTER ROUTINE ON FUNCTION `test`.`f` TO `reader`@`%`",
    "GRANT `some_role` TO `reader`@`%`",
    "GRANT INSERT ON `other`.* TO `reader`@`%`",
    "GRANT UPDATE ON `test`.`other_table` TO `reader`@`%`",
    "SET DEFAULT ROLE `some_role` FOR `reader`@`%`",
]


@pytest.mark.parametrize(
    ("grant", "found"),
    [
        (None, []),
        ("GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION", ["ALL PRIVILEGES on *.*"]),
        ("GRANT FILE, SELECT ON *.* TO `reader`@`%`", ["FILE on *.*"]),
        ("GRANT DELETE ON `te_t`.* TO `reader`@`%`", ["DELETE on `te_t`.*"]),  # _ is a wildcard
        ("GRANT DELETE ON `te\\_t`.* TO `reader`@`%`", []),  # an escaped _ is not
        ("GRANT DROP ON `t%`.* TO `some_role`", ["DROP on `t%`.*"]),
        ("GRANT SELECT, UPDATE (`zip`, `a,b`) ON `test`.`ACCOUNTS` TO PUBLIC", ["UPDATE on"]),
        ("GRANT PROXY ON ``@`%` TO `reader`@`%`", ["PROXY on ``@`%`"]),
        ("GRANT DELETE HISTORY ON `test`.`accounts` TO `reader`@`%`", ["DELETE HISTORY on"]),
    ],
)
def test_mariadb_grants_beyond_reading_are_found(grant: str | None, found: list[str]) -> None:
    grants = READER_GRANTS + ([grant] if grant else [])
    privileges = readback_sql.mariadb_privileges(grants, "test", (("accounts",),))
    assert len(privileges) == len(found)
    for privilege, fragment in zip(privileges, found, strict=True):
        assert privilege.startswith("holds " + fragment)


def test_mariadb_grants_apply_to_the_schema_a_table_names() -> None:
    grants = ["GRANT INSERT ON `shop`.* TO `reader`@`%`"]
    assert readback_sql.mariadb_privileges(grants, "test", (("accounts",),)) == []
    assert readback_sql.mariadb_privileges(grants, "test", (("shop", "accounts"),)) == [
        "holds INSERT on `shop`.*"
    ]
    assert readback_sql.mariadb_privileges(grants, "shop", (("accounts",),)) == [
        "holds INSERT on `shop`.*"
    ]


@pytest.mark.parametrize(
    ("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_an_unreachable_service_fails_only_under_ci(
    monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="PostgreSQL is not reachable"):
        service_unavailable("PostgreSQL", ConnectionRefusedError("refused"))
