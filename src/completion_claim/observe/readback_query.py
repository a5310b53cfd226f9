"""Which ``--query`` text a readback may run: one plain SELECT, proven by a SQL parser.

The read-only transaction and a role that can only read are what stop writes; this check comes
first and refuses, before any connection, what those two do not stop or what a privileged role
could do: ``COPY ... TO PROGRAM`` (a read as far as a read-only transaction is concerned),
``SELECT ... INTO``, locking clauses, writing CTEs, statements other than SELECT, comments (the
server runs MariaDB's ``/*! ... */`` as code), and the functions in :data:`DENIED_FUNCTIONS`.

The parser is sqlglot, in the dialect of the store. A statement it cannot parse, or more than
one, is refused: what is not understood is not run.
"""

from __future__ import annotations

import logging

from .._optional import needs_extra
from ..errors import UsageError
from .readback_sql import Table

with needs_extra("observe", "readback --query"):
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

DIALECTS = {"postgresql": "postgres", "mariadb": "mysql", "sqlite": "sqlite"}
DIALECT_NAMES = {"postgresql": "PostgreSQL", "mariadb": "MariaDB", "sqlite": "SQLite"}

# Functions that reach outside the query's rows: server files and programs, large objects,
# other connections (dblink's own transaction is not read-only), locks that outlive the query,
# sequences, session settings, other sessions, and functions that run SQL text given as a string.
# Matched on the lower-cased name, whatever the schema or quoting; a name is denied on every
# store, so a function with such a name is refused even where it means something else.
DENIED_FUNCTIONS = frozenset(
    {
        # PostgreSQL
        "pg_stat_file",
        "nextval",
        "setval",
        "currval",
        "lastval",
        "set_config",
        "pg_terminate_backend",
        "pg_cancel_backend",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_switch_wal",
        "pg_promote",
        "pg_notify",
        "pg_import_system_collations",
        "loread",
        "lowrite",
        # MariaDB
        "load_file",
        "get_lock",
        "release_lock",
        "release_all_locks",
        "is_free_lock",
        "is_used_lock",
        "master_pos_wait",
        "master_gtid_wait",
        "source_pos_wait",
        "sys_exec",
        "sys_eval",
        "sys_get",
        "sys_set",
        # SQLite (and its shell's extensions)
        "load_extension",
        "readfile",
        "writefile",
        "edit",
        "fts3_tokenizer",
    }
)
DENIED_PREFIXES = (
    "pg_read_",  # pg_read_file, pg_read_binary_file
    "pg_ls_",  # pg_ls_dir, pg_ls_logdir, pg_ls_waldir, ...
    "pg_file_",  # adminpack: pg_file_write, pg_file_unlink, ...
    "lo_",  # large objects: lo_import, lo_export, lo_get, lo_put, ...
    "dblink",
    "pg_advisory",
    "pg_try_advisory",
    "pg_create_",  # restore points, replication slots
    "pg_drop_",
    "pg_replication_",
    "pg_logical_",  # pg_logical_emit_message writes WAL
    "query_to_xml",  # query_to_xml* and cursor_to_xml* run SQL given as text
    "cursor_to_xml",
)

# Nodes that make a statement something other than a plain read, wherever they appear.
_NOT_READS: tuple[tuple[type[object], str], ...] = (
    (exp.Into, "SELECT ... INTO"),
    (exp.Lock, "a locking clause (FOR UPDATE, FOR SHARE, ...)"),
    (exp.NextValueFor, "NEXT VALUE FOR"),
    (exp.Copy, "COPY"),
    (exp.DML, ""),  # INSERT, UPDATE, DELETE, MERGE (also inside a CTE); named by the node
    (exp.DDL, ""),
    (exp.Command, ""),
    (exp.Set, "SET"),
    (exp.Pragma, "PRAGMA"),
    (exp.Transaction, "a transaction statement"),
    (exp.Commit, "COMMIT"),
    (exp.Rollback, "ROLLBACK"),
    (exp.Kill, "KILL"),
    (exp.Attach, "ATTACH"),
    (exp.Detach, "DETACH"),
    (exp.LoadData, "LOAD DATA"),
)

# sqlglot logs a warning when it falls back to an opaque command (EXPLAIN ...); the refusal
# below says what matters in one line.
logging.getLogger("sqlglot").setLevel(logging.ERROR)


def plain_select_tables(query: str, store: str) -> tuple[Table, ...]:
    """Prove that ``query`` is one plain SELECT for ``store``; return the tables it reads.

    Raises UsageError with one line naming why not.
    """
    dialect = DIALECTS[store]
    try:
        tokens = sqlglot.tokenize(query, dialect=dialect)
        statements = sqlglot.parse(query, dialect=dialect)
    except (ParseError, TokenError) as error:
        raise UsageError(
            f"--query: not a statement the {DIALECT_NAMES[store]} parser understands "
            f"({_first_error(error)})"
        ) from None
    if any(token.comments for token in tokens):
        raise UsageError(
            "--query: comments are not allowed in a readback (MariaDB runs /*! ... */ as code)"
        )
    present = [statement for statement in statements if statement is not None]
    if len(present) != 1:
        raise UsageError(f"--query: {len(present)} statements; a readback runs one SELECT")
    statement = present[0]
    if not isinstance(statement, exp.Select | exp.SetOperation | exp.Subquery):
        keyword = tokens[0].text.upper() if tokens else "an empty statement"
        raise UsageError(f"--query: {keyword} is not a plain SELECT")
    for node in statement.walk():
        _refuse_writes(node)
        _refuse_denied_function(node)
    return _tables_read(statement, store)


def _first_error(error: ParseError | TokenError) -> str:
    details = error.errors if isinstance(error, ParseError) else []
    if details:
        first = details[0]
        return f"{first['description']} at line {first['line']}, column {first['col']}"
    return str(error).splitlines()[0]


def _refuse_writes(node: exp.Expr) -> None:
    for kind, name in _NOT_READS:
        if isinstance(node, kind):
            what = name or node.key.upper()
            raise UsageError(f"--query: {what} is not a plain SELECT")


def _refuse_denied_function(node: exp.Expr) -> None:
    if not isinstance(node, exp.Func):
        return
    names = [node.name] if isinstance(node, exp.Anonymous) else type(node).sql_names()
    for name in names:
        lowered = name.lower()
        if lowered in DENIED_FUNCTIONS or lowered.startswith(DENIED_PREFIXES):
            raise UsageError(f"--query: function {lowered} is not allowed in a readback")


def _tables_read(statement: exp.Expr, store: str) -> tuple[Table, ...]:
    """The named tables, schema-qualified as written, excluding the query's own CTEs."""
    ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    found: list[Table] = []
    for table in statement.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # a function in FROM: checked as a function above
        parts = [part for part in (table.args.get("catalog"), table.args.get("db")) if part]
        if not parts and table.name in ctes:
            continue
        name = tuple(_server_name(part, store) for part in [*parts, table.this])
        if name not in found:
            found.append(name)
    return tuple(found)


def _server_name(identifier: exp.Expr, store: str) -> str:
    """PostgreSQL folds an unquoted identifier to lower case; the others compare as written."""
    name = identifier.name
    quoted = isinstance(identifier, exp.Identifier) and identifier.args.get("quoted")
    return name.lower() if store == "postgresql" and not quoted else name
