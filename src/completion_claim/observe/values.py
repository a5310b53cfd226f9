"""Values as observers see them: command-line assignments, store values as JSON, digests, and
URLs with their secrets removed.

The typing rules here are the contract of ``--expect``, ``--expect-json`` and the readback:

* a store value becomes JSON by :func:`to_json` (int stays int, text stays text; see there);
* an unquoted command-line VALUE takes the JSON type of the value it is compared with, so that
  ``zip=94107`` means the number against an integer column and the text against a text one;
  a JSON-quoted VALUE (``zip='"94107"'``) is always a string.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from .._fields import ABSENT
from .._json import loads
from ..errors import InvalidDocument, UsageError
from ..timefmt import format_time

REDACTED = "***"
BYTES_PREFIX = "base64:"
# Query-string options that carry a secret (libpq's ``password``, redis ``password``, tokens).
_SECRET_OPTIONS = ("password", "passwd", "secret", "token")


def split_assignment(text: str, option: str) -> tuple[str, str]:
    """``NAME=VALUE`` split at the first ``=`` (so a VALUE may itself contain ``=``)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"{option}: expected NAME=VALUE, got {text!r}")
    return name, value


def assignments(texts: tuple[str, ...], option: str) -> dict[str, str]:
    """Several ``NAME=VALUE`` options as a mapping; naming one NAME twice is a usage error."""
    result: dict[str, str] = {}
    for text in texts:
        name, value = split_assignment(text, option)
        if name in result:
            raise UsageError(f"{option}: {name!r} is given twice")
        result[name] = value
    return result


def expected_value(text: str, observed: Any = ABSENT) -> Any:
    """The JSON value a command-line VALUE asserts, typed by the value it is compared with.

    A JSON-quoted VALUE is a string. Otherwise: against a string, the text as written; against
    anything else (a number, a boolean, null, an object, an array, or nothing at all because the
    field or record is missing), the VALUE read as JSON when it is JSON, else the text.
    """
    parsed = _json_or_absent(text)
    if isinstance(parsed, str):
        return parsed
    if isinstance(observed, str) or parsed is ABSENT:
        return text
    return parsed


def _json_or_absent(text: str) -> Any:
    try:
        return loads(text)
    except InvalidDocument:
        return ABSENT


def to_json(value: Any) -> Any:
    """A value as a store returned it, as JSON, keeping the store's type where JSON has one.

    * NULL is null; bool, int and text stay as they are; a finite float is a number and a
      non-finite one the text ``NaN``, ``Infinity`` or ``-Infinity`` (JSON has no such number).
    * Decimal: an integer when integral, a number when a float holds it exactly, else its exact
      decimal text (so no digit is ever lost or invented).
    * datetime: with a time zone, RFC 3339 in UTC with ``Z`` like every time in a claim (the
      session's time zone must not change the value); without one, ISO 8601 as stored.
      date and time: ISO 8601. timedelta (PostgreSQL interval, MariaDB TIME): seconds, a number.
    * bytes: ``base64:`` followed by the standard base64 of the bytes.
    * lists, tuples and dicts (arrays, json/jsonb) are converted member by member; any other
      type (UUID, network addresses, ranges) is its text.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _non_finite(value)
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, datetime):
        if value.utcoffset() is not None:
            return format_time(value)
        return value.isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return _number(Decimal(value // timedelta(microseconds=1)) / 10**6)
    if isinstance(value, bytes | bytearray | memoryview):
        return BYTES_PREFIX + base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list | tuple):
        return [to_json(member) for member in value]
    if isinstance(value, dict):
        return {str(key): to_json(member) for key, member in value.items()}
    return str(value)


def _non_finite(value: float | Decimal) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _decimal(value: Decimal) -> Any:
    if not value.is_finite():
        return _non_finite(value)
    return _number(value)


def _number(value: Decimal) -> Any:
    if value == value.to_integral_value():
        return int(value)
    as_float = float(value)
    if Decimal(repr(as_float)) == value:
        return as_float
    return format(value, "f")


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the same record always gives the same bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def redact_url(url: str) -> str:
    """The URL with its password (in the authority or the query string) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        # Unparseable: nothing of it can be shown safely beyond the scheme.
        return url.split(":", 1)[0] + "://" + REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, has_password, _ = userinfo.partition(":")
        netloc = f"{user}{':' + REDACTED if has_password else ''}@{hostport}"
    query = "&".join(
        f"{key}={REDACTED}" if sep and _is_secret(unquote(key)) else f"{key}{sep}{value}"
        for key, sep, value in (piece.partition("=") for piece in parts.query.split("&"))
    )
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # nothing secret; urlunsplit would also turn sqlite:/// into sqlite:/
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """Every secret a URL carries, as written and percent-decoded, to scrub from messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = []
    if "@" in parts.netloc:
        found.append(parts.netloc.rpartition("@")[0].partition(":")[2])
    for piece in parts.query.split("&"):
        key, _, value = piece.partition("=")
        if _is_secret(unquote(key)):
            found.append(value)
    return [form for secret in found if secret for form in {secret, unquote(secret)}]


def _is_secret(option: str) -> bool:
    lowered = option.lower()
    return any(word in lowered for word in _SECRET_OPTIONS)


def scrub(message: str, secrets: list[str]) -> str:
    """A driver's message with any secret it echoed replaced, on one line."""
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, REDACTED)
    return " ".join(message.split())
