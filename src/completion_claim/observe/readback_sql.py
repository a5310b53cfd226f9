"""Readback from SQL stores: PostgreSQL (psycopg 3), MariaDB (PyMySQL) and SQLite (stdlib).

Every read runs in a read-only transaction with a statement timeout (PostgreSQL ``BEGIN READ
ONLY`` and ``statement_timeout``, MariaDB ``START TRANSACTION READ ONLY`` and
``max_statement_time``, SQLite opened with ``mode=ro`` and a progress handler), by a role that can
only read (checked before the read: see :func:`postgresql_privileges` and
:func:`mariadb_privileges`), from tables every reader reads alike (no view, foreign table,
row-level security or column computed when read in their place, checked before and after the
read: see :func:`postgresql_relations`, :func:`mariadb_relations`, :func:`sqlite_relations`),
in a session whose settings the table's owner cannot shape (:data:`POSTGRESQL_SETTINGS`), and binds
every value: key values and ``--param`` values are parameters, identifiers from
``--table``/``--key`` are quoted as identifiers, and nothing from the command line is
formatted into SQL text. Exactly one
statement is executed for the user, so a ``COMMIT`` cannot end the read-only transaction early
and let a second statement write.

``--query`` names its parameters ``:name`` on every store; for PostgreSQL and MariaDB they are
translated to the driver's ``%(name)s`` (outside string literals, quoted identifiers and
comments; a PostgreSQL ``::`` cast is left alone).
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from .._optional import needs_extra
from ..errors import ObservationFailed, UsageError
from .values import redact_url, scrub, to_json, url_secrets

if TYPE_CHECKING:
    import psycopg

Record = dict[str, Any]
Table = tuple[str, ...]  # [[catalog.]schema.]name as the server names it
# Each reader imports its own driver (SQLite's is the standard library); these name the reader
# in the line a missing driver prints.
POSTGRESQL = "a PostgreSQL readback"
MARIADB = "a MariaDB/MySQL readback"
ROWS_COUNTED = 100  # rows fetched to tell the user how many a too-broad lookup matched
# Roles whose members read and write the server's files or run programs on it (PostgreSQL).
SERVER_FILE_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files")
# What the readback's transaction pins on PostgreSQL, whatever the role's or the database's
# defaults (``ALTER ROLE/DATABASE ... SET``, which the database's owner may run) say: how the
# server reads the key and writes values out (PostgreSQL's own defaults; zoned times in UTC),
# how it lexes the query (as the query check did: a backslash is a character), and what a scan
# returns: every row (a GIN scan is not cut short; with row security off, a read that
# row-level security would filter fails instead).
POSTGRESQL_SETTINGS = (
    ("DateStyle", "ISO, MDY"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("timezone_abbreviations", "Default"),
    ("extra_float_digits", "1"),
    ("client_encoding", "UTF8"),
    ("lc_monetary", "C"),
    ("lc_numeric", "C"),
    ("lc_time", "C"),
    ("bytea_output", "hex"),
    ("xmlbinary", "base64"),
    ("xmloption", "content"),
    ("array_nulls", "on"),
    ("transform_null_equals", "off"),
    ("standard_conforming_strings", "on"),
    ("gin_fuzzy_search_limit", "0"),
    ("row_security", "off"),
)
# What a MariaDB readback role may hold on the target (and globally): reading only.
MARIADB_SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
MARIADB_READ_PRIVILEGES = frozenset({"SELECT", "SHOW VIEW", "SHOW DATABASES", "USAGE"})
_GRANT = re.compile(r"GRANT (?P<privileges>.+?) ON (?P<object>.+?) TO ", re.S)
_ROUTINES = ("PROCEDURE ", "FUNCTION ", "PACKAGE ")
_BACKTICKED_PATH = re.compile(r"`(?P<schema>(?:[^`]|``)*)`\.(?P<table>\*|`(?:[^`]|``)*`)")


@dataclass(frozen=True)
class TableLookup:
    """``--table T --key COL=VALUE ...``: the row whose key columns equal the values."""

    table: str
    keys: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class QueryLookup:
    """``--query SQL --param NAME=VALUE ...``; ``tables`` are the tables the parser found,
    ``functions`` and ``operators`` the names PostgreSQL resolves through the search path."""

    sql: str
    params: tuple[tuple[str, str], ...]
    tables: tuple[Table, ...] = ()
    functions: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reading:
    """What a SQL store returned, whether a role that may do more than read returned it (only
    with ``--allow-privileged-role``), and the views it read (only those ``--allow-view`` names)."""

    record: Record | None
    privileged_role: bool = False
    views: tuple[str, ...] = ()


def tables_read(lookup: TableLookup | QueryLookup) -> tuple[Table, ...]:
    if isinstance(lookup, TableLookup):
        return (tuple(_table_parts(lookup.table)),)
    return lookup.tables


# Tokens that may contain a ``:name`` look-alike that is not a parameter, per dialect.
_SKIP = {
    "postgresql": r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/"
    r"|(?P<tag>\$[A-Za-z_]*\$).*?(?P=tag)|::",
    "mariadb": r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|`(?:[^`]|``)*`"
    r"|(?:--\s|\#)[^\n]*|/\*.*?\*/",
    "sqlite": r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|\[[^\]]*\]|--[^\n]*|/\*.*?\*/",
}
_TOKENS = {
    dialect: re.compile(rf"(?P<skip>{skip})|:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|%", re.S)
    for dialect, skip in _SKIP.items()
}


def translate_query(query: str, dialect: str, params: dict[str, str]) -> str:
    """``:name`` placeholders in the driver's style; every name needs a --param and vice versa.

    For the ``%``-style drivers every literal ``%`` is doubled, as they read ``%`` everywhere.
    """
    percent_style = dialect != "sqlite"
    used: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name is not None:
            used.append(name)
            return f"%({name})s" if percent_style else match.group()
        return match.group().replace("%", "%%") if percent_style else match.group()

    text = _TOKENS[dialect].sub(replace, query)
    missing = [name for name in used if name not in params]
    if missing:
        raise UsageError(f"--query uses :{missing[0]} but no --param {missing[0]}=VALUE is given")
    unused = [name for name in params if name not in used]
    if unused:
        raise UsageError(f"--param {unused[0]}: the query has no :{unused[0]}")
    return text


def _identifier(name: str, option: str) -> str:
    if not name or any(ord(char) < 32 for char in name):
        raise UsageError(f"{option}: {name!r} is not a usable identifier")
    return name


def _table_parts(table: str) -> list[str]:
    """``NAME`` or ``SCHEMA.NAME`` (a database for MariaDB)."""
    return [_identifier(part, "--table") for part in table.split(".")]


def _backticked(name: str) -> str:
    """Quote an identifier for MariaDB and SQLite. Backticks, not double quotes, for SQLite too:
    SQLite reads an unknown double-quoted identifier as a string literal, which would turn a
    mistyped key column into "no such record" instead of an error."""
    return "`" + name.replace("`", "``") + "`"


def _mariadb_select(lookup: TableLookup) -> str:
    table = ".".join(_backticked(part) for part in _table_parts(lookup.table))
    where = " AND ".join(
        f"{_backticked(_identifier(column, '--key'))} = %s" for column, _ in lookup.keys
    )
    # Identifiers are quoted above and every value is a placeholder: nothing is formatted in.
    return f"SELECT * FROM {table} WHERE {where} LIMIT {ROWS_COUNTED + 1}"  # noqa: S608


def one_record(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Record | None:
    """The single row as a record; none is an absent record, several are an error."""
    duplicates = [name for name, count in Counter(columns).items() if count > 1]
    if duplicates:
        raise UsageError(
            f"the result has two columns named {duplicates[0]!r}; name each column once (AS ...)"
        )
    if len(rows) > 1:
        count = f"more than {ROWS_COUNTED}" if len(rows) > ROWS_COUNTED else str(len(rows))
        raise ObservationFailed(f"query returned {count} rows; a readback must identify one record")
    if not rows:
        return None
    return {column: to_json(value) for column, value in zip(columns, rows[0], strict=True)}


def _failed(url: str, message: str) -> ObservationFailed:
    """A driver's error, password-free and on one line, naming the store."""
    return ObservationFailed(f"readback from {redact_url(url)}: {scrub(message, url_secrets(url))}")


def _not_a_query(url: str) -> ObservationFailed:
    return ObservationFailed(
        f"readback from {redact_url(url)}: the statement returned no rows; a readback runs a query"
    )


def check_role(url: str, role: str, privileges: list[str], allow_privileged_role: bool) -> bool:
    """Refuse (exit 4) a role that can do more than read, unless the operator allowed it."""
    if privileges and not allow_privileged_role:
        raise UsageError(
            f"readback from {redact_url(url)}: the role {role} {privileges[0]}; a readback needs "
            "a role that can only read (or --allow-privileged-role, recorded in the evidence)"
        )
    return bool(privileges)


def postgresql_privileges(cursor: psycopg.Cursor[Any], tables: tuple[Table, ...]) -> list[str]:
    """What the current role can do beyond reading: be (or become) a superuser, use the server's
    files or programs, or write to a table the readback reads (owning it, or holding INSERT,
    UPDATE, DELETE or TRUNCATE on it or on any of its columns)."""
    cursor.execute(
        "SELECT EXISTS (SELECT FROM pg_roles WHERE rolsuper"
        " AND pg_has_role(current_user, oid, 'MEMBER')),"
        " ARRAY(SELECT rolname::text FROM pg_roles WHERE rolname = ANY(%s)"
        " AND pg_has_role(current_user, oid, 'MEMBER') ORDER BY rolname)",
        [list(SERVER_FILE_ROLES)],
    )
    row = cursor.fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    superuser, file_roles = row
    if superuser:
        return ["is (or can become) a superuser"]
    found = [f"is a member of {name}" for name in file_roles]
    for parts in tables:
        name = sql_identifier(cursor, parts)
        cursor.execute(
            "SELECT has_table_privilege(c, 'INSERT, UPDATE, DELETE, TRUNCATE')"
            " OR has_any_column_privilege(c, 'INSERT, UPDATE') FROM to_regclass(%s) AS c",
            [name],
        )
        writable = cursor.fetchone()
        if writable is not None and writable[0]:
            found.append(f"can write to {name}")
    return found


def postgresql_shadows(
    cursor: psycopg.Cursor[Any], lookup: TableLookup | QueryLookup
) -> str | None:
    """A function or operator the query names that also names one outside pg_catalog on the
    search path: PostgreSQL picks the best match among them all, so ``lower(zip)`` on a
    varchar column calls ``public.lower(varchar)`` rather than pg_catalog's ``lower(text)``.
    Or a cast done by such a function: ``lower(mood)`` casts an enum to text by it.
    Members of an extension a superuser owns (citext's ``=``, PostGIS's) are the server's
    code, not the database's: only the extension's owner could add a function to it.
    ``--table T --key COL=VALUE`` compares with ``=`` and calls nothing."""
    if isinstance(lookup, QueryLookup):
        functions, operators = list(lookup.functions), list(lookup.operators)
    else:
        functions, operators = [], ["="]
    cursor.execute(_SHADOWS, {"functions": functions, "operators": operators})
    row = cursor.fetchone()
    return None if row is None else str(row[0])


def _refuse_shadows(
    url: str, cursor: psycopg.Cursor[Any], lookup: TableLookup | QueryLookup
) -> None:
    shadow = postgresql_shadows(cursor, lookup)
    if shadow is not None:
        raise UsageError(
            f"readback from {redact_url(url)}: the query can reach {shadow}, the database's own "
            "code; a readback runs pg_catalog's functions, operators and casts only (drop that "
            "one, or take its schema off the role's search_path)"
        )


# The first function or operator outside pg_catalog on the search path with a name the query
# uses, or cast (in any schema: casts have no name to look up) done by a function outside
# pg_catalog, unless the function or operator belongs to an extension a superuser owns.
_SHADOWS = """
SELECT 'function ' || n.nspname || '.' || p.proname || '('
    || pg_get_function_identity_arguments(p.oid) || ')'
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE p.proname = ANY(%(functions)s) AND n.nspname = ANY(current_schemas(true))
AND n.nspname <> 'pg_catalog' AND NOT EXISTS (
    SELECT FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    JOIN pg_roles r ON r.oid = e.extowner
    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
    AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND r.rolsuper)
UNION ALL
SELECT 'operator ' || n.nspname || '.' || o.oprname
FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace
WHERE o.oprname = ANY(%(operators)s) AND n.nspname = ANY(current_schemas(true))
AND n.nspname <> 'pg_catalog' AND NOT EXISTS (
    SELECT FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    JOIN pg_roles r ON r.oid = e.extowner
    WHERE d.classid = 'pg_operator'::regclass AND d.objid = o.oid
    AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND r.rolsuper)
UNION ALL
SELECT 'a cast from ' || format_type(c.castsource, NULL) || ' to '
    || format_type(c.casttarget, NULL) || ' by ' || n.nspname || '.' || p.proname
FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname <> 'pg_catalog' AND NOT EXISTS (
    SELECT FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    JOIN pg_roles r ON r.oid = e.extowner
    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
    AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND r.rolsuper)
ORDER BY 1 LIMIT 1
"""


def dotted(table: Table) -> str:
    """A table's name as the readback writes it (and ``--allow-view`` names it)."""
    return ".".join(table)


def _not_the_table(url: str, problem: str) -> ObservationFailed:
    """What answers for a table the readback reads is not that table's rows as every reader
    sees them: the agent may have put it there, so nothing is observed (exit 5)."""
    return _failed(url, f"{problem}; a readback reads the table itself")


# What a relation is when it is not a table a readback reads (pg_class.relkind).
_PG_KINDS = {
    "v": "a view",
    "m": "a materialized view",
    "f": "a foreign table",
    "S": "a sequence",
}
_PG_TABLES = ("r", "p")  # a table, a partitioned table
_PG_VIEWS = ("v", "m")


def postgresql_relations(
    url: str,
    cursor: psycopg.Cursor[Any],
    tables: tuple[Table, ...],
    allow_views: frozenset[Table],
    after_read: bool = False,
) -> tuple[str, ...]:
    """Refuse (exit 5) a relation the readback reads that is not a table, or is one whose rows
    depend on who reads it or where the name is looked up: a view or the like (unless
    ``--allow-view`` names it), a table with a child or partition that is not a table (a foreign
    table), a table whose row-level security filters what this role reads, or a name without a
    schema that another schema also holds (the role's search path may find another than the
    application's). Returns the views read under ``--allow-view``.

    Run before the read, so that no view's query runs unasked, and again after it, when the
    read's own locks keep every relation it read from being dropped, renamed or detached until
    the transaction ends: what was read is what the second check sees (and a name it cannot
    find then was not read as the check reads it)."""
    views: list[str] = []
    for table in tables:
        name = sql_identifier(cursor, table)
        cursor.execute(_RELATION, {"name": name, "bare": len(table) == 1})
        row = cursor.fetchone()
        if row is None and after_read:
            # The read found a relation by this name; a check that finds none has not
            # checked what was read.
            raise _not_the_table(url, f"{dotted(table)} names no relation the check can find")
        if row is None:
            continue  # no such relation: the read itself says so
        kind, shown, filtered, child, child_kind, other = row
        if kind in _PG_VIEWS and table in allow_views:
            views.append(dotted(table))
        elif kind not in _PG_TABLES:
            allow = f" (or --allow-view {dotted(table)})" if kind in _PG_VIEWS else ""
            what = _PG_KINDS.get(kind, f"a relation of kind {kind!r}")
            raise _not_the_table(url, f"{shown} is {what}, not a table{allow}")
        if child is not None:
            what = _PG_KINDS.get(child_kind, f"a relation of kind {child_kind!r}")
            raise _not_the_table(url, f"rows of {shown} come from {child}, {what}")
        if filtered:
            raise _not_the_table(
                url,
                f"row-level security on {shown} decides which of its rows this role reads "
                "(read as a role with BYPASSRLS)",
            )
        if other is not None:
            raise _not_the_table(
                url,
                f"{dotted(table)} is {shown} on this role's search path, and {other} is another "
                f"relation of that name (name the schema: {shown})",
            )
    return tuple(views)


def sql_identifier(cursor: psycopg.Cursor[Any], table: Table) -> str:
    """The table's name quoted as PostgreSQL reads it (each part as written)."""
    with needs_extra("observe", POSTGRESQL):
        from psycopg import sql  # noqa: PLC0415

    return sql.Identifier(*table).as_string(cursor.connection)


# The relation a name resolves to (on the transaction's search path), its kind, whether
# row-level security applies to the current role, its first descendant (inheritance child or
# partition, at any depth) that is not a table, and, for a name without a schema, another
# relation of that name in a schema other than the server's own (a temporary one is the
# session's: the observer's holds none).
_RELATION = """
WITH RECURSIVE rel AS (
    SELECT c.oid, c.relkind::text AS kind, c.relname,
        format('%%I.%%I', n.nspname, c.relname) AS shown
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = to_regclass(%(name)s)
), tree(oid) AS (
    SELECT i.inhrelid FROM pg_inherits i JOIN rel ON i.inhparent = rel.oid
    UNION SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid
)
SELECT rel.kind, rel.shown, row_security_active(rel.oid), child.shown, child.kind, other.shown
FROM rel
LEFT JOIN LATERAL (
    SELECT format('%%I.%%I', n.nspname, c.relname) AS shown, c.relkind::text AS kind
    FROM tree JOIN pg_class c ON c.oid = tree.oid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind NOT IN ('r', 'p') ORDER BY 1 LIMIT 1
) child ON true
LEFT JOIN LATERAL (
    SELECT format('%%I.%%I', n.nspname, c.relname) AS shown
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE %(bare)s AND c.relname = rel.relname AND c.oid <> rel.oid
    AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND NOT starts_with(n.nspname, 'pg_toast') AND n.oid <> pg_my_temp_schema()
    AND NOT pg_is_other_temp_schema(n.oid)
    ORDER BY 1 LIMIT 1
) other ON true
"""


def read_postgresql(
    url: str,
    lookup: TableLookup | QueryLookup,
    timeout: float,
    allow_privileged_role: bool,
    allow_views: frozenset[Table] = frozenset(),
) -> Reading:
    with needs_extra("observe", POSTGRESQL):
        import psycopg  # noqa: PLC0415
        from psycopg import sql  # noqa: PLC0415

    query: sql.Composable
    if isinstance(lookup, TableLookup):
        query = sql.SQL("SELECT * FROM {} WHERE {} LIMIT {}").format(
            sql.Identifier(*_table_parts(lookup.table)),
            sql.SQL(" AND ").join(
                sql.SQL("{} = %s").format(sql.Identifier(_identifier(column, "--key")))
                for column, _ in lookup.keys
            ),
            sql.Literal(ROWS_COUNTED + 1),
        )
        params: Sequence[str] | dict[str, str] = [value for _, value in lookup.keys]
    else:
        params = dict(lookup.params)
        query = sql.SQL(translate_query(lookup.sql, "postgresql", params))
    try:
        # libpq's connect_timeout is whole seconds.
        conn = psycopg.connect(url, connect_timeout=max(1, math.ceil(timeout)))
    except psycopg.Error as error:
        raise _failed(url, str(error)) from None
    try:
        conn.read_only = True  # the transaction below begins READ ONLY
        with conn.cursor() as cursor:
            # A type or function the query names is pg_catalog's before any schema's the role
            # or database puts first; the rest is pinned whatever they set (see the constant).
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true),"
                " set_config('search_path', 'pg_catalog, ' || current_setting('search_path'),"
                " true),"
                " current_user::text",
                [str(math.ceil(timeout * 1000))],
            )
            settings = cursor.fetchone()
            assert settings is not None  # a SELECT without FROM returns one row
            names, values = zip(*POSTGRESQL_SETTINGS, strict=True)
            cursor.execute(
                "SELECT set_config(name, value, true) FROM unnest(%s::text[], %s::text[])"
                " AS pinned(name, value)",
                [list(names), list(values)],
            )
            privileged = check_role(
                url,
                settings[2],
                postgresql_privileges(cursor, tables_read(lookup)),
                allow_privileged_role,
            )
            _refuse_shadows(url, cursor, lookup)
            tables = tables_read(lookup)
            postgresql_relations(url, cursor, tables, allow_views)
            # prepare=True forces the extended protocol, which runs exactly one statement;
            # the simple protocol would run "COMMIT; UPDATE ..." as two.
            cursor.execute(query, params, prepare=True)
            if cursor.description is None:
                raise _not_a_query(url)
            columns = [column.name for column in cursor.description]
            rows = cursor.fetchmany(ROWS_COUNTED + 1)
            # Again after the read: a shadow must come and go between the two checks to be missed.
            _refuse_shadows(url, cursor, lookup)
            views = postgresql_relations(url, cursor, tables, allow_views, after_read=True)
            return Reading(one_record(columns, rows), privileged, views)
    except psycopg.Error as error:
        message = error.diag.message_primary if error.diag.message_primary else str(error)
        if "row-level security" in message:
            message += "; a readback reads every row of a table (read as a role with BYPASSRLS)"
        raise _failed(url, message) from None
    finally:
        conn.close()  # closing discards the transaction: a readback never commits


def mariadb_privileges(
    grants: Sequence[str], database: str | None, tables: tuple[Table, ...]
) -> list[str]:
    """What the grants (``SHOW GRANTS``: the user's own, its current role's and PUBLIC's) allow
    beyond reading: any privilege but SELECT, SHOW VIEW, SHOW DATABASES and USAGE held globally,
    on the schema of a table the readback reads, or on that table (or its columns). Grants on
    routines are not read: a routine runs inside the read-only transaction. A grant this cannot
    read counts as a privilege (fail closed)."""
    targets = [(parts[-2] if len(parts) > 1 else database or "", parts[-1]) for parts in tables]
    found: list[str] = []
    for line in grants:
        grant = _GRANT.match(line)
        if grant is None:
            continue  # a role granted to the user: the current role's grants are listed too
        target = grant["object"]
        if target.startswith(_ROUTINES):
            continue
        names = [_privilege_name(text) for text in _split_top_level(grant["privileges"])]
        extra = [name for name in names if name not in MARIADB_READ_PRIVILEGES]
        if extra and _grant_applies(target, targets):
            found.append(f"holds {', '.join(extra)} on {target}")
    return found


def _split_top_level(text: str) -> list[str]:
    """``SELECT, INSERT (`a`, `b`)`` split at the commas outside parentheses and backticks."""
    pieces, depth, quoted, start = [], 0, False, 0
    for index, char in enumerate(text):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "()":
            depth += 1 if char == "(" else -1
        elif not quoted and depth == 0 and char == ",":
            pieces.append(text[start:index])
            start = index + 1
    pieces.append(text[start:])
    return [piece.strip() for piece in pieces]


def _privilege_name(text: str) -> str:
    return text.partition("(")[0].strip().upper()


def _grant_applies(target: str, tables: list[tuple[str, str]]) -> bool:
    """Whether a grant's object (``*.*``, ```db`.*``, ```db`.`table```) covers a table read.
    Anything else (a proxied user, a form not listed) is taken to apply."""
    if target == "*.*":
        return True
    parts = _BACKTICKED_PATH.fullmatch(target)
    if parts is None:
        return True
    schema = parts["schema"].replace("``", "`")
    if parts["table"] == "*":
        # A schema-level grant's name is a pattern: % and _ are wildcards, \ escapes them.
        pattern = re.compile(
            "".join(
                ".*" if piece == "%" else "." if piece == "_" else re.escape(piece[-1])
                for piece in re.findall(r"\\.|.", schema, re.S)
            ),
            re.I | re.S,
        )
        return any(pattern.fullmatch(db) for db, _ in tables)
    table = parts["table"][1:-1].replace("``", "`")
    return any((db.lower(), name.lower()) == (schema.lower(), table.lower()) for db, name in tables)


# information_schema.TABLES.TABLE_TYPE of what a MariaDB readback reads as a table (a
# system-versioned table reads its current rows).
MARIADB_TABLES = ("BASE TABLE", "SYSTEM VERSIONED")
# A relation's kind and its columns computed when read: a generated column that is not stored
# (a stored one is computed when the row is written, where MariaDB allows no CURRENT_USER(),
# NOW() or the like; a virtual one may answer each reader differently).
_MARIADB_RELATION = (
    "SELECT t.TABLE_TYPE, (SELECT GROUP_CONCAT(c.COLUMN_NAME ORDER BY c.ORDINAL_POSITION"
    " SEPARATOR ', ') FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA"
    " AND c.TABLE_NAME = t.TABLE_NAME AND c.IS_GENERATED <> 'NEVER'"
    " AND c.EXTRA NOT IN ('STORED GENERATED', 'PERSISTENT GENERATED'))"
    " FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = %s AND t.TABLE_NAME = %s"
)


def mariadb_relations(
    url: str,
    cursor: Any,
    database: str | None,
    tables: tuple[Table, ...],
    allow_views: frozenset[Table],
    after_read: bool = False,
) -> tuple[str, ...]:
    """Refuse (exit 5) a relation the readback reads that is not a table (a view; a table with
    a column computed when read; a sequence), unless ``--allow-view`` names the view or the
    table; return those read under ``--allow-view``. Run before the read and after it, when
    the read's metadata locks keep what it read in place (and a name the check cannot find
    then was not read as the check reads it)."""
    views: list[str] = []
    for table in tables:
        schema = table[-2] if len(table) > 1 else database
        cursor.execute(_MARIADB_RELATION, [schema, table[-1]])
        kinds = cursor.fetchall()
        if not kinds and after_read:
            raise _not_the_table(url, f"{dotted(table)} names no relation the check can find")
        for kind, computed in kinds:
            if (kind == "VIEW" or computed) and table in allow_views:
                views.append(dotted(table))
            elif kind not in MARIADB_TABLES:
                allow = f" (or --allow-view {dotted(table)})" if kind == "VIEW" else ""
                raise _not_the_table(
                    url, f"{dotted(table)} is a {kind.lower()}, not a table{allow}"
                )
            elif computed:
                raise _not_the_table(
                    url,
                    f"{dotted(table)} has a column computed when it is read ({computed}; "
                    f"or --allow-view {dotted(table)})",
                )
    return tuple(dict.fromkeys(views))


def read_mariadb(
    url: str,
    lookup: TableLookup | QueryLookup,
    timeout: float,
    allow_privileged_role: bool,
    allow_views: frozenset[Table] = frozenset(),
) -> Reading:
    with needs_extra("observe", MARIADB):
        import pymysql  # noqa: PLC0415

    parts = urlsplit(url)
    try:
        port = parts.port or 3306
    except ValueError:
        raise UsageError(f"URL {redact_url(url)!r}: the port is not a number") from None
    if not parts.hostname:
        raise UsageError(f"URL {redact_url(url)!r}: no host")
    if parts.query:
        raise UsageError(f"URL {redact_url(url)!r}: mysql:// URL options are not supported")
    if isinstance(lookup, TableLookup):
        text = _mariadb_select(lookup)
        params: Sequence[str] | dict[str, str] = [value for _, value in lookup.keys]
    else:
        params = dict(lookup.params)
        text = translate_query(lookup.sql, "mariadb", params)
    try:
        conn = pymysql.connect(
            host=parts.hostname,
            port=port,
            user=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password or ""),
            database=unquote(parts.path.lstrip("/")) or None,
            connect_timeout=timeout,
            read_timeout=timeout,
            write_timeout=timeout,
            charset="utf8mb4",
            autocommit=False,
        )
    except pymysql.err.MySQLError as error:
        raise _failed(url, _mysql_message(error)) from None
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET SESSION max_statement_time = %s", [timeout])
            # Quoting as the query check reads it: no ANSI_QUOTES, NO_BACKSLASH_ESCAPES, ORACLE
            # or other mode that changes how the server splits the text into tokens.
            cursor.execute("SET SESSION sql_mode = %s", [MARIADB_SQL_MODE])
            # How values are written out, whatever the server's globals say: a TIMESTAMP in
            # UTC, a division's digits, month and day names; and every row a SELECT finds.
            cursor.execute(
                "SET SESSION time_zone = '+00:00', div_precision_increment = 4,"
                " lc_time_names = 'en_US', sql_select_limit = 18446744073709551615"
            )
            # DDL commits implicitly and would run outside START TRANSACTION READ ONLY: the
            # session default makes the transaction that follows read-only as well.
            cursor.execute("SET SESSION TRANSACTION READ ONLY")
            cursor.execute("START TRANSACTION READ ONLY")
            cursor.execute("SELECT CURRENT_USER(), DATABASE()")
            identity = cursor.fetchone()
            assert identity is not None  # a SELECT without FROM returns one row
            role, database = identity
            cursor.execute("SHOW GRANTS")
            grants = [row[0] for row in cursor.fetchall()]
            tables = tables_read(lookup)
            privileged = check_role(
                url, role, mariadb_privileges(grants, database, tables), allow_privileged_role
            )
            mariadb_relations(url, cursor, database, tables, allow_views)
            # PyMySQL sends one statement (no multi-statement flag). Parameters are always
            # given, even empty, so that the driver reads the doubled %% back as %.
            cursor.execute(text, params)
            if cursor.description is None:
                raise _not_a_query(url)
            columns = [column[0] for column in cursor.description]
            rows = cursor.fetchmany(ROWS_COUNTED + 1)
            # MariaDB converts silently where PostgreSQL refuses: '4471abc' compared with an
            # integer column matches 4471. A warning means the comparison was not exact.
            cursor.execute("SHOW WARNINGS")
            for level, _, message in cursor.fetchall():
                if level in ("Warning", "Error"):
                    raise _failed(url, f"the server converted a value: {message}")
            views = mariadb_relations(url, cursor, database, tables, allow_views, after_read=True)
            return Reading(one_record(columns, rows), privileged, views)
    except pymysql.err.MySQLError as error:
        raise _failed(url, _mysql_message(error)) from None
    finally:
        conn.close()  # without a commit: a readback never commits


def _mysql_message(error: Exception) -> str:
    """PyMySQL errors carry (code, message); show the message."""
    return str(error.args[1]) if len(error.args) > 1 else str(error)


# What pragma_table_list calls a relation that is not a table.
_SQLITE_KINDS = {
    "view": "a view",
    "virtual": "a virtual table",
    "shadow": "a virtual table's shadow",
}


def _sqlite_relations(conn: sqlite3.Connection, table: Table) -> list[tuple[str, str, bool]]:
    """Each relation the name finds (in every schema for an unqualified name): its schema, its
    kind as SQLite parsed it from the schema, and whether it is a table without rowid."""
    rows = conn.execute(
        "SELECT schema, type, wr FROM pragma_table_list WHERE name = ? COLLATE NOCASE",
        [table[-1]],
    ).fetchall()
    return [
        (schema, kind, bool(without_rowid))
        for schema, kind, without_rowid in rows
        if len(table) == 1 or schema.lower() == table[-2].lower()
    ]


def sqlite_relations(
    url: str,
    conn: sqlite3.Connection,
    tables: tuple[Table, ...],
    allow_views: frozenset[Table],
    check_indexes: bool,
) -> tuple[str, ...]:
    """Refuse (exit 5) a relation the readback reads that is not a table (a view, unless
    ``--allow-view`` names it; a virtual table, whose rows its module makes); return the views
    read under ``--allow-view``. An unqualified name is checked in every schema that has it.

    With ``check_indexes`` (a query, which SQLite may answer from an index alone), a table
    whose indexes disagree with its rows is refused as well: ``PRAGMA integrity_check`` of the
    table compares every index entry with its row (``quick_check`` does not), and the
    constraints the planner trusts with the values. A key lookup reads the table without its
    indexes instead (see :func:`_sqlite_select`)."""
    views: list[str] = []
    for table in tables:
        for schema, kind, _ in _sqlite_relations(conn, table):
            if kind == "view" and table in allow_views:
                views.append(dotted(table))
            elif kind != "table":
                allow = f" (or --allow-view {dotted(table)})" if kind == "view" else ""
                what = _SQLITE_KINDS.get(kind, f"of type {kind}")
                raise _not_the_table(url, f"{dotted(table)} is {what}, not a table{allow}")
            elif check_indexes:
                found = conn.execute(
                    "SELECT * FROM pragma_integrity_check(?, ?)", [table[-1], schema]
                ).fetchone()
                if found != ("ok",):
                    problem = found[0] if found else "no answer"
                    raise _not_the_table(
                        url, f"{dotted(table)} fails PRAGMA integrity_check: {problem}"
                    )
    return tuple(dict.fromkeys(views))


# Text that SQLite reads as a number when it compares it with a column of numeric affinity.
_SQLITE_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")
_SQLITE_REAL = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*")


def sqlite_key_values(text: str) -> list[str | int | float]:
    """What a key's text may stand for in an SQLite column: the text, and the number it reads
    as, if any. A column without a type (or whose declared type was edited under its values)
    may hold both, as different rows."""
    if _SQLITE_INTEGER.fullmatch(text):
        number = int(text)
        return [text, number if -(2**63) <= number < 2**63 else float(number)]
    if _SQLITE_REAL.fullmatch(text):
        return [text, float(text)]
    return [text]


def _sqlite_select(conn: sqlite3.Connection, lookup: TableLookup) -> tuple[str, list[Any]]:
    """``--table T --key COL=VALUE`` on SQLite: the table read without its indexes (``NOT
    INDEXED``: an index that disagrees with the table cannot answer; a rowid still finds its
    row), and each key matched exactly (``+COL`` takes no type from the column) against every
    value its text may stand for, so that two rows keyed ``4471`` and ``'4471'`` are two
    rows, not the one the text finds. A rowid (``INTEGER PRIMARY KEY``) holds integers only,
    and is compared as it is."""
    parts = _table_parts(lookup.table)
    rowid = _sqlite_rowid(conn, tuple(parts))
    where: list[str] = []
    params: list[Any] = []
    for column, value in lookup.keys:
        name = _backticked(_identifier(column, "--key"))
        if rowid is not None and column.lower() == rowid.lower():
            where.append(f"{name} = ?")
            params.append(value)
        else:
            values = sqlite_key_values(value)
            where.append(f"+{name} IN ({', '.join('?' * len(values))})")
            params += values
    table = ".".join(_backticked(part) for part in parts)
    # Identifiers are quoted above and every value is a placeholder: nothing is formatted in.
    text = f"SELECT * FROM {table} NOT INDEXED WHERE {' AND '.join(where)}"  # noqa: S608
    return f"{text} LIMIT {ROWS_COUNTED + 1}", params


def _sqlite_rowid(conn: sqlite3.Connection, table: Table) -> str | None:
    """The column that is the table's rowid (a lone ``INTEGER PRIMARY KEY`` of a rowid table)."""
    found = _sqlite_relations(conn, table)
    if len(found) != 1 or found[0][1] != "table" or found[0][2]:
        return None
    keys = conn.execute(
        "SELECT name, type FROM pragma_table_xinfo(?, ?) WHERE pk > 0", [table[-1], found[0][0]]
    ).fetchall()
    if len(keys) == 1 and keys[0][1].upper() == "INTEGER":
        return str(keys[0][0])
    return None


def read_sqlite(
    url: str,
    lookup: TableLookup | QueryLookup,
    timeout: float,
    allow_privileged_role: bool,
    allow_views: frozenset[Table] = frozenset(),
) -> Reading:
    """SQLite has no roles: the file is opened read-only, whoever may write it."""
    del allow_privileged_role
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise UsageError(
            f"URL {url!r}: expected sqlite:///relative/path or sqlite:////absolute/path"
        )
    path = Path(url[len(prefix) :])
    # A key lookup's statement depends on the table (see _sqlite_select); a query's is checked
    # before connecting.
    params: Sequence[Any] | dict[str, str] = []
    text = ""
    if isinstance(lookup, QueryLookup):
        params = dict(lookup.params)
        text = translate_query(lookup.sql, "sqlite", params)
    # mode=ro: the file is opened read-only (and never created); every write fails.
    uri = path.absolute().as_uri() + "?mode=ro"
    deadline = time.monotonic() + timeout
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    except sqlite3.Error as error:
        raise _failed(url, str(error)) from None
    try:
        # Abort a statement that runs past the deadline (SQLite's busy timeout covers locks only).
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        # One read transaction: the schema checked is the schema the query reads.
        conn.execute("BEGIN")
        views = sqlite_relations(
            url, conn, tables_read(lookup), allow_views, isinstance(lookup, QueryLookup)
        )
        if isinstance(lookup, TableLookup):
            text, params = _sqlite_select(conn, lookup)
        cursor = conn.execute(text, params)  # execute() refuses more than one statement
        if cursor.description is None:
            raise _not_a_query(url)
        columns = [column[0] for column in cursor.description]
        return Reading(one_record(columns, cursor.fetchmany(ROWS_COUNTED + 1)), views=views)
    except sqlite3.Error as error:
        if time.monotonic() > deadline:
            raise _failed(url, f"no result within {timeout:g}s") from None
        raise _failed(url, str(error)) from None
    finally:
        conn.close()
