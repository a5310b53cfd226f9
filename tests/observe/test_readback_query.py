"""Which ``--query`` text a readback runs: the parser's rule, store by store (pure; the real
servers' side of it is in test_readback.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from completion_claim.errors import UsageError
from completion_claim.observe.readback_query import ALLOWED_FUNCTIONS, check_query

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
    assert list(check_query(query, store).tables) == tables


def test_postgresql_folds_unquoted_names_and_keeps_quoted_ones() -> None:
    query = 'SELECT * FROM Shop."Accounts" JOIN Owners ON true'
    assert check_query(query, "postgresql").tables == (("shop", "Accounts"), ("owners",))
    assert check_query(query.replace('"', "`"), "mariadb").tables == (
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
        (
            "postgresql",
            "SELECT pg_catalog.pg_read_file('x')",
            "function pg_catalog.pg_read_file is not",
        ),
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
        check_query(query, store)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("store", STORES)
def test_a_function_off_the_allow_list_is_refused_on_every_store(store: str) -> None:
    with pytest.raises(UsageError, match="function load_file is not allowed"):
        check_query("SELECT LOAD_FILE('/etc/hostname') AS x", store)


@pytest.mark.parametrize("store", STORES)
def test_a_function_that_only_computes_is_allowed(store: str) -> None:
    query = "SELECT UPPER('a') AS u, COALESCE(NULL, 1) AS c, ABS(-1) AS a, COUNT(*) AS n"
    checked = check_query(query, store)
    assert checked.tables == ()
    assert checked.functions == ("upper", "coalesce", "abs", "count")


def test_sleeping_is_not_computing() -> None:
    """The allow-list has no sleep: a readback has nothing to wait for."""
    for store, sleep in [("postgresql", "pg_sleep(1)"), ("mariadb", "SLEEP(1)")]:
        with pytest.raises(UsageError, match="is not allowed"):
            check_query(f"SELECT {sleep} AS s", store)
        assert "sleep" not in ALLOWED_FUNCTIONS[store]


# --- Attack 45: functions by allow-list, names read as the server reads them ---------------

FINDING_45 = [
    ("SELECT U&\"\\0070g_read_file\"('/etc/hostname') AS f", "pg_read_file"),
    ("SELECT * FROM ts_stat('SELECT to_tsvector(zip) FROM accounts') AS s", "ts_stat"),
    ("SELECT pg_stat_reset() AS x", "pg_stat_reset"),
    ("SELECT pg_backup_start('x') AS x", "pg_backup_start"),
    ("SELECT pg_wal_replay_pause() AS x", "pg_wal_replay_pause"),
    ("SELECT database_to_xml(true, true, '') AS x", "database_to_xml"),
    ("SELECT table_to_xml('accounts', true, true, '') AS x", "table_to_xml"),
    ("SELECT current_setting('data_directory') AS x", "current_setting"),
]


@pytest.mark.parametrize(("query", "function"), FINDING_45)
def test_attack_45_each_function_of_the_finding_is_refused_by_name(
    query: str, function: str
) -> None:
    with pytest.raises(UsageError) as refused:
        check_query(query, "postgresql")
    assert str(refused.value) == (
        f"--query: function {function} is not allowed (allowed: see docs/spec.md, section 7.3)"
    )


@pytest.mark.parametrize(
    ("store", "query", "message"),
    [
        # Identifiers as the server reads them: escapes, quoting, case, schemas.
        ("postgresql", "SELECT U&\"!0070g_ls_dir\" UESCAPE '!' ('.')", "not a statement the"),
        ("postgresql", 'SELECT U&"lower"(zip) FROM accounts', 'U&"..." identifiers are not'),
        ("postgresql", 'SELECT "LOWER"(zip) FROM accounts', "function LOWER is not allowed"),
        ("postgresql", "SELECT \"pg_read_file\" ('x')", "function pg_read_file is not"),
        ("postgresql", "SELECT public.lower(zip) FROM accounts", "function public.lower is not"),
        ("postgresql", 'SELECT "public"."lower"(zip) FROM t', "function public.lower is not"),
        ("postgresql", "SELECT db.pg_catalog.lower('a')", "function db.pg_catalog.lower is not"),
        ("postgresql", "SELECT \"pg_catalog\".pg_ls_dir('.')", "function pg_catalog.pg_ls_dir"),
        ("postgresql", "SELECT pg_réad_file('x')", "function pg_réad_file is not"),
        # Functions in FROM, and what calls functions without looking like a call.
        ("postgresql", "SELECT * FROM pg_ls_dir('.') AS d", "function pg_ls_dir"),
        (
            "postgresql",
            "SELECT * FROM ROWS FROM (unnest('{1}'::int[]), pg_ls_dir('.')) r",
            "pg_ls_dir",
        ),
        ("postgresql", "SELECT * FROM accounts, LATERAL pg_ls_dir('.') d", "pg_ls_dir"),
        ("postgresql", "SELECT query_to_xml('SELECT 1', true, true, '')", "query_to_xml"),
        ("postgresql", "SELECT 1 OPERATOR(public.+) 2", "OPERATOR(...) is not allowed"),
        ("postgresql", "SELECT '<a/>'::xml", "a cast to xml is not allowed"),
        ("postgresql", "SELECT CAST('x' AS public.checked) AS x", "a cast to public.checked"),
        ("postgresql", "SELECT 'x'::regclass", "a cast to regclass is not allowed"),
        ("postgresql", "SELECT zip(accounts) FROM accounts", "function zip is not allowed"),
        ("postgresql", "SELECT x FROM accounts WHERE like('a')", "not a statement"),
        (
            "mariadb",
            "SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a INT PATH '$')) AS j",
            "json_table",
        ),
        # Literals that could hide a call from a parser that ends them elsewhere.
        ("postgresql", "SELECT E'\\'' AS a, pg_read_file('x') AS b", "function pg_read_file"),
        (
            "postgresql",
            "SELECT $a$ ' $a$ AS a, pg_read_file('x') AS b, ' '",
            "function pg_read_file",
        ),
        ("postgresql", "SELECT $$ ' $$ AS a, pg_ls_dir('.') AS b", "function pg_ls_dir"),
        ("mariadb", "SELECT 'a\\'' AS a, load_file('x') AS b", "function load_file"),
        ("mariadb", 'SELECT "a\\"" AS a, load_file(\'x\') AS b', "function load_file"),
        ("mariadb", "SELECT 1--1, load_file('x') AS b", "function load_file"),
        ("postgresql", "SELECT xmlparse(document '<a/>')", "not a statement the PostgreSQL"),
        ("mariadb", "VALUES (1)", "VALUES is not a plain SELECT"),
        ("mariadb", "SELECT 1 AS x PROCEDURE ANALYSE()", "not a statement the MariaDB parser"),
        ("mariadb", "SELECT test.sum(zip_n) FROM accounts", "function test.sum is not allowed"),
        ("mariadb", "SELECT BENCHMARK(9, 1)", "function benchmark is not allowed"),
        ("mariadb", "SELECT array(1)", "function array is not allowed"),
        ("sqlite", "SELECT * FROM pragma_table_info('accounts')", "function pragma_table_info"),
        ("sqlite", "SELECT name FROM pragma_function_list", None),
        ("sqlite", "SELECT main.lower('a')", "function main.lower is not allowed"),
        ("sqlite", "SELECT [load_extension]('x')", "function load_extension is not"),
        ("sqlite", "SELECT randomblob(9)", "function randomblob is not allowed"),
    ],
)
def test_attack_45_names_are_read_as_the_server_reads_them(
    store: str, query: str, message: str | None
) -> None:
    if message is None:
        # A table, as far as the parser knows: the role reads it or not (the SQLite file is
        # opened read-only, and SQLite's pragma tables only describe it).
        assert check_query(query, store).tables == (("pragma_function_list",),)
        return
    with pytest.raises(UsageError, match=re.escape(message)) as refused:
        check_query(query, store)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("store", "query", "functions"),
    [
        (
            "postgresql",
            "SELECT a.zip, lower(a.code) AS c, coalesce(o.name, 'x') AS n, count(*) AS k,"
            " a.doc->>'state' AS s, date_trunc('day', a.at) AS d, pg_catalog.upper(a.zip) AS u,"
            ' "lower"(a.zip) AS l, a.zip::varchar(10) AS v, CAST(a.amount AS numeric(10, 2)) AS m,'
            " row_number() OVER (ORDER BY a.id) AS r, array_agg(a.id) FILTER (WHERE a.id > 1) AS f"
            " FROM accounts a JOIN owners o ON o.id = a.owner"
            " WHERE a.zip LIKE ('9%') AND a.id IN (1, 2) AND EXISTS (SELECT 1)"
            " GROUP BY a.zip, a.code, o.name, a.doc, a.at, a.amount, a.id",
            {"lower", "coalesce", "count", "date_trunc", "upper", "row_number", "array_agg"},
        ),
        (
            "postgresql",
            "SELECT n FROM generate_series(1, 3) AS g(n) CROSS JOIN LATERAL unnest(ARRAY[n]) u",
            {"generate_series", "unnest"},
        ),
        ("postgresql", "WITH c(a) AS (SELECT 1) SELECT a FROM c", set()),
        ("postgresql", "TABLE accounts", set()),
        (
            "mariadb",
            "SELECT LOWER(zip) AS z, IFNULL(code, 'x') AS c, COUNT(*) AS n,"
            " JSON_UNQUOTE(JSON_EXTRACT(doc, '$.state')) AS s, DATE_FORMAT(at, '%Y') AS y,"
            " CAST(zip AS CHAR(10)) AS v FROM accounts WHERE zip LIKE '9%' GROUP BY zip, code",
            {"lower", "ifnull", "count", "json_unquote", "json_extract", "date_format"},
        ),
        (
            "sqlite",
            "SELECT lower(zip) AS z, [upper](code) AS u, json_extract(doc, '$.state') AS s,"
            " doc ->> '$.state' AS t, strftime('%Y', at) AS y, count(*) AS n"
            " FROM accounts, json_each(accounts.doc) GROUP BY zip",
            {"lower", "upper", "json_extract", "strftime", "count", "json_each"},
        ),
    ],
)
def test_attack_45_ordinary_queries_pass_the_allow_list(
    store: str, query: str, functions: set[str]
) -> None:
    assert set(check_query(query, store).functions) - _DOTTED == functions


def test_postgresql_row_dot_name_is_a_name_the_server_may_call() -> None:
    query = "SELECT (a).state, a.zip FROM accounts a"
    assert check_query(query, "postgresql").functions == ("state", "zip")
    assert check_query(query.replace("(a)", "a"), "mariadb").functions == ()


_DOTTED = {"zip", "code", "name", "doc", "at", "amount", "id", "owner"}  # a.zip may call zip(a)


# --- Attack 57: MariaDB's stored function of a built-in's name -----------------------------


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT `sum`(zip_n) AS n FROM accounts", "function `sum`: a quoted name"),
        ("SELECT `LOWER`(zip) AS n FROM accounts", "function `lower`: a quoted name"),
        ("SELECT sum (zip_n) AS n FROM accounts", "function sum: a space before"),
        ("SELECT count\t(*) AS n FROM accounts", "function count: a space before"),
    ],
)
def test_attack_57_a_spelling_that_calls_a_stored_function_is_refused(
    query: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        check_query(query, "mariadb")
    # SQLite has no stored functions: the same spelling calls its built-in.
    check_query(query, "sqlite")


def test_the_spec_lists_each_store_s_allow_list() -> None:
    spec = (Path(__file__).parents[2] / "docs" / "spec.md").read_text(encoding="utf-8")
    for store, name in [("postgresql", "PostgreSQL"), ("mariadb", "MariaDB"), ("sqlite", "SQLite")]:
        row = re.search(rf"^  \| {name} \| (.*) \|$", spec, re.M)
        assert row is not None, name
        assert row[1].split(", ") == [f"`{n}`" for n in sorted(ALLOWED_FUNCTIONS[store])]
