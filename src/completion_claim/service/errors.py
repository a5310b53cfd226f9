"""The one table from errors to HTTP statuses, and the handlers that render them.

Domain code raises the package's own errors (``ClaimError`` and below); only this module knows
HTTP. Every error answer is ``{"error": "one line"}``. An error nobody expected is a 500 with a
fixed line: its text could hold a path, a query or a secret, so it goes to the log, not to the
client.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import ClaimError, InvalidDocument
from ..gate.baseline import StartExists
from .gate_service import BadGateRequest, NotARepository, RepoRefused
from .ledger_errors import LedgerError, LedgerTampered, NotInLedger, NotYetIntegrated
from .tokens import ScopeMissing, TokenRejected

_log = logging.getLogger("completion_claim.service")

UNEXPECTED = "internal error: the service could not answer this request (see its log)"


class MalformedBody(ClaimError):
    """The body is not one strict JSON text (bad UTF-8, syntax, duplicate keys, NaN, ...)."""


class BodyTooLarge(ClaimError):
    """The body is (or announced itself as) over the service's size cap."""


class WrongContentType(ClaimError):
    """The body is not declared as ``application/json``."""


class NotFound(ClaimError):
    """No such entry (or proof for an entry the log does not hold yet)."""


class BadParameter(ClaimError):
    """A query or path parameter is out of range or malformed; names the parameter."""


# First match wins, so a subclass comes before its base. A ``ClaimError`` with no row (a bad key
# or token file, a gate without its --gate-config, say) is the operator's problem, not the
# client's: it is answered as unexpected, and its text (paths, often) stays in the log.
STATUS_FOR_ERROR: tuple[tuple[type[Exception], int], ...] = (
    (MalformedBody, 400),
    (TokenRejected, 401),
    (ScopeMissing, 403),
    (RepoRefused, 403),
    (NotFound, 404),
    (NotInLedger, 404),
    (StartExists, 409),
    (BodyTooLarge, 413),
    (WrongContentType, 415),
    (InvalidDocument, 422),
    (BadParameter, 422),
    (BadGateRequest, 422),
    (NotARepository, 422),
    (LedgerTampered, 500),
    (NotYetIntegrated, 503),
    (LedgerError, 503),
)


def status_for(error: Exception) -> int | None:
    return next((status for kind, status in STATUS_FOR_ERROR if isinstance(error, kind)), None)


def error_body(message: str) -> dict[str, str]:
    return {"error": one_line(message)}


def one_line(message: str) -> str:
    return " ".join(message.split()) or "error"


def install(app: FastAPI) -> None:
    """Register the handlers that turn every failure into ``{"error": "one line"}``."""
    app.add_exception_handler(ClaimError, _claim_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


async def _claim_error(_: Request, error: Exception) -> JSONResponse:
    status = status_for(error)
    if status is None:
        return await _unexpected(_, error)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if isinstance(error, ScopeMissing):
        # RFC 6750's answer: the client tells a token that may not do this from a refusal of
        # what it asked about (a 403 for a work tree outside the root).
        headers = {"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{error.scope}"'}
    if isinstance(error, NotYetIntegrated):
        headers = {"Retry-After": "1"}
    return JSONResponse(error_body(str(error)), status_code=status, headers=headers)


async def _validation_error(_: Request, error: Exception) -> JSONResponse:
    """FastAPI's list of problems, as one line naming the first parameter at fault."""
    problems = error.errors() if isinstance(error, RequestValidationError) else []
    if not problems:
        return JSONResponse(error_body("invalid request"), status_code=422)
    first = problems[0]
    place = ".".join(str(part) for part in first.get("loc", ()) if part not in ("query", "path"))
    message = f"{place}: {first.get('msg', 'invalid')}" if place else str(first.get("msg"))
    more = len(problems) - 1
    if more:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return JSONResponse(error_body(message), status_code=422)


async def _http_error(_: Request, error: Exception) -> JSONResponse:
    """Starlette's own answers (unknown path, wrong method) in the same one-line shape."""
    if not isinstance(error, StarletteHTTPException):
        return await _unexpected(_, error)
    return JSONResponse(
        error_body(str(error.detail)), status_code=error.status_code, headers=error.headers
    )


async def _unexpected(request: Request, error: Exception) -> JSONResponse:
    _log.error("unexpected error answering %s %s", request.method, request.url.path, exc_info=error)
    return JSONResponse(error_body(UNEXPECTED), status_code=500)
