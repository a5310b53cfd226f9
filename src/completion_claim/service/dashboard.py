"""The web dashboard: the claims list, one claim with its ledger proof, and the stats page.

HTML only, rendered on the server (``_pages``), with no script at all: every response carries a
Content-Security-Policy that forbids scripts, so even a string that slipped past escaping could
not run. Handlers read the ledger from ``request.app.state``; errors become an HTML page whose
status comes from the service's one table (``errors.status_for``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import UTC, date, datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from ..errors import ClaimError, InvalidDocument
from ..timefmt import parse_time
from ..trust.canonical import canonical_bytes
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
    except ClaimError as error:
        return _error_page(error)
    older = None if page.next_before is None else _pages.older_url(form, page.next_before)
    return _html(_pages.render_list(page, form, older))


@router.api_route("/claims/{index}", methods=_READ, response_class=HTMLResponse)
def claim_page(request: Request, index: str) -> HTMLResponse:
    try:
        number = _index(index)
        entry = None if number is None else _ledger(request).get(number)
        if entry is None:
            raise NotFound(f"the ledger holds no claim {index[:40]!r}")
    except ClaimError as error:
        return _error_page(error)
    return _html(_pages.render_claim(entry, proof_status(request, entry)))


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
    try:
        stats = _ledger(request).stats(EntryFilter())
    except ClaimError as error:
        return _error_page(error)
    return _html(_pages.render_stats(stats))


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
