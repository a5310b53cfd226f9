"""A client of ``claim serve``: JSON over HTTP(S) or a Unix socket, with one-line errors.

The ledger CLI and the gate's thin clients (``claim hook ... --server``, ``claim gate --server``)
talk to the service through this one class, so every way a request can fail reaches the user as
one of two errors that say whose fault it is: the service could not be reached
(:class:`ServiceUnavailable`) or it answered with a refusal (:class:`ServiceRefused`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .. import __version__
from .._json import decode_bytes, loads
from .._optional import needs_extra
from ..errors import ClaimError, InvalidDocument, ObservationFailed, UsageError
from ..gate.hooks import MAX_OUTCOME_CHARS
from ..observe.values import redact_url
from .records import STATES

# The gate's hooks (--server) use this client in minimal sandboxes: the observe extra suffices.
with needs_extra("observe", "talking to a claim serve"):
    import httpx

DEFAULT_TIMEOUT_S = 30.0
# An answer larger than this is not one the service sends (its largest is a page of entries).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
UNIX_SCHEME = "unix:"
# The authority a request over a Unix socket names: the socket, not the host, picks the server.
_SOCKET_ORIGIN = "http://localhost"


class ServiceError(ClaimError):
    """A request to the service did not give a usable answer."""


class ServiceUnavailable(ServiceError, ObservationFailed):
    """The service could not be reached: no connection, a timeout, a broken transfer. Nothing
    was observed (exit 5), as when an observer cannot reach what it observes."""


class ServiceRefused(ServiceError):
    """The service answered with an error status; ``error`` is its one-line reason, ``scope``
    the token scope it said was missing (RFC 6750's ``insufficient_scope``), if it did."""

    def __init__(self, url: str, status: int, error: str, scope: str | None = None) -> None:
        self.status = status
        self.error = error
        self.scope = scope
        super().__init__(f"{url}: the service refused ({status}): {error}")


class ServiceClient:
    """JSON requests to one service base URL: ``http://host:port[/prefix]``, ``https://...``
    or ``unix:///abs/path.sock`` (also ``unix:/abs/path.sock``).

    ``token`` is sent as ``Authorization: Bearer`` on every request; the caller reads it (from
    ``--token-file`` or ``CLAIM_TOKEN``), never this class.
    """

    def __init__(
        self, url: str, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.url = url
        self.shown = redact_url(url)
        origin, transport = _origin_and_transport(url, self.shown)
        headers = {"user-agent": f"completion-claim/{__version__}", "accept": "application/json"}
        self.has_token = token is not None
        if token is not None:
            token = token.strip()
            if not token or not token.isprintable() or not token.isascii():
                raise UsageError(f"{self.shown}: the token is empty or not printable ASCII")
            headers["authorization"] = f"Bearer {token}"
        self._client = httpx.Client(
            base_url=origin,
            transport=transport,
            headers=headers,
            timeout=timeout_s,
            # A redirect would carry the token to wherever the service points: not followed.
            follow_redirects=False,
        )
        self.timeout_s = timeout_s

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """``GET path`` (relative to the base URL) with query ``params``; None values omitted."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        return self._request("GET", path, params=query)

    def post_json(self, path: str, body: Any) -> Any:
        """``POST path`` with ``body`` as JSON; the answer's JSON."""
        return self._request("POST", path, json=body)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        shown = f"{method} {self.shown.rstrip('/')}/{path.lstrip('/')}"
        try:
            response = self._client.request(method, path.lstrip("/"), **kwargs)
        except httpx.TimeoutException:
            raise ServiceUnavailable(f"{shown}: no answer within {self.timeout_s:g}s") from None
        except httpx.HTTPError as error:
            reason = " ".join(str(error).split()) or type(error).__name__
            raise ServiceUnavailable(f"{shown}: cannot reach the service: {reason}") from None
        if response.status_code >= 400:
            scope = _missing_scope(response) if response.status_code == 403 else None
            raise ServiceRefused(shown, response.status_code, _error_line(response), scope)
        if response.status_code >= 300:
            where = response.headers.get("location", "nowhere")
            raise ServiceRefused(shown, response.status_code, f"redirected to {where!r}")
        try:
            return loads(decode_bytes(response.content, MAX_ANSWER_BYTES))
        except InvalidDocument as error:
            raise ServiceError(f"{shown}: the answer is not usable: {error}") from None


def _origin_and_transport(url: str, shown: str) -> tuple[str, httpx.HTTPTransport | None]:
    """The base URL httpx requests against, and a Unix-socket transport for ``unix://``."""
    if url.startswith(UNIX_SCHEME):
        # unix:///abs/path.sock, or unix:/abs/path.sock as ``claim serve --socket`` prints it.
        socket_path = url[len(UNIX_SCHEME) :].removeprefix("//")
        if not socket_path.startswith("/"):
            raise UsageError(f"{shown}: a Unix socket URL is unix:///absolute/path.sock")
        return f"{_SOCKET_ORIGIN}/", httpx.HTTPTransport(uds=socket_path)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{shown}: expected http://HOST:PORT, https://HOST or unix:///path.sock")
    # A trailing slash makes relative paths extend the base (a service under a prefix).
    return (url if url.endswith("/") else f"{url}/"), None


_INSUFFICIENT_SCOPE = re.compile(r'error="insufficient_scope"(?:.*?\bscope="([a-z]+)")?')


def _missing_scope(response: httpx.Response) -> str | None:
    """The scope a 403's ``WWW-Authenticate: Bearer error="insufficient_scope"`` names."""
    found = _INSUFFICIENT_SCOPE.search(response.headers.get("www-authenticate", ""))
    return None if found is None else (found.group(1) or "")


def _error_line(response: httpx.Response) -> str:
    """The service's ``{"error": "..."}`` line, or what is known when the body is not one."""
    try:
        document = loads(decode_bytes(response.content, MAX_ANSWER_BYTES))
    except InvalidDocument:
        document = None
    if type(document) is dict and type(document.get("error")) is str:
        return " ".join(document["error"].split())[:500] or response.reason_phrase
    return response.reason_phrase or "no reason given"


# --- the gate --------------------------------------------------------------------------------

# A gate run lasts as long as the operator's checks (a test suite may take minutes).
GATE_TIMEOUT_S = 3600.0
_CUT = " [cut by claim: over the service's limit]"
_T = TypeVar("_T")


@dataclass(frozen=True)
class DecidedVerdict:
    state: str
    reason: str


@dataclass(frozen=True)
class GateAnswer:
    """``POST /v1/gate``'s answer, in the shape a hook adapter reads (``gate.hooks.GateOutcome``):
    ``claim_path`` is where the decision is recorded, the service's page for the entry."""

    index: int
    verdict: DecidedVerdict
    verdict_json: dict[str, Any]
    agent_reason: str
    exit_code: int
    report: str
    claim_path: str
    max_blocks: int


def gate(client: ServiceClient, repo: str, outcome: str, session: str | None,
         task_id: str | None) -> GateAnswer:  # fmt: skip
    """Ask the service to run the gate on ``repo`` (a path on the service's machine)."""
    body = {"repo": repo, "outcome": sendable_outcome(outcome), "session": session,
            "task_id": task_id}  # fmt: skip
    answer = _ask_gate(client, "/v1/gate", body)
    try:
        verdict = answer["verdict"]
        parsed = GateAnswer(
            index=_typed(answer["index"], int),
            verdict=DecidedVerdict(
                _typed(verdict["state"], str), _typed(verdict.get("reason", ""), str)
            ),
            verdict_json=_typed(verdict, dict),
            agent_reason=_typed(answer["agent_reason"], str),
            exit_code=_typed(answer["exit_code"], int),
            report=_typed(answer["report"], str),
            claim_path=_typed(answer["url"], str),
            max_blocks=_typed(answer["max_blocks"], int),
        )
    except (KeyError, TypeError, AttributeError) as error:
        raise ServiceError(
            f"{client.shown}: the gate's answer is not what POST /v1/gate answers ({error})"
        ) from None
    if parsed.verdict.state not in STATES:
        raise ServiceError(f"{client.shown}: the gate answered an unknown state")
    return parsed


def sendable_outcome(outcome: str) -> str:
    """The outcome in a form the service takes. It is the agent's own text: one the service
    would refuse (a NUL, over its length) or that cannot be sent (a lone surrogate) would
    otherwise leave the stop unjudged, and so let a false "done" through."""
    text = outcome.encode("utf-8", "replace").decode("utf-8").replace("\0", "\ufffd")
    if len(text) <= MAX_OUTCOME_CHARS:
        return text
    return text[: MAX_OUTCOME_CHARS - len(_CUT)] + _CUT


def gate_start(client: ServiceClient, repo: str, session: str | None) -> tuple[str, int]:
    """Ask the service to take a session's baselines (a token with the ``start`` scope); the
    work tree's root it took them for and the start's ledger index."""
    answer = _ask_gate(client, "/v1/gate/start", {"repo": repo, "session": session})
    if (
        type(answer) is not dict
        or type(answer.get("repo")) is not str
        or type(answer.get("index")) is not int
    ):
        raise ServiceError(f"{client.shown}: the answer is not what POST /v1/gate/start answers")
    return str(answer["repo"]), int(answer["index"])


def _ask_gate(client: ServiceClient, path: str, body: dict[str, Any]) -> Any:
    try:
        return client.post_json(path, body)
    except ServiceRefused as refused:
        # The gate's endpoints want a token: without one, say where it comes from, not HTTP.
        if refused.status == 401 and not client.has_token:
            raise ServiceRefused(
                f"POST {client.shown.rstrip('/')}{path}", 401,
                "it needs a bearer token and none was given: pass --token-file FILE or set "
                "$CLAIM_TOKEN",
            ) from None  # fmt: skip
        raise


def _typed(value: Any, kind: type[_T]) -> _T:
    if type(value) is not kind:
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value
