"""``claim report``: the dashboard's stats page as one self-contained HTML file.

The file holds its CSS and its SVG charts inline and links nowhere, so it can be mailed, archived
or opened from disk with no service running. The figures come from the ledger database itself,
opened read-only (no key: nothing can be appended through it), or from a running service's
``GET /v1/stats`` when given its http(s) URL.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx

from .._files import write_atomic
from .._json import decode_bytes, loads
from ..errors import ClaimError
from . import _pages
from .ledger import Ledger, LedgerError
from .records import STATES, EntryFilter, StateCounts, Stats

_HTTP_TIMEOUT_S = 30.0
_MAX_STATS_BYTES = 4 * 1024 * 1024  # a day per row for years, and ten codes: far below this

T = TypeVar("T")


def stats_at(url: str) -> Stats:
    """The stats over every entry: from the ledger database at ``url`` (a database URL or a
    SQLite path), or from the service at an http(s) URL."""
    if url.startswith(("http://", "https://")):
        return service_stats(url)
    return ledger_stats(url)


def ledger_stats(url: str) -> Stats:
    # Read-only: without a key the ledger refuses to append, and to create a missing file.
    ledger = Ledger.open(url, key=None)
    try:
        return ledger.stats(EntryFilter())
    finally:
        ledger.close()


def service_stats(base_url: str) -> Stats:
    """``GET /v1/stats`` of the service at ``base_url``, read back into ``Stats``. A service
    that cannot be reached, or answers anything but stats, is a ``LedgerError``: the service
    holding the ledger failed, as a database that cannot be read does."""
    url = base_url.rstrip("/") + "/v1/stats"
    body = bytearray()
    try:
        with httpx.stream("GET", url, timeout=_HTTP_TIMEOUT_S) as answer:
            for chunk in answer.iter_bytes():
                body += chunk
                if len(body) > _MAX_STATS_BYTES:
                    raise LedgerError(f"{url}: the answer is over {_MAX_STATS_BYTES} bytes")
    except httpx.HTTPError as error:
        raise LedgerError(f"cannot read {url}: {error}") from None
    try:
        document = loads(decode_bytes(bytes(body), _MAX_STATS_BYTES))
    except ClaimError as error:
        raise LedgerError(f"{url} answered {answer.status_code}, not JSON: {error}") from None
    if answer.status_code != httpx.codes.OK:
        said = document.get("error") if isinstance(document, dict) else None
        raise LedgerError(f"{url} answered {answer.status_code}: {said or 'no reason given'}")
    return stats_from_json(document, url)


def stats_from_json(document: object, source: str) -> Stats:
    """The service's stats JSON as ``Stats``; anything off is one ``LedgerError`` line naming
    the place."""
    top = _get(document, source, dict)

    def field(name: str, kind: type[T]) -> T:
        return _get(top.get(name), f"{source}: {name}", kind)

    def rows(name: str, make: Callable[[dict[str, Any], str], T]) -> tuple[T, ...]:
        return tuple(
            make(_get(row, f"{source}: {name}[{n}]", dict), f"{source}: {name}[{n}]")
            for n, row in enumerate(field(name, list))
        )

    def labelled(key: str) -> Callable[[dict[str, Any], str], tuple[str, StateCounts]]:
        return lambda row, place: (_get(row.get(key), f"{place}.{key}", str), _counts(row, place))

    def day(row: dict[str, Any], place: str) -> tuple[date, StateCounts]:
        try:
            when = date.fromisoformat(_get(row.get("day"), f"{place}.day", str))
        except ValueError:
            raise LedgerError(f"{place}.day: not a YYYY-MM-DD date") from None
        return when, _counts(row, place)

    def unmet(row: dict[str, Any], place: str) -> tuple[str, int]:
        return _get(row.get("code"), f"{place}.code", str), _count(row.get("count"), place)

    # Read in the document's order, so the first problem reported is the first one in it.
    total = _counts(field("total", dict), f"{source}: total")
    by_day = rows("by_day", day)
    by_agent = rows("by_agent", labelled("agent"))
    by_policy = rows("by_policy", labelled("policy"))
    # A service older than the split sends none: its counts are then shown undivided.
    by_decided_by = rows("by_decided_by", labelled("decided_by")) if "by_decided_by" in top else ()
    top_unmet = rows("top_unmet", unmet)
    false_success = field("false_success", dict)
    return Stats(
        total=total,
        by_day=by_day,
        by_agent=by_agent,
        by_policy=by_policy,
        by_decided_by=by_decided_by,
        top_unmet=top_unmet,
        said_done=_count(false_success.get("said_done"), f"{source}: false_success.said_done"),
        said_done_refuted=_count(false_success.get("refuted"), f"{source}: false_success.refuted"),
    )


def render_report(stats: Stats, written_at: datetime) -> str:
    return _pages.render_stats(stats, standalone=True, generated_at=written_at)


def write_report(url: str, path: Path, written_at: datetime) -> None:
    """Write the report for the ledger (or service) at ``url`` to ``path`` in one step: a reader
    of ``path`` sees the previous report or this one, never half of it."""
    write_atomic(path, render_report(stats_at(url), written_at).encode("utf-8"))


def _counts(row: dict[str, Any], place: str) -> StateCounts:
    return StateCounts(**{state: _count(row.get(state), f"{place}.{state}") for state in STATES})


def _get(value: object, place: str, kind: type[T]) -> T:
    if not isinstance(value, kind):
        raise LedgerError(f"{place}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _count(value: object, place: str) -> int:
    # ``type() is``: true is an int to Python, never a count to JSON.
    if type(value) is not int or value < 0:
        raise LedgerError(f"{place}: expected a count (a whole number of 0 or more)")
    return value
