"""Which ``--query`` text a readback may run: one plain SELECT, calling only allowed functions.

The read-only transaction and a role that can only read are what stop writes; this check comes
first and refuses, before any connection, what those two do not stop or what a privileged role
could do: ``COPY ... TO PROGRAM`` (a read as far as a read-only transaction is concerned),
``SELECT ... INTO``, locking clauses, writing CTEs, statements other than SELECT, comments (the
server runs MariaDB's ``/*! ... */`` as code), any function not on the store's allow-list
(:data:`ALLOWED_FUNCTIONS`) and any cast to a type not in :data:`ALLOWED_TYPES`.

The parser is sqlglot, in the dialect of the store. A statement it cannot parse, or more than
one, is refused: what is not understood is not run. Function names are not taken from its tree
(it maps names to its own nodes, and reads PostgreSQL's ``U&"..."`` as an operator) but from the
text, as the server reads it: every name followed by a parenthesis is a call unless it is SQL
syntax there, its quoting and case are resolved as the server resolves them, and a name
qualified by a schema is refused unless the schema is PostgreSQL's ``pg_catalog``.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .._optional import needs_extra
from ..errors import UsageError
from .readback_sql import Table

with needs_extra("observe", "readback --query"):
    import sqlglot
    from sqlglot import Token, TokenType, exp
    from sqlglot.errors import ParseError, TokenError

DIALECTS = {"postgresql": "postgres", "mariadb": "mysql", "sqlite": "sqlite"}
DIALECT_NAMES = {"postgresql": "PostgreSQL", "mariadb": "MariaDB", "sqlite": "SQLite"}
ALLOWED_SEE = "see docs/spec.md, section 7.3"

# Functions that only compute from their arguments, by category, as each server names them:
# comparison and conditional, string, date and time, math, JSON, aggregates and window
# functions, and the set-returning functions a FROM clause needs. Everything else (server
# files, settings, sessions, locks, sequences, SQL given as a string, XML) is refused.
_POSTGRESQL = """
    coalesce nullif greatest least num_nulls num_nonnulls
    lower upper initcap length char_length character_length octet_length bit_length
    substring substr position strpos overlay trim btrim ltrim rtrim lpad rpad left right
    replace translate concat concat_ws split_part reverse repeat starts_with ascii chr md5
    to_hex regexp_replace regexp_match regexp_like regexp_count regexp_substr
    string_to_array array_to_string
    now current_date current_time current_timestamp localtime localtimestamp
    clock_timestamp statement_timestamp transaction_timestamp date_trunc date_part date_bin
    extract age make_date make_time make_timestamp make_timestamptz make_interval to_char
    to_date to_timestamp to_number justify_days justify_hours justify_interval isfinite
    abs ceil ceiling floor round trunc mod power sqrt cbrt exp ln log log10 sign div pi
    degrees radians width_bucket gcd lcm scale
    json_extract_path json_extract_path_text jsonb_extract_path jsonb_extract_path_text
    json_typeof jsonb_typeof json_array_length jsonb_array_length json_object_keys
    jsonb_object_keys json_build_object jsonb_build_object json_build_array jsonb_build_array
    to_json to_jsonb row_to_json jsonb_strip_nulls jsonb_path_exists jsonb_path_query_first
    json_each jsonb_each json_each_text jsonb_each_text json_array_elements
    jsonb_array_elements json_array_elements_text jsonb_array_elements_text
    count sum avg min max bool_and bool_or every string_agg array_agg json_agg jsonb_agg
    json_object_agg jsonb_object_agg
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
    array_length cardinality array_position unnest generate_series
"""
_MARIADB = """
    coalesce ifnull nullif if isnull greatest least
    lower lcase upper ucase length char_length character_length octet_length substring substr
    mid left right trim ltrim rtrim lpad rpad replace concat concat_ws locate instr position
    reverse repeat space find_in_set strcmp substring_index hex unhex md5 sha1 sha2 ascii
    char regexp_replace regexp_substr regexp_instr
    now curdate current_date curtime current_time current_timestamp utc_date utc_time
    utc_timestamp date time year month day dayofmonth dayofweek dayofyear hour minute second
    week weekday quarter date_add date_sub adddate subdate datediff timediff timestampdiff
    timestampadd date_format str_to_date from_unixtime unix_timestamp last_day makedate
    extract to_days from_days
    abs ceil ceiling floor round truncate mod power pow sqrt exp ln log log2 log10 sign pi
    json_extract json_unquote json_value json_query json_contains json_contains_path
    json_length json_type json_keys json_valid json_object json_array json_search
    json_arrayagg json_objectagg
    count sum avg min max group_concat
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
    convert
"""
_SQLITE = """
    coalesce ifnull iif nullif typeof
    lower upper length substr substring trim ltrim rtrim replace instr printf format hex char
    unicode concat concat_ws
    date time datetime julianday strftime unixepoch
    abs round ceil ceiling floor trunc mod pow power sqrt exp ln log log10 sign pi
    json json_extract json_array json_object json_type json_valid json_array_length json_each
    json_tree json_group_array json_group_object
    count sum total avg min max group_concat
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
"""
ALLOWED_FUNCTIONS = {
    store: frozenset(names.split())
    for store, names in (("postgresql", _POSTGRESQL), ("mariadb", _MARIADB), ("sqlite", _SQLITE))
}
# The schema whose functions may be named outright (PostgreSQL's own; a function in any other
# schema, public included, can have any body). MariaDB and SQLite take no qualified function:
# on MariaDB a qualified name is a stored function.
CATALOG_SCHEMA = {"postgresql": "pg_catalog"}

# The types a cast may name: numbers, text, time, truth, JSON, UUID, bytes (and arrays of
# them). Not XML (its parser), not a type of a schema (a domain's CHECK runs any function).
_TYPES = """
    ARRAY BIGINT BINARY BLOB BOOLEAN BPCHAR CHAR CHARACTER_SET DATE DATETIME DECIMAL DOUBLE FLOAT
    INT INTERVAL JSON JSONB LONGTEXT MEDIUMINT MEDIUMTEXT NCHAR NVARCHAR SMALLINT TEXT TIME
    TIMESTAMP TIMESTAMPLTZ TIMESTAMPTZ TIMETZ TINYINT TINYTEXT UBIGINT UDECIMAL UINT UMEDIUMINT
    USMALLINT UTINYINT UUID VARBINARY VARCHAR YEAR
"""
ALLOWED_TYPES = frozenset(getattr(exp.DType, name) for name in _TYPES.split())

# Words a parenthesis may follow that are SQL syntax, never a call, on each server when written
# unquoted (quoted, each is a function name): tried on each server, as a name a function of the
# database could take is called there.
_COMMON_SYNTAX = """
    select from where and or not in exists as on using union intersect except distinct when
    then else case between having cast limit
"""
_SYNTAX = {
    "postgresql": frozenset(
        f"{_COMMON_SYNTAX} any all some values to with window array row offset for lateral".split()
    ),
    "mariadb": frozenset(f"{_COMMON_SYNTAX} any all some to with window row offset for".split()),
    "sqlite": frozenset(f"{_COMMON_SYNTAX} all values to".split()),
}
# Words that are syntax only after an operand (``x LIKE (...)``, ``t JOIN (...)``, ``f(x) OVER
# (...)``) or after a given word; elsewhere the server calls a function of that name.
_AFTER_OPERAND = frozenset(
    {"join", "like", "ilike", "is", "similar", "escape", "div", "xor", "regexp", "rlike", "glob"}
    | {"over", "filter", "against"}
)
_AFTER_WORD = {
    "by": ("order", "group", "partition"),
    "zone": ("time",),
    "materialized": ("as", "not"),
}
_OPERAND_ENDS = frozenset(
    {
        TokenType.R_PAREN,
        TokenType.R_BRACKET,
        TokenType.NUMBER,
        TokenType.STRING,
        TokenType.NATIONAL_STRING,
        TokenType.BYTE_STRING,
        TokenType.HEX_STRING,
        TokenType.BIT_STRING,
        TokenType.HEREDOC_STRING,
        TokenType.UNICODE_STRING,
        TokenType.PLACEHOLDER,
    }
)

# Operators every comparison may resolve to on PostgreSQL, though the text names them by
# keyword (LIKE is ~~, BETWEEN is >= and <=, IN is =).
_IMPLIED_OPERATORS = ("=", "<>", "<", ">", "<=", ">=", "~~", "~~*", "!~~", "!~~*")
_OPERATOR = re.compile(r"[-+*/<>=~!@#%^&|`?]+")

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


@dataclass(frozen=True)
class CheckedQuery:
    """What the check found in a plain SELECT: the tables it reads, the functions it calls (on
    PostgreSQL also every name a ``row.name`` could call a function by) and, on PostgreSQL, the
    operators it uses: the names the server looks up on the search path."""

    tables: tuple[Table, ...]
    functions: tuple[str, ...]
    operators: tuple[str, ...]


@dataclass(frozen=True)
class _Name:
    """A name as the server reads it, from one token (or the three of PostgreSQL's U&"...")."""

    text: str  # case-folded as the server folds it
    quoted: bool
    keyword: bool  # a word the parser knows as a keyword (a plain name is not one)
    unicode_escapes: bool
    start: int
    end: int  # the last character's offset


def check_query(query: str, store: str) -> CheckedQuery:
    """Prove that ``query`` is one plain SELECT for ``store`` calling only allowed functions.

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
        _refuse_type(node)
    names = _names(query, tokens, store)
    functions = _calls(names, store, _alias_starts(statement))
    if store != "postgresql":
        return CheckedQuery(_tables_read(statement, store), tuple(dict.fromkeys(functions)), ())
    return CheckedQuery(
        _tables_read(statement, store),
        tuple(dict.fromkeys([*functions, *_dotted_names(names)])),
        _operators(tokens),
    )


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


def _refuse_type(node: exp.Expr) -> None:
    if isinstance(node, exp.DataType) and node.this not in ALLOWED_TYPES:
        name = node.this.value if isinstance(node.this, exp.DType) else str(node.this)
        shown = node.sql() if node.this == exp.DType.USERDEFINED else name
        raise UsageError(f"--query: a cast to {shown.lower()} is not allowed ({ALLOWED_SEE})")


def _calls(names: Sequence[Token | _Name], store: str, aliases: set[int]) -> list[str]:
    """The functions the text calls, each checked against the store's allow-list."""
    called: list[str] = []
    for index, item in enumerate(names):
        after = names[index + 1] if index + 1 < len(names) else None
        if not isinstance(item, _Name) or not _is(after, TokenType.L_PAREN):
            continue
        before = names[index - 1] if index else None
        if (
            _is_syntax(item, before, store)
            or _is(before, TokenType.DCOLON)
            or _is_word(before, "as")
        ):
            continue  # a type's modifiers (::varchar(10), AS numeric(10, 2)) or alias columns
        if item.start in aliases:
            continue  # a table alias or a CTE naming its columns
        if not item.quoted and item.text == "operator":
            raise UsageError(
                "--query: OPERATOR(...) is not allowed (it calls any schema's operator)"
            )
        qualifier = _qualifier(names, index)
        shown = f"{qualifier}.{item.text}" if qualifier is not None else item.text
        if item.text not in ALLOWED_FUNCTIONS[store]:
            raise UsageError(f"--query: function {shown} is not allowed (allowed: {ALLOWED_SEE})")
        if qualifier is not None and qualifier != CATALOG_SCHEMA.get(store):
            raise UsageError(
                f"--query: function {shown} is not allowed (a schema's function is the "
                f"database's own, with any body; write {item.text})"
            )
        _refuse_stored_function_spelling(item, after, store)
        called.append(item.text)
    for item in names:
        if isinstance(item, _Name) and item.unicode_escapes:
            raise UsageError(
                '--query: U&"..." identifiers are not allowed (the parser reads them as an '
                "operator); write the name plainly"
            )
    return called


def _refuse_stored_function_spelling(name: _Name, paren: Token | _Name | None, store: str) -> None:
    """MariaDB calls the database's stored function of a built-in's name when the name is
    quoted, or (for SUM, COUNT, ...) when a space comes before the parenthesis."""
    if store != "mariadb":
        return
    assert isinstance(paren, Token)
    if name.quoted:
        raise UsageError(
            f"--query: function `{name.text}`: a quoted name calls the database's stored "
            f"function of that name on MariaDB; write {name.text} unquoted"
        )
    if paren.start != name.end + 1:
        raise UsageError(
            f"--query: function {name.text}: a space before the parenthesis calls the "
            f"database's stored function of that name on MariaDB; write {name.text}("
        )


def _is(item: Token | _Name | None, *kinds: TokenType) -> bool:
    return isinstance(item, Token) and item.token_type in kinds


def _is_word(item: Token | _Name | None, *words: str) -> bool:
    return isinstance(item, _Name) and not item.quoted and item.text in words


def _is_syntax(name: _Name, before: Token | _Name | None, store: str) -> bool:
    if name.quoted:
        return False
    if name.text in _SYNTAX[store]:
        return True
    if name.text in _AFTER_OPERAND:
        if isinstance(before, _Name):
            return not before.keyword or before.text in ("null", "true", "false")
        return before is not None and before.token_type in _OPERAND_ENDS
    return _is_word(before, *_AFTER_WORD.get(name.text, ()))


def _qualifier(names: Sequence[Token | _Name], index: int) -> str | None:
    """The schema before ``schema.name(``; a longer path is shown whole, so it is refused."""
    parts: list[str] = []
    while index >= 2 and _is(names[index - 1], TokenType.DOT):
        part = names[index - 2]
        parts.insert(0, part.text)
        index -= 2
    return ".".join(parts) if parts else None


_WORD = re.compile(r"[^\W\d][\w$]*")


def _names(query: str, tokens: Sequence[Token], store: str) -> list[Token | _Name]:
    """The tokens, with each name (a word or a quoted identifier) read as the server reads it."""
    out: list[Token | _Name] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        unicode = _unicode_identifier(tokens, index) if store == "postgresql" else None
        if unicode is not None:
            out.append(unicode)
            index += 3
            continue
        if token.token_type == TokenType.IDENTIFIER:
            text = token.text if store == "postgresql" else _ascii_lower(token.text)
            out.append(_Name(text, True, False, False, token.start, token.end))
        elif _WORD.fullmatch(token.text) and query[token.start : token.end + 1] == token.text:
            # An unquoted word: PostgreSQL folds ASCII letters only; the others ignore case.
            keyword = token.token_type != TokenType.VAR
            out.append(
                _Name(_ascii_lower(token.text), False, keyword, False, token.start, token.end)
            )
        else:
            out.append(token)
        index += 1
    return out


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _unicode_identifier(tokens: Sequence[Token], index: int) -> _Name | None:
    """``U&"..."`` starting at ``index``, which sqlglot reads as a column ``U``, an ``&`` and a
    quoted name, decoded as PostgreSQL does. (With ``UESCAPE`` after it, sqlglot cannot parse
    the statement, which is refused before this.)"""
    if index + 2 >= len(tokens):
        return None
    u, amp, quoted = tokens[index : index + 3]
    if not (
        u.text in ("U", "u")
        and amp.token_type == TokenType.AMP
        and quoted.token_type == TokenType.IDENTIFIER
        and amp.start == u.end + 1
        and quoted.start == amp.end + 1
    ):
        return None
    text = re.sub(
        r"\\(\\|\+[0-9A-Fa-f]{6}|[0-9A-Fa-f]{4})",
        lambda escape: "\\" if escape[1] == "\\" else chr(int(escape[1].lstrip("+"), 16)),
        quoted.text,
    )
    return _Name(text, True, False, True, u.start, quoted.end)


def _alias_starts(statement: exp.Expr) -> set[int]:
    """Where a name followed by its columns is an alias (``AS t(a, b)``, ``WITH c(a) AS``)."""
    starts: set[int] = set()
    for alias in statement.find_all(exp.TableAlias):
        identifier = alias.this
        if isinstance(identifier, exp.Identifier) and alias.columns and "start" in identifier.meta:
            starts.add(identifier.meta["start"])
    return starts


def _dotted_names(names: Sequence[Token | _Name]) -> list[str]:
    """PostgreSQL reads ``row.name`` (``t.zip``, ``(t).zip``) as ``name(row)`` when the row has
    no such column."""
    return [
        item.text
        for before, item in itertools.pairwise(names)
        if isinstance(item, _Name) and _is(before, TokenType.DOT)
    ]


def _operators(tokens: Sequence[Token]) -> tuple[str, ...]:
    found = [token.text for token in tokens if _OPERATOR.fullmatch(token.text)]
    return tuple(dict.fromkeys([*_IMPLIED_OPERATORS, *found]))


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
    """PostgreSQL folds an unquoted identifier's ASCII letters to lower case (``É`` stays); the
    others compare as written."""
    name = identifier.name
    quoted = isinstance(identifier, exp.Identifier) and identifier.args.get("quoted")
    return _ascii_lower(name) if store == "postgresql" and not quoted else name
