"""Which ``--query`` text a readback runs: the parser's rule, store by store (pure; the real
servers' side of it is in test_readback.py)."""

from __future__ import annotations

import re

import pytest

from completion_claim.errors import UsageError
from completion_claim.observe.readback_query import plain_select_tables

STORES = ("postgresql", "mariadb", "sqlite")


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize(
    ("query", "tables"),
    [
        ("SELECT zip FROM accounts WHERE id = :id", [("accounts",)]),
        ("SELECT a.zip FROM shop.accounts AS a JOIN owners o ON o.id = a.owner", None),
        ("WITH one AS (SELECT id FROM accounts) SELECT id FROM one", [("accounts",)]),
        ("SELECT 1 AS x UNION ALL SELECT 2 AS x", []),
        ("SELECT COUNT(*) AS n, MAX(zip) AS z FROM accounts;", [("accounts",)]),
        ("SELECT (SELECT zip FROM accounts WHERE id = 1) AS zip", [("accounts",)]),
    ],
)
def test_a_plain_select_is_accepted_with_the_tables_it_reads(
    store: str, query: str, tables: list[tuple[str, ...]] | None
) -> None:
    if tables is None:
        tables = [("shop", "accounts"), ("owners",)]
    assert list(plain_select_tables(query, store)) == tables


def test_postgresql_folds_unquoted_names_and_keeps_quoted_ones() -> None:
    query = 'SELECT * FROM Shop."Accounts" JOIN Owners ON true'
    assert plain_select_tables(query, "postgresql") == (("shop", "Accounts"), ("owners",))
    assert plain_select_tables(query.replace('"', "`"), "mariadb") == (
        ("Shop", "Accounts"),
        ("Owners",),
    )


@pytest.mark.parametrize(
    ("store", "query", "message"),
    [
        ("postgresql", "COPY (SELECT 1) TO PROGRAM 'id'", "--query: COPY is not a plain SELECT"),
        ("postgresql", "SELECT 1 AS a FOR NO KEY UPDATE", "a locking clause"),
        ("postgresql", "SELECT 1 AS a FOR KEY SHARE", "a locking clause"),
        ("postgresql", "SELECT * INTO t2 FROM t", "SELECT ... INTO is not a plain SELECT"),
        (
            "postgresql",
            "WITH x AS (UPDATE t SET a = 1 RETURNING a) SELECT a FROM x",
            "UPDATE is not a plain SELECT",
        ),
        (
            "postgresql",
            "WITH x AS (INSERT INTO t VALUES (1) RETURNING a) SELECT a FROM x",
            "INSERT is not a plain SELECT",
        ),
        ("postgresql", "EXPLAIN ANALYZE DELETE FROM t", "EXPLAIN is not a plain SELECT"),
        ("postgresql", "VALUES (1)", "VALUES is not a plain SELECT"),
        ("postgresql", "SELECT 1; SELECT 2", "--query: 2 statements; a readback runs one SELECT"),
        ("postgresql", "", "--query: 0 statements"),
        ("postgresql", "SELECT (1", "not a statement the PostgreSQL parser understands"),
        ("postgresql", "SELECT 1 /* a comment */", "comments are not allowed"),
        ("postgresql", "SELECT pg_catalog.pg_read_file('x')", "function pg_read_file is not"),
        ("postgresql", "SELECT * FROM pg_ls_dir('/') AS d", "function pg_ls_dir is not"),
        ("postgresql", "SELECT lo_export(1, '/tmp/x')", "function lo_export is not"),
        ("postgresql", "SELECT dblink('x', 'y')", "function dblink is not"),
        ("postgresql", "SELECT pg_try_advisory_lock(1)", "function pg_try_advisory_lock"),
        ("postgresql", "SELECT currval('s')", "function currval is not"),
        ("postgresql", "SELECT pg_terminate_backend(1)", "function pg_terminate_backend"),
        ("postgresql", "SELECT cursor_to_xml('c', 1, true, true, '')", "cursor_to_xml"),
        ("mariadb", "SELECT 1 INTO @x", "SELECT ... INTO is not a plain SELECT"),
        ("mariadb", "SELECT 1 INTO OUTFILE '/tmp/f'", "MariaDB parser understands"),
        ("mariadb", "SELECT 1 LOCK IN SHARE MODE", "MariaDB parser understands"),
        ("mariadb", "SET GLOBAL general_log = 1", "SET is not a plain SELECT"),
        ("mariadb", "FLUSH PRIVILEGES", "FLUSH is not a plain SELECT"),
        ("mariadb", "KILL QUERY 5", "KILL is not a plain SELECT"),
        ("mariadb", "SELECT 1 # comment", "comments are not allowed"),
        ("mariadb", "SELECT 1 /*M! , SLEEP(9) */", "comments are not allowed"),
        ("mariadb", "SELECT release_lock('a')", "function release_lock is not"),
        ("mariadb", "SELECT master_pos_wait('f', 1)", "function master_pos_wait is not"),
        ("mariadb", "SELECT sys_exec('id')", "function sys_exec is not"),
        ("sqlite", "ATTACH 'other.db' AS o", "ATTACH is not a plain SELECT"),
        ("sqlite", "PRAGMA query_only = 0", "PRAGMA is not a plain SELECT"),
        ("sqlite", "SELECT writefile('/tmp/x', 'y')", "function writefile is not"),
        ("sqlite", "SELECT fts3_tokenizer('simple')", "function fts3_tokenizer is not"),
    ],
)
def test_anything_but_a_plain_select_is_refused_in_one_line(
    store: str, query: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as refused:
        plain_select_tables(query, store)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("store", STORES)
def test_a_denied_name_is_denied_on_every_store(store: str) -> None:
    with pytest.raises(UsageError, match="function load_file is not allowed"):
        plain_select_tables("SELECT LOAD_FILE('/etc/hostname') AS x", store)


@pytest.mark.parametrize("store", STORES)
def test_a_function_that_only_computes_is_allowed(store: str) -> None:
    """pg_sleep and SLEEP are allowed: the statement timeout bounds them."""
    sleep = {"postgresql": "pg_sleep(0)", "mariadb": "SLEEP(0)", "sqlite": "abs(-1)"}[store]
    assert plain_select_tables(f"SELECT UPPER('a') AS u, {sleep} AS s", store) == ()
