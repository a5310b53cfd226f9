"""A readback reads the row, in a session the table's owner cannot shape (attacks 136-139).

The agent owns the tables it created (and may own the database): it can make a column computed
when read, set a role's or a database's defaults, leave an index that disagrees with its table,
or key a twin row by another type. Each read as the claim said; each test shows it no longer
does, and an honest read of the same table still verifies.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from completion_claim.observe import readback_sql

from .conftest import Reader, SqlTable, last_evidence, verdict_of
from .test_readback import MakeClaim, assert_not_the_table, read_as_reader, readback

# --- Columns computed when read (attack 136) -----------------------------------------


@pytest.mark.parametrize("server_table", ["mariadb"], indirect=True)
def test_attack_136_a_mariadb_virtual_column_cannot_answer_the_reader(
    server_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent, owner of the table, keeps the real zip in another column and makes ``zip`` a
    virtual column that answers the reader role (its name starts ``claim_reader``) 94107 and
    everyone else what the row holds."""
    t = server_table.table
    server_table.execute(f"ALTER TABLE {t} CHANGE zip real_zip VARCHAR(10)", [])
    server_table.execute(f"UPDATE {t} SET real_zip = '00000' WHERE id = 4471", [])
    server_table.execute(
        f"ALTER TABLE {t} ADD COLUMN zip VARCHAR(10) AS"
        " (IF(CURRENT_USER() LIKE 'claim\\_reader%%', '94107', real_zip)) VIRTUAL",
        [],
    )
    read = f"SELECT zip FROM {t} WHERE id = 4471"
    assert server_table.execute(read, []) == [("00000",)]  # what the application reads
    assert read_as_reader(server_table, read) == [("94107",)]  # it lies to the reader
    message = f"{t} has a column computed when it is read (zip; or --allow-view {t})"
    before = claim.read_bytes()
    args = ["--key", "id=4471", "--expect", "zip=94107"]
    assert readback(claim, server_table.url, "--table", t, *args) == 5
    assert_not_the_table(claim, capsys, before, message)
    assert readback(claim, server_table.url, "--query", read, "--expect", "zip=94107") == 5
    assert_not_the_table(claim, capsys, before, message)
    # The operator who means to read such a column says so, and the evidence says it.
    assert readback(claim, server_table.url, "--table", t, *args, "--allow-view", t) == 0
    assert last_evidence(claim)["details"]["views"] == [t]


@pytest.mark.parametrize("server_table", ["mariadb"], indirect=True)
def test_a_stored_generated_column_is_read_as_the_row_holds_it(
    server_table: SqlTable, claim: Path
) -> None:
    """Control for attack 136: a STORED column is computed when the row is written (MariaDB
    refuses CURRENT_USER() there) and read as any other."""
    t = server_table.table
    server_table.execute(f"ALTER TABLE {t} ADD COLUMN zip_twice INT AS (zip_n * 2) STORED", [])
    args = ["--table", t, "--key", "id=4471", "--expect", "zip_twice=188214"]
    assert readback(claim, server_table.url, *args) == 0
    assert verdict_of(claim) == "verified"


@pytest.mark.parametrize("sql_table", ["sqlite"], indirect=True)
def test_an_sqlite_generated_column_is_computed_from_its_row_alone(
    sql_table: SqlTable, claim: Path
) -> None:
    """Control for attack 136: SQLite takes only deterministic functions in a generated column
    (checked again whenever the schema is read), and a connection that makes ``LIKE`` its own
    (``PRAGMA case_sensitive_like``) can no longer read such a column at all: a virtual column
    is the same for every reader, so it is read."""
    t = sql_table.table
    sql_table.execute(
        f"ALTER TABLE {t} ADD COLUMN acct INT AS (iif(code LIKE 'ACCT-%', 1, 0)) VIRTUAL", []
    )
    other = sqlite3.connect(sql_table.url.removeprefix("sqlite:///"))
    try:
        other.execute("PRAGMA case_sensitive_like = ON")
        with pytest.raises(sqlite3.DatabaseError, match="non-deterministic functions"):
            other.execute(f"SELECT acct FROM {t}")
    finally:
        other.close()
    args = ["--table", t, "--key", "id=4471", "--expect", "acct=1"]
    assert readback(claim, sql_table.url, *args) == 0
    assert verdict_of(claim) == "verified"


# --- Settings a role or a database sets (attack 137) -----------------------------------------

# (the column added, what the rows hold, the reader role's default, the lookup, the claim, what
# the table holds): each default made the claim read as true.
SETTINGS: dict[str, tuple[str, str, str, list[str], str, dict[str, Any]]] = {
    "extra_float_digits": (
        "ratio float8",
        "UPDATE {t} SET ratio = 99.6",
        "extra_float_digits = -15",
        ["--table", "{t}", "--key", "id=4471"],
        "ratio=100",
        {"ratio": 99.6},
    ),
    "TimeZone": (
        "at timestamptz",
        "UPDATE {t} SET at = '2026-08-27 23:30:00+00'",
        "TimeZone = 'Asia/Tokyo'",
        ["--query", "SELECT CAST(at AS date) AS day FROM {t} WHERE id = 4471"],
        "day=2026-08-28",
        {"day": "2026-08-27"},
    ),
    "DateStyle": (
        "day date",
        "UPDATE {t} SET day = CASE id WHEN 4471 THEN DATE '2026-03-04'"
        " WHEN 4472 THEN DATE '2026-04-03' END",
        "DateStyle = 'ISO, DMY'",
        ["--table", "{t}", "--key", "day=03/04/2026"],
        "zip=10001",
        {"zip": "94107"},
    ),
}


@pytest.mark.parametrize("server_table", ["postgresql"], indirect=True)
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_attack_137_a_roles_defaults_cannot_shape_the_value_read(
    postgres: Any,
    server_table: SqlTable,
    postgres_reader: Reader,
    make_claim: MakeClaim,
    claim: Path,
    setting: str,
) -> None:
    """``ALTER ROLE reader SET extra_float_digits = -15`` (or ``ALTER DATABASE``, for the
    database's owner) writes 99.6 out as 100; a time zone moves a timestamp to the next day; a
    date style reads the key 03/04/2026 as the 3rd of April. The readback pins them."""
    column, fill, default, lookup, claimed, truth = SETTINGS[setting]
    t = server_table.table
    postgres.execute(f"ALTER TABLE {t} ADD COLUMN {column}")
    postgres.execute(fill.format(t=t))
    postgres.execute(f"ALTER ROLE {postgres_reader.name} SET {default}")
    lookup = [arg.format(t=t) for arg in lookup]
    assert readback(claim, server_table.url, *lookup, "--expect", claimed) == 0
    assert last_evidence(claim)["observed_value"] == truth
    assert verdict_of(claim) == "refuted"
    # Control: the honest claim verifies under the same defaults.
    honest = [f"{name}={value}" for name, value in truth.items()]
    control = make_claim()
    assert readback(control, server_table.url, *lookup, "--expect", *honest) == 0
    assert verdict_of(control) == "verified"


# --- SQLite: an index that disagrees with its table (attack 138) -----------------------------


def stale_covering_index(path: Path, table: str) -> None:
    """Index every column of ``table`` on ``code``, then change 4471's zip behind the index's
    back: the index's entry leaves the schema (``writable_schema``), the row is updated, and
    the entry comes back with its old pages. ``PRAGMA quick_check`` still says ok."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"CREATE INDEX {table}_code ON {table} (code, zip, zip_n, amount)")
        entry = conn.execute(
            "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema WHERE name = ?",
            [f"{table}_code"],
        ).fetchone()
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("DELETE FROM sqlite_schema WHERE name = ?", [f"{table}_code"])
    finally:
        conn.close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"UPDATE {table} SET zip = '00000', zip_n = 0 WHERE id = 4471")
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("INSERT INTO sqlite_schema VALUES (?, ?, ?, ?, ?)", entry)
    finally:
        conn.close()


@pytest.mark.parametrize("sql_table", ["sqlite"], indirect=True)
def test_attack_138_a_stale_sqlite_index_cannot_answer_the_lookup(
    sql_table: SqlTable, make_claim: MakeClaim, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``writable_schema`` the agent leaves an index holding 4471's old zip; SQLite answers
    ``SELECT * ... WHERE code = ?`` from that (covering) index alone."""
    t = sql_table.table
    path = Path(sql_table.url.removeprefix("sqlite:///"))
    stale_covering_index(path, t)
    lookup = f"SELECT * FROM {t} WHERE code = 'acct-4471'"
    assert [row[2] for row in read_as_reader(sql_table, lookup)] == ["94107"]  # the index
    assert read_as_reader(sql_table, f"SELECT zip FROM {t} WHERE id = 4471") == [("00000",)]
    assert read_as_reader(sql_table, "PRAGMA quick_check") == [("ok",)]
    # By --table and --key: the table is read without its indexes, and the row refutes.
    claim = make_claim()
    args = ["--table", t, "--key", "code=acct-4471", "--expect", "zip=94107"]
    assert readback(claim, sql_table.url, *args) == 0
    assert last_evidence(claim)["observed_value"] == {"zip": "00000"}
    assert verdict_of(claim) == "refuted"
    # By --query: each table read is checked against its indexes first.
    claim = make_claim()
    before = claim.read_bytes()
    query = f"SELECT zip FROM {t} WHERE code = 'acct-4471'"
    assert readback(claim, sql_table.url, "--query", query, "--expect", "zip=94107") == 5
    assert_not_the_table(
        claim, capsys, before, f"{t} fails PRAGMA integrity_check: row 1 missing from index"
    )


# The schema edited under the rows (writable_schema): (what is made first, the edit, the query,
# the first problem integrity_check names). {t} is the table.
PLANNER_LIES = {
    # A partial index of 94107's rows, said to hold every row with a zip: 4472 is not in it.
    "partial index": (
        "CREATE INDEX {t}_zip ON {t} (code) WHERE zip = '94107'",
        "UPDATE sqlite_schema SET sql = replace(sql, 'zip = ''94107''', 'zip IS NOT NULL')"
        " WHERE name = '{t}_zip'",
        "SELECT count(*) AS n FROM {t} WHERE code = 'acct-4472' AND zip IS NOT NULL",
        "row 2 missing from index {t}_zip",
    ),
    # NOT NULL declared over rows that hold NULL: "IS NULL" is then known to be false.
    "not null": (
        "UPDATE {t} SET code = NULL WHERE id = 4472",
        "UPDATE sqlite_schema SET sql = replace(sql, 'code VARCHAR(40)',"
        " 'code VARCHAR(40) NOT NULL') WHERE name = '{t}'",
        "SELECT count(*) AS n FROM {t} WHERE code IS NULL",
        "NULL value in {t}.code",
    ),
}


@pytest.mark.parametrize("sql_table", ["sqlite"], indirect=True)
@pytest.mark.parametrize("lie", sorted(PLANNER_LIES))
def test_attack_138_an_sqlite_schema_that_lies_to_the_planner_cannot_answer_a_query(
    sql_table: SqlTable, claim: Path, capsys: pytest.CaptureFixture[str], lie: str
) -> None:
    """The planner trusts the schema: a partial index said to cover rows it lacks, or a NOT
    NULL over NULLs, and the query counts no row where there is one."""
    setup, edit, query, problem = (part.format(t=sql_table.table) for part in PLANNER_LIES[lie])
    sql_table.execute(setup, [])
    sql_table.execute("PRAGMA writable_schema = ON", [])
    sql_table.execute(edit, [])
    sql_table.execute("PRAGMA writable_schema = OFF", [])
    assert read_as_reader(sql_table, query) == [(0,)]  # there is one
    before = claim.read_bytes()
    assert readback(claim, sql_table.url, "--query", query, "--expect", "n=0") == 5
    assert_not_the_table(
        claim, capsys, before, f"{sql_table.table} fails PRAGMA integrity_check: {problem}"
    )


@pytest.mark.parametrize("sql_table", ["sqlite"], indirect=True)
def test_an_sqlite_table_with_sound_indexes_reads_by_query_and_key(
    sql_table: SqlTable, claim: Path
) -> None:
    """Control for attack 138: indexes that agree with their table change nothing."""
    t = sql_table.table
    sql_table.execute(f"CREATE INDEX {t}_code ON {t} (code, zip)", [])
    args = ["--table", t, "--key", "code=acct-4471", "--expect", "zip=94107"]
    assert readback(claim, sql_table.url, *args) == 0
    assert verdict_of(claim) == "verified"
    query = f"SELECT zip FROM {t} WHERE code = :code"
    args = ["--query", query, "--param", "code=acct-4471", "--expect", "zip=94107"]
    assert readback(claim, sql_table.url, *args) == 0
    assert verdict_of(claim) == "verified"


# --- SQLite: the key's type (attack 139) -----------------------------------------------------


@pytest.mark.parametrize("sql_table", ["sqlite"], indirect=True)
def test_attack_139_an_sqlite_twin_keyed_as_text_is_not_read_for_the_integer(
    sql_table: SqlTable, make_claim: MakeClaim, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a column without a type, the application's row is keyed by the integer 4471; the
    agent adds a twin keyed by the text '4471' holding what the claim says. Bound as text, the
    key found the twin alone."""
    t = f"{sql_table.table}_untyped"
    sql_table.execute(f"CREATE TABLE {t} (id, zip)", [])
    sql_table.execute(f"INSERT INTO {t} VALUES (4471, '00000')", [])
    args = ["--table", t, "--key", "id=4471", "--expect", "zip=94107"]
    # Control first: the application's row alone is found by the integer.
    claim = make_claim()
    assert readback(claim, sql_table.url, *args) == 0
    assert last_evidence(claim)["observed_value"] == {"zip": "00000"}
    assert verdict_of(claim) == "refuted"
    sql_table.execute(f"INSERT INTO {t} VALUES ('4471', '94107')", [])
    assert read_as_reader(sql_table, f"SELECT zip FROM {t} WHERE id = '4471'") == [("94107",)]
    claim = make_claim()
    before = claim.read_bytes()
    assert readback(claim, sql_table.url, *args) == 5
    err = capsys.readouterr().err
    assert "query returned 2 rows; a readback must identify one record" in err, err
    assert claim.read_bytes() == before
    # A key that reads only as text still finds its text row.
    sql_table.execute(f"INSERT INTO {t} VALUES ('acct-9', 'text')", [])
    args = ["--table", t, "--key", "id=acct-9", "--expect", "zip=text"]
    claim = make_claim()
    assert readback(claim, sql_table.url, *args) == 0
    assert verdict_of(claim) == "verified"


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("4471", ["4471", 4471]),
        (" -4471 ", [" -4471 ", -4471]),
        ("12.50", ["12.50", 12.5]),
        ("1e3", ["1e3", 1000.0]),
        ("9223372036854775808", ["9223372036854775808", 9.223372036854776e18]),
        ("0x10", ["0x10"]),
        ("acct-4471", ["acct-4471"]),
        ("", [""]),
    ],
)
def test_an_sqlite_key_stands_for_its_text_and_the_number_it_reads_as(
    text: str, values: list[Any]
) -> None:
    """The numbers are those SQLite makes of such text for a column of numeric affinity (an
    integer past 64 bits is a real; hexadecimal text stays text)."""
    found = readback_sql.sqlite_key_values(text)
    assert found == values
    assert [type(value) for value in found] == [type(value) for value in values]
    store = sqlite3.connect(":memory:")
    try:
        store.execute("CREATE TABLE t (n NUMERIC)")
        store.execute("INSERT INTO t VALUES (?)", [text])
        assert store.execute("SELECT n FROM t").fetchone() == (values[-1],)
    finally:
        store.close()
