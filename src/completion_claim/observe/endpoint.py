"""endpoint_health observed: one live HTTP request, recording what a deploy should change.

The observation holds the status, the asserted headers and the values at the asserted RFC 6901
JSON pointers, never the body itself: ``subject`` is the body's digest.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from .. import __version__
from .._json import DEFAULT_MAX_BYTES, decode_bytes, loads
from .._optional import needs_extra
from ..errors import InvalidDocument, ObservationFailed, UsageError
from ..model import ABSENT
from ._common import Observation
from .values import (
    expected_value,
    redact_url,
    refuse_ambiguous_url,
    scrub,
    sha256_digest,
    url_secrets,
)

with needs_extra("observe", "an HTTP observation"):
    import httpx

CHECK_TYPE = "endpoint_health"
_METHOD = re.compile(r"[A-Z]+")
_BAD_ESCAPE = re.compile(r"~(?![01])")
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
STATUS_ONLY = (
    "the check asserts only the status: a 200 that would be 200 either way is not evidence "
    "about this deploy; add --expect-json or --expect-header on a value the deploy changes "
    "(build id, commit, version)"
)


@dataclass(frozen=True)
class Fetched:
    """A response read whole (bounded): what both HTTP observers look at."""

    status: int
    headers: httpx.Headers
    body: bytes
    redirected_to: str | None  # the final URL, when redirects were followed
    elapsed_s: float


def fetch(method: str, url: str, timeout: float, follow_redirects: bool) -> Fetched:
    """One request; every way of not getting a response is an ObservationFailed.

    ``timeout`` bounds connecting and each read, and the whole body must arrive within it too,
    so a server that trickles bytes cannot hold the observer. The request asks caches to
    revalidate: the observation is of the server, not of a copy.
    """
    shown = f"{method} {redact_url(url)}"
    secrets = url_secrets(url)
    headers = {"user-agent": f"completion-claim/{__version__}", "cache-control": "no-cache"}
    started = time.monotonic()
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=follow_redirects) as client,
            client.stream(method, url, headers=headers) as response,
        ):
            body = _read_body(response, started + timeout, shown, timeout)
            return Fetched(
                status=response.status_code,
                headers=response.headers,
                body=body,
                redirected_to=str(response.url) if response.history else None,
                elapsed_s=round(time.monotonic() - started, 3),
            )
    except httpx.TimeoutException:
        raise ObservationFailed(f"{shown}: no response within {timeout:g}s") from None
    except httpx.ConnectError as error:
        reason = scrub(str(error), secrets) or "connection failed"
        raise ObservationFailed(f"{shown}: cannot connect: {reason}") from None
    except httpx.HTTPError as error:
        reason = scrub(str(error), secrets) or type(error).__name__
        raise ObservationFailed(f"{shown}: {reason}") from None


def _read_body(response: httpx.Response, deadline: float, shown: str, timeout: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > DEFAULT_MAX_BYTES:
            raise ObservationFailed(f"{shown}: response body is over {DEFAULT_MAX_BYTES} bytes")
        if time.monotonic() > deadline:
            raise ObservationFailed(f"{shown}: the body did not arrive within {timeout:g}s")
        chunks.append(chunk)
    return b"".join(chunks)


def check_url(url: str) -> None:
    """Refuse, before any request, a URL httpx cannot send or whose password it would misread
    (a usage error, not an observation)."""
    refuse_ambiguous_url(url)  # first: httpx's message would quote the misread password
    try:
        scheme = httpx.URL(url).scheme
    except httpx.InvalidURL as error:
        raise UsageError(
            f"URL {redact_url(url)!r}: {scrub(str(error), url_secrets(url))}"
        ) from None
    if scheme not in ("http", "https"):
        raise UsageError(f"URL {redact_url(url)!r}: expected an http:// or https:// URL")


def parse_json(body: bytes) -> Any:
    """The body as JSON, or ABSENT when it is not JSON (strictly: UTF-8, no duplicate keys)."""
    try:
        return loads(decode_bytes(body))
    except InvalidDocument:
        return ABSENT


def pointer_tokens(pointer: str) -> list[str]:
    """The reference tokens of an RFC 6901 JSON pointer; a malformed one is a usage error."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise UsageError(f"--expect-json: {pointer!r} is not a JSON pointer (it starts with '/')")
    tokens = pointer[1:].split("/")
    if any(_BAD_ESCAPE.search(token) for token in tokens):
        raise UsageError(f"--expect-json: {pointer!r}: '~' must be followed by 0 or 1")
    # ~1 first: "~01" is the token "~1", not "/".
    return [token.replace("~1", "/").replace("~0", "~") for token in tokens]


def resolve_pointer(document: Any, tokens: list[str]) -> Any:
    """The value at the pointer, or ABSENT when any step is missing (``-`` never exists)."""
    node = document
    for token in tokens:
        if type(node) is dict:
            if token not in node:
                return ABSENT
            node = node[token]
        elif type(node) is list:
            if not _ARRAY_INDEX.fullmatch(token) or int(token) >= len(node):
                return ABSENT
            node = node[int(token)]
        else:
            return ABSENT
    return node


@dataclass(frozen=True)
class EndpointCheck:
    url: str
    method: str
    expect_status: int
    expect_json: dict[str, str]  # pointer -> VALUE as given
    expect_headers: dict[str, str]  # lowercased name -> value
    timeout: float
    follow_redirects: bool

    @property
    def target(self) -> str:
        return f"{self.method} {redact_url(self.url)}"

    def failed_expected(self) -> dict[str, Any]:
        """What the check asserts, typed without an observation (recorded for a failed attempt)."""
        return self.expected_for({})

    def expected_for(self, observed_json: dict[str, Any]) -> dict[str, Any]:
        expected: dict[str, Any] = {"status": self.expect_status}
        if self.expect_headers:
            expected["headers"] = dict(self.expect_headers)
        if self.expect_json:
            expected["json"] = {
                pointer: expected_value(text, observed_json.get(pointer, ABSENT))
                for pointer, text in self.expect_json.items()
            }
        return expected


def endpoint_check(
    url: str,
    method: str,
    expect_status: int,
    expect_json: dict[str, str],
    expect_headers: dict[str, str],
    timeout: float,
    follow_redirects: bool,
) -> EndpointCheck:
    """Validate the options; a check that could not fail is refused here, before any request."""
    if not expect_json and not expect_headers:
        raise UsageError(STATUS_ONLY)
    check_url(url)
    verb = method.upper()
    if not _METHOD.fullmatch(verb):
        raise UsageError(f"--method: {method!r} is not an HTTP method")
    for pointer in expect_json:
        pointer_tokens(pointer)
    headers: dict[str, str] = {}
    for name, value in expect_headers.items():
        if name.lower() in headers:
            raise UsageError(f"--expect-header: {name!r} is given twice")
        headers[name.lower()] = value
    return EndpointCheck(
        url, verb, expect_status, dict(expect_json), headers, timeout, follow_redirects
    )


def observe_endpoint(check: EndpointCheck) -> Observation:
    """Make the request and record what the check asserts about the response."""
    response = fetch(check.method, check.url, check.timeout, check.follow_redirects)
    observed: dict[str, Any] = {"status": response.status}
    details: dict[str, Any] = {"elapsed_s": response.elapsed_s, "body_bytes": len(response.body)}
    if "content-type" in response.headers:
        details["content_type"] = response.headers["content-type"]
    if response.redirected_to is not None:
        details["redirected_to"] = redact_url(response.redirected_to)
    if check.expect_headers:
        observed["headers"] = {name: response.headers.get(name) for name in check.expect_headers}
    json_values: dict[str, Any] = {}
    if check.expect_json:
        document = parse_json(response.body)
        if document is ABSENT:
            details["body"] = "not JSON"
        for pointer in check.expect_json:
            value = resolve_pointer(document, pointer_tokens(pointer))
            if value is not ABSENT:
                json_values[pointer] = value
        # A missing pointer is left out of the observation, so that it contradicts any
        # expectation, even null.
        observed["json"] = json_values
        missing = [pointer for pointer in check.expect_json if pointer not in json_values]
        if missing and document is not ABSENT:
            details["missing_pointers"] = missing
    return Observation(
        target=check.target,
        expected=check.expected_for(json_values),
        observed_value=observed,
        subject=sha256_digest(response.body),
        details=details,
    )
