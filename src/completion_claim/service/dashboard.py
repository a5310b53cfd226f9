"""The web dashboard: the claims list (and its CSV and JSON exports), one claim with its ledger
proof, the stats page and one agent's page.

HTML only, rendered on the server (``_pages``), with no script at all: every response carries a
Content-Security-Policy that forbids scripts, so even a string that slipped past escaping could
not run. Handlers read the ledger from ``request.app.state``; errors become an HTML page whose
status comes from the service's one table (``errors.status_for``).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from ..errors import ClaimError, InvalidDocument
from ..gate.reason import agent_reason
from ..model import parse_claim, parse_policy
from ..timefmt import parse_time
from ..trust.canonical import canonical_bytes
from ..verify import verify
from . import _pages
from .errors import UNEXPECTED, BadParameter, NotFound, one_line, status_for
from .gate_service import operator_config
from .ledger import Ledger
from .merkle import leaf_hash, verify_inclusion
from .records import STATES, Entry, EntryFilter
from .screenshots import read_screenshot, screenshot_reference
from .tree_head import check_tree_head

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data: 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
PAGE_SIZE = 50
EXPORT_PAGE = 200  # entries an export reads at a time (and no more than the ledger's page bytes)
EXPORT_COLUMNS = (
    *("index", "recorded_at", "state", "agent", "task", "policy", "via", "decided_by"),
    *("independence", "start_index"),
    *("unmet", "outcome", "url"),
)
# What a spreadsheet reads as the start of a formula (OWASP's list): such a cell gets a leading
# apostrophe, so an agent's name or outcome stays text when the operator opens the export.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# The dashboard has no work tree: a failed test is named as its report named it.
_NO_TREE = Path("/nonexistent")
_INDEX_DIGITS = 18
_READ = ["GET", "HEAD"]  # HEAD too: link checkers and monitors ask for a page's headers only

_log = logging.getLogger("completion_claim.service")

router = APIRouter(include_in_schema=False)  # pages, not API: kept out of /openapi.json


@router.api_route("/", methods=_READ, response_class=HTMLResponse)
def claims_list(request: Request) -> HTMLResponse:
    form = {name: request.query_params.get(name, "").strip() for name in _pages.FILTER_FIELDS}
    try:
        flt = parse_filter(form)
        before = _before(request.query_params.get("before", ""))
        page = _ledger(request).page(flt, before=before, limit=PAGE_SIZE)
        count = _ledger(request).count(flt)
    except ClaimError as error:
        return _error_page(error)
    older = None if page.next_before is None else _pages.older_url(form, page.next_before)
    return _html(_pages.render_list(page, form, older, count))


@router.api_route("/claims.csv", methods=_READ, response_model=None)
def export_csv(request: Request) -> Response:
    """The list as filtered, every page of it, as CSV: one row per claim, newest first."""
    return _export(request, "csv")


@router.api_route("/claims.json", methods=_READ, response_model=None)
def export_json(request: Request) -> Response:
    """The list as filtered, every page of it, as one JSON array of rows, newest first."""
    return _export(request, "json")


def _export(request: Request, kind: str) -> Response:
    form = {name: request.query_params.get(name, "").strip() for name in _pages.FILTER_FIELDS}
    try:
        flt = parse_filter(form)
    except ClaimError as error:
        return _error_page(error)
    rows = _entries(_ledger(request), flt)
    body = csv_lines(rows) if kind == "csv" else json_lines(rows)
    media = "text/csv; charset=utf-8" if kind == "csv" else "application/json"
    return StreamingResponse(
        body,
        media_type=media,
        headers={
            "Content-Disposition": f'attachment; filename="claims.{kind}"',
            "Content-Security-Policy": "default-src 'none'",  # a file to save, never a page
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        },
    )


def _entries(ledger: Ledger, flt: EntryFilter) -> Iterator[dict[str, object]]:
    """Every matching claim, newest first, read a page at a time: an export of a large ledger
    holds one page in memory, never the whole list. An index below the first page's stays put
    (the log only grows), so the pages neither skip nor repeat an entry."""
    before: int | None = None
    while True:
        page = ledger.page(flt, before=before, limit=EXPORT_PAGE)
        for entry in page.items:
            yield _pages.export_row(entry)
        if page.next_before is None:
            return
        before = page.next_before


def csv_lines(rows: Iterator[dict[str, object]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for row in rows:
        writer.writerow([_csv_cell(row[column]) for column in EXPORT_COLUMNS])
        yield _drain(buffer)
    yield _drain(buffer)


def json_lines(rows: Iterator[dict[str, object]]) -> Iterator[str]:
    yield "["
    separator = "\n"
    for row in rows:
        yield separator + json.dumps(row, ensure_ascii=False)
        separator = ",\n"
    yield "\n]\n"


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    text = " ".join(str(code) for code in value) if isinstance(value, list) else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


@router.api_route("/claims/{index}", methods=_READ, response_class=HTMLResponse)
def claim_page(request: Request, index: str) -> HTMLResponse:
    try:
        number = _index(index)
        entry = None if number is None else _ledger(request).get(number)
        if entry is None:
            raise NotFound(f"the ledger holds no claim {index[:40]!r}")
    except ClaimError as error:
        return _error_page(error)
    return _html(_pages.render_claim(entry, proof_status(request, entry), for_agent(entry)))


@router.api_route("/claims/{index}/screenshots/{position}", methods=_READ, response_model=None)
def screenshot(request: Request, index: str, position: str) -> Response:
    """The screenshot a page check of the service's own gate kept (``screenshots`` says which
    files qualify); anything else is not found."""
    try:
        number, place = _index(index), _index(position)
        entry = None if number is None else _ledger(request).get(number)
        reference = None if entry is None or place is None else screenshot_reference(entry, place)
        if reference is None:
            raise NotFound(f"claim {index[:40]!r} has no screenshot {position[:40]!r}")
        try:
            config, _ = operator_config(request.app.state.settings, os.environ)
        except ClaimError:
            raise NotFound("this service runs no gate, so it keeps no screenshots") from None
        image = read_screenshot(config.runs_dir, reference)
        if image is None:
            raise NotFound(f"claim {index[:40]!r}: the screenshot is missing or was changed")
    except ClaimError as error:
        return _error_page(error)
    return Response(
        image,
        media_type="image/png",
        headers={
            "Content-Security-Policy": "default-src 'none'",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        },
    )


@router.api_route("/stats", methods=_READ, response_class=HTMLResponse)
def stats_page(request: Request) -> HTMLResponse:
    form = {name: request.query_params.get(name, "").strip() for name in _pages.RANGE_FIELDS}
    try:
        stats = _ledger(request).stats(parse_filter(form))
    except ClaimError as error:
        return _error_page(error)
    return _html(_pages.render_stats(stats, form=form))


@router.api_route("/agent", methods=_READ, response_class=HTMLResponse)
def agent_page(request: Request) -> HTMLResponse:
    """One agent's stats: its verdicts over time, its false-success rate, its top unmet codes.
    The name is a query parameter: it is the submitter's text, slashes and all."""
    form = {name: request.query_params.get(name, "").strip() for name in _pages.RANGE_FIELDS}
    agent = request.query_params.get("agent", "")
    try:
        if not agent:
            raise BadParameter("agent: name the agent (/agent?agent=NAME)")
        stats = _ledger(request).stats(parse_filter({**form, "agent": agent}))
    except ClaimError as error:
        return _error_page(error)
    return _html(_pages.render_stats(stats, form=form, agent=agent))


def for_agent(entry: Entry) -> list[str]:
    """What the gate tells the agent about this decision (spec 9.4), one line each: the entry's
    claim judged again under its policy at its decision time, which gives its verdict (10.2).
    A judgement that does not come out as recorded (a signed claim, judged here without the
    keys) shows no lines rather than other ones."""
    if entry.state == "verified":
        return []
    try:
        claim = parse_claim(entry.claim)
        policy = parse_policy(entry.policy, "policy")
        verdict = verify(claim, parse_time(str(entry.verdict["decided_at"]), "decided_at"), policy)
    except (ClaimError, KeyError):
        return []
    if verdict.to_json() != entry.verdict:
        return []
    return [line for line in agent_reason(claim, verdict, _NO_TREE).splitlines() if line.strip()]


def parse_filter(form: Mapping[str, str]) -> EntryFilter:
    """The list's filter form; an empty field means "any". Times are RFC 3339, or a date for
    midnight UTC starting it (what a reader types)."""
    state = form.get("state") or None
    if state is not None and state not in STATES:
        raise BadParameter(f"state: {state[:40]!r} is not one of {', '.join(STATES)}")
    return EntryFilter(
        state=state,
        policy=form.get("policy") or None,
        agent=form.get("agent") or None,
        task=form.get("task") or None,
        unmet=form.get("unmet") or None,
        since=_moment(form.get("since", ""), "since"),
        until=_moment(form.get("until", ""), "until"),
    )


def proof_status(request: Request, entry: Entry) -> _pages.ProofStatus:
    """Whether the log provably holds this entry as shown: the current tree head's signature
    checks with the service's key, the proof's leaf is the hash of these very contents, and
    the audit path leads from it to the signed root."""
    try:
        head = _ledger(request).tree_head()
        check_tree_head(head, _ledger(request).log_key)
        if entry.index >= head.size:
            return _pages.ProofStatus(
                ok=False,
                text=f"not proven yet: sequenced at index {entry.index}, not yet under a signed "
                f"tree head (the latest has size {head.size}; one comes within the merge delay)",
            )
        proof = _ledger(request).inclusion_proof(entry.index, head.size)
        verify_inclusion(proof, head.root_hash)
    except ClaimError as error:
        return _pages.ProofStatus(ok=False, text=f"not proven: {one_line(str(error))}")
    # The proof is for the log's leaf; it proves this page only if that leaf is these contents.
    if proof.leaf_hash != leaf_hash(canonical_bytes(entry.leaf_document())).hex():
        return _pages.ProofStatus(
            ok=False, text="not proven: the log's leaf is not the hash of this entry's contents"
        )
    return _pages.ProofStatus(
        ok=True, text=f"included in the signed tree of size {head.size} (root {head.root_hash})"
    )


def _moment(text: str, name: str) -> datetime | None:
    if not text:
        return None
    try:
        day = date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        day = None
    if day is not None:
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    try:
        return parse_time(text, name)
    except InvalidDocument as error:
        raise BadParameter(f"{name}: {error.problem} (a date, or an RFC 3339 time)") from None


def _before(text: str) -> int | None:
    if not text:
        return None
    number = _index(text)
    if number is None:
        raise BadParameter(f"before: {text[:40]!r} is not an entry index")
    return number


def _index(text: str) -> int | None:
    """An entry index as written in a URL: ASCII digits only, and small enough for a database
    integer (no log holds 10**18 entries)."""
    if not (text.isascii() and text.isdigit()) or len(text) > _INDEX_DIGITS:
        return None
    return int(text)


def _ledger(request: Request) -> Ledger:
    ledger: Ledger = request.app.state.ledger
    return ledger


def _html(page: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(
        page,
        status_code=status,
        headers={
            "Content-Security-Policy": CONTENT_SECURITY_POLICY,
            "Referrer-Policy": "no-referrer",
        },
    )


def _error_page(error: ClaimError) -> HTMLResponse:
    status = status_for(error)
    if status is None:
        # Not the reader's fault, and its text may hold a path or a URL: the log gets it.
        _log.error("dashboard page failed", exc_info=error)
        return _html(_pages.render_error(500, UNEXPECTED), 500)
    return _html(_pages.render_error(status, one_line(str(error))), status)
