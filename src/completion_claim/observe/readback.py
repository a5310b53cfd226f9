"""state_readback observed: read one record back from its system of record.

A store reader returns the record as a JSON object (values typed by ``values.to_json``), or
None when no record matches. The observation holds the asserted fields only; ``subject`` is the
digest of the whole record. A missing record is an observation (observed_value null, which
contradicts); not being able to read is an ObservationFailed, and so is an expectation naming a
field the record does not have: that is a broken check (a misspelt column), not evidence that
the agent's write is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._optional import require
from ..errors import ObservationFailed, UsageError
from ..model import ABSENT
from . import readback_sql
from ._common import Observation
from .readback_sql import QueryLookup, Reading, Record, Table, TableLookup, dotted, tables_read
from .values import (
    assignments,
    canonical_json,
    expected_value,
    libpq_params,
    redact_url,
    refuse_ambiguous_url,
    sha256_digest,
)

CHECK_TYPE = "state_readback"
SQL_STORES = ("postgresql", "mariadb", "sqlite")
FIELDS_LISTED = 20  # names of the record's fields shown when an expectation names another
STORE_FOR_SCHEME = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mariadb",
    "mariadb": "mariadb",
    "sqlite": "sqlite",
    "redis": "redis",
    "rediss": "redis",
    "http": "http",
    "https": "http",
}
# The one driver each store needs (SQLite's is the standard library), checked before anything
# else so that a missing one is named before the URL is judged by a parser that is not there.
DRIVERS = {
    "postgresql": ("psycopg", readback_sql.POSTGRESQL),
    "mariadb": ("pymysql", readback_sql.MARIADB),
    "redis": ("redis", "a Redis readback"),
    "http": ("httpx", "an HTTP readback"),
}


@dataclass(frozen=True)
class KeyLookup:
    """A Redis key."""

    key: str


@dataclass(frozen=True)
class ResourceLookup:
    """An HTTP resource: the URL itself names the record."""


Lookup = TableLookup | QueryLookup | KeyLookup | ResourceLookup


@dataclass(frozen=True)
class Readback:
    url: str
    store: str
    lookup: Lookup
    expect: dict[str, str]  # field -> VALUE as given; empty when the record must be absent
    timeout: float
    allow_privileged_role: bool = False
    allow_views: frozenset[Table] = frozenset()  # tables read that may be views

    @property
    def expects_absence(self) -> bool:
        return not self.expect

    @property
    def target(self) -> str:
        """The store (secrets redacted), the table or query, and the key."""
        where = redact_url(self.url)
        lookup = self.lookup
        if isinstance(lookup, TableLookup):
            keys = " and ".join(f"{column}={value}" for column, value in lookup.keys)
            return f"{where} table {lookup.table} where {keys}"
        if isinstance(lookup, QueryLookup):
            params = ", ".join(f"{name}={value}" for name, value in lookup.params)
            return f"{where} query {lookup.sql}" + (f" with {params}" if params else "")
        if isinstance(lookup, KeyLookup):
            return f"{where} key {lookup.key}"
        return where

    def failed_expected(self) -> dict[str, Any] | None:
        """What the check asserts, typed without an observation (recorded for a failed attempt)."""
        return self.expected_for({})

    def expected_for(self, record: Record) -> dict[str, Any] | None:
        if self.expects_absence:
            return None  # JSON null: the record must not exist (after a deletion)
        return {
            field: expected_value(text, record.get(field, ABSENT))
            for field, text in self.expect.items()
        }


def build_readback(
    url: str,
    table: str | None,
    keys: tuple[str, ...],
    query: str | None,
    params: tuple[str, ...],
    expect: tuple[str, ...],
    timeout: float,
    expect_absent: bool = False,
    allow_privileged_role: bool = False,
    allow_views: tuple[str, ...] = (),
) -> Readback:
    """Validate the options for the store the URL names; refuse what the store cannot do, and
    any --query that is not a plain SELECT, before connecting."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    store = STORE_FOR_SCHEME.get(scheme)
    if store is None:
        raise UsageError(
            f"URL {redact_url(url)!r}: expected postgresql://, mysql://, sqlite:///, redis:// "
            "or http(s)://"
        )
    if store in DRIVERS:
        module, for_what = DRIVERS[store]
        require(module, extra="observe", for_what=for_what)
    _check_url(url, store)
    if expect_absent and expect:
        raise UsageError("--expect-absent asserts that there is no record: drop --expect")
    if not expect and not expect_absent:
        raise UsageError(
            "--expect FIELD=VALUE (or --expect-absent) is required: a readback that asserts "
            "nothing cannot fail"
        )
    lookup: Lookup
    if store in SQL_STORES:
        lookup = _sql_lookup(store, table, keys, query, params)
    elif store == "redis":
        if table is not None or query is not None or params:
            raise UsageError(
                "a redis readback takes --key REDIS_KEY only (no --table, --query, --param)"
            )
        if len(keys) != 1:
            raise UsageError("a redis readback takes exactly one --key REDIS_KEY")
        lookup = KeyLookup(keys[0])
    else:
        if table is not None or keys or query is not None or params:
            raise UsageError(
                "an http(s) readback reads the URL itself: drop --table, --key, --query and --param"
            )
        from .endpoint import check_url  # noqa: PLC0415 - httpx, required above

        check_url(url)
        lookup = ResourceLookup()
    return Readback(
        url, store, lookup, assignments(expect, "--expect"), timeout, allow_privileged_role,
        _views_allowed(lookup, allow_views),
    )  # fmt: skip


def _views_allowed(lookup: Lookup, names: tuple[str, ...]) -> frozenset[Table]:
    """The tables read that ``--allow-view`` names, as the readback names them (``--table``, or
    the query's text as the server reads it: PostgreSQL folds an unquoted name's ASCII letters
    to lower case)."""
    if not names:
        return frozenset()
    if not isinstance(lookup, TableLookup | QueryLookup):
        raise UsageError("--allow-view goes with a SQL readback")
    read = {dotted(table): table for table in tables_read(lookup)}
    unknown = [name for name in names if name not in read]
    if unknown:
        listed = ", ".join(read) or "none"
        raise UsageError(
            f"--allow-view {unknown[0]}: the readback reads no such table (it reads: {listed})"
        )
    return frozenset(read[name] for name in names)


def _check_url(url: str, store: str) -> None:
    """Refuse a URL whose password its parser would misread, or that libpq cannot read: the
    driver would connect elsewhere, or quote the URL in its error. Only the scheme is shown."""
    if store == "sqlite":
        return
    refuse_ambiguous_url(url)
    if store == "postgresql" and libpq_params(url) is None:
        raise UsageError(
            f"URL {redact_url(url)!r}: libpq cannot read this URI (its message is not shown, "
            "as it quotes the URI); check the percent-encoding, the host and the option names"
        )


def _sql_lookup(
    store: str,
    table: str | None,
    keys: tuple[str, ...],
    query: str | None,
    params: tuple[str, ...],
) -> Lookup:
    if query is not None:
        if table is not None or keys:
            raise UsageError("--query replaces --table and --key; give one or the other")
        from .readback_query import check_query  # noqa: PLC0415 - sqlglot

        checked = check_query(query, store)
        return QueryLookup(
            query,
            tuple(assignments(params, "--param").items()),
            checked.tables,
            checked.functions,
            checked.operators,
        )
    if params:
        raise UsageError("--param goes with --query")
    if table is None or not keys:
        raise UsageError("a SQL readback needs --table T --key COL=VALUE, or --query SQL")
    return TableLookup(table, tuple(assignments(keys, "--key").items()))


def observe_readback(readback: Readback) -> Observation:
    """Read the record once and record the asserted fields as the store typed them."""
    reading = _read(readback)
    record = reading.record
    details: dict[str, Any] = {"store": readback.store}
    if reading.privileged_role:
        details["privileged_role"] = True
    if reading.views:
        details["views"] = list(reading.views)
    if record is None:
        details["record"] = "absent"
        return Observation(readback.target, readback.expected_for({}), None, details=details)
    if readback.expects_absence:
        # The record exists: an empty object differs from the expected null, and the digest
        # identifies the record without copying its fields into the claim.
        details["record"] = "present"
        return Observation(
            readback.target, None, {}, subject=sha256_digest(canonical_json(record)),
            details=details,
        )  # fmt: skip
    _refuse_missing_fields(readback, record)
    return Observation(
        target=readback.target,
        expected=readback.expected_for(record),
        observed_value={field: record[field] for field in readback.expect},
        subject=sha256_digest(canonical_json(record)),
        details=details,
    )


def _refuse_missing_fields(readback: Readback, record: Record) -> None:
    """An expectation on a field the record does not have cannot be judged: the check is broken
    (a misspelt column, a query that does not select it), so nothing is observed."""
    missing = [field for field in readback.expect if field not in record]
    if not missing:
        return
    kind = "column" if readback.store in SQL_STORES else "field"
    names = list(record)
    listed = ", ".join(names[:FIELDS_LISTED]) + (", ..." if len(names) > FIELDS_LISTED else "")
    raise ObservationFailed(
        f"readback from {readback.target}: --expect {', '.join(missing)}: no such {kind} in "
        f"the record ({kind}s: {listed or 'none'})"
    )


def _read(readback: Readback) -> Reading:
    lookup = readback.lookup
    if isinstance(lookup, TableLookup | QueryLookup):
        read_sql: Callable[
            [str, TableLookup | QueryLookup, float, bool, frozenset[Table]], Reading
        ] = {
            "postgresql": readback_sql.read_postgresql,
            "mariadb": readback_sql.read_mariadb,
            "sqlite": readback_sql.read_sqlite,
        }[readback.store]
        return read_sql(
            readback.url, lookup, readback.timeout, readback.allow_privileged_role,
            readback.allow_views,
        )  # fmt: skip
    if isinstance(lookup, KeyLookup):
        from .readback_redis import read_redis  # noqa: PLC0415 - redis

        return Reading(read_redis(readback.url, lookup.key, readback.timeout))
    from .readback_http import read_http  # noqa: PLC0415 - httpx

    return Reading(read_http(readback.url, readback.timeout))
