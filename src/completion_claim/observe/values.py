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
import re
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from .._json import loads
from ..errors import InvalidDocument, UsageError
from ..model import ABSENT
from ..timefmt import format_time

REDACTED = "***"
BYTES_PREFIX = "base64:"
# Names of parameters and options that carry a secret (case-insensitive substrings).
_SECRET_WORDS = ("password", "passwd", "pwd", "secret", "token", "key", "auth", "credential")
_HTTP_SCHEMES = ("http", "https")
_LIBPQ_SCHEMES = ("postgresql", "postgres")
_URL_DELIMITERS = re.compile(r"[:/?#@]")
_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_ASSIGNMENT = re.compile(r"(?P<name>[A-Za-z0-9_.-]+)=(?P<value>'(?:[^'\\]|\\.)*'|\S*)")


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


def redact_url(text: str) -> str:
    """``text`` with its secrets replaced by ``***``: a URL, or any text holding one (an argv item
    such as ``--db=postgresql://...``), or ``NAME=VALUE`` pairs.

    A URL shows what its store's own parser reads (libpq's for ``postgresql://``, ``urlsplit``'s
    for the others) with the password and every secret-named option (:func:`is_secret_name`)
    masked. When that parser cannot read it, when it reads differently elsewhere
    (:func:`ambiguous_url`), or when the result would still hold text that some reading takes
    for the password, only the scheme is shown. Outside a URL, the value of every
    ``NAME=VALUE`` whose NAME is secret-named is masked.
    """
    match = _URL_START.search(text)
    if match is None:
        return _mask_assignments(text)
    return _mask_assignments(text[: match.start()]) + _redact_one_url(text[match.start() :])


def url_secrets(url: str) -> list[str]:
    """Every text a URL's secrets may take in a driver's message, to :func:`scrub` them: the
    password and secret options as libpq or ``urlsplit`` reads them, and the longest plausible
    reading of the password, each whole and in the pieces a misreading would split it into,
    as written and percent-decoded."""
    found = [_longest_password_reading(url)]
    try:
        parts = urlsplit(url)
        if parts.password:
            found.append(parts.password)
        found += [value for name, value in _query_pairs(parts.query) if is_secret_name(name)]
    except ValueError:
        pass
    if _is_libpq(url):
        params = libpq_params(url) or {}
        found += [value for name, value in params.items() if is_secret_name(name)]
    # A parser that misreads the URL splits the password where it ends a part: each piece too.
    found += [piece for secret in found for piece in _URL_DELIMITERS.split(secret)]
    return sorted({form for secret in found if secret for form in (secret, unquote(secret))})


def is_secret_name(name: str) -> bool:
    """A parameter or option name that carries a secret: ``password``, ``sslpassword``,
    ``api_key``, ``access_token``, ``client_secret``, ``auth``, ... (case-insensitive)."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def ambiguous_url(url: str) -> bool:
    """Whether an ``@`` lies where the store's parser does not end the user information with it.

    That happens when a password holds an unencoded ``#``, ``?`` or ``/`` (``u:pa#ss@host``):
    one parser reads a password, another a host, a path or a fragment holding the rest of it,
    and the connection goes elsewhere than meant. libpq ends the user information at the first
    ``@`` before the first ``/``; ``urlsplit`` (MariaDB, Redis, HTTP) at the last ``@`` before the
    first of ``/?#``. An HTTP URL may hold ``@`` in its path, query or fragment.
    """
    scheme, _, rest = url.partition("://")
    authority = rest.partition("/")[0]
    if _is_libpq(url):
        return rest.count("@") > 1 or ("@" in rest and "@" not in authority)
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return True
    outside = (authority if scheme.lower() in _HTTP_SCHEMES else rest).replace(netloc, "", 1)
    return "@" in outside


def refuse_ambiguous_url(url: str) -> None:
    """A usage error for an :func:`ambiguous_url`, showing its scheme only."""
    if ambiguous_url(url):
        raise UsageError(
            f"URL {redact_url(url)!r}: percent-encode '#', '?', '/' and '@' in the user name and "
            "password (%23, %3F, %2F, %40); as written, parsers read the URL differently"
        )


def _redact_one_url(url: str) -> str:
    scheme = url.partition("://")[0]
    shown = None
    if not ambiguous_url(url):
        shown = _libpq_display(url) if _is_libpq(url) else _urlsplit_display(url)
    if shown is None or any(secret in shown for secret in url_secrets(url)):
        return f"{scheme}://{REDACTED}"
    return shown


def _is_libpq(url: str) -> bool:
    return url.partition("://")[0].lower() in _LIBPQ_SCHEMES


def _urlsplit_display(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number is a password read as a port
    except ValueError:
        return None
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, has_password, _ = userinfo.partition(":")
        netloc = f"{user}{':' + REDACTED if has_password else ''}@{hostport}"
    query = "&".join(
        f"{name}={REDACTED}" if sep and is_secret_name(unquote(name)) else f"{name}{sep}{value}"
        for name, sep, value in (piece.partition("=") for piece in parts.query.split("&"))
    )
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # nothing secret; urlunsplit would also turn sqlite:/// into sqlite:/
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def libpq_params(url: str) -> dict[str, str] | None:
    """The connection parameters libpq reads from the URI, or None when it cannot read it."""
    try:
        # Imported here: psycopg is the optional ``observe`` extra, and without it a
        # postgresql:// URL is shown by its scheme only.
        from psycopg import Error  # noqa: PLC0415
        from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415
    except ImportError:
        return None
    try:
        return {name: str(value) for name, value in conninfo_to_dict(url).items()}
    except Error:
        return None


def _libpq_display(url: str) -> str | None:
    """The URI rebuilt from libpq's parameters, without the password or a secret option."""
    params = libpq_params(url)
    if params is None:
        return None
    if not any(is_secret_name(name) for name in params):
        return url
    user, password = params.pop("user", ""), params.pop("password", None)
    host, port, dbname = params.pop("host", ""), params.pop("port", ""), params.pop("dbname", "")
    userinfo = quote(user, safe="") + (":" + REDACTED if password is not None else "")
    hosts = [f"[{name}]" if ":" in name else quote(name, safe="") for name in host.split(",")]
    ports = port.split(",") if port else []
    hostports = ",".join(
        name + (f":{ports[index]}" if index < len(ports) and ports[index] else "")
        for index, name in enumerate(hosts)
    )
    options = "&".join(
        f"{name}={REDACTED if is_secret_name(name) else quote(value, safe='')}"
        for name, value in params.items()
    )
    scheme = url.partition("://")[0]
    return (
        f"{scheme}://{userinfo + '@' if userinfo else ''}{hostports}"
        f"{'/' + quote(dbname, safe='') if dbname else ''}{'?' + options if options else ''}"
    )


def _longest_password_reading(url: str) -> str:
    """The password as the most generous reading takes it: from the first ``:`` to the last
    ``@``. It covers every parser's reading, and whatever a misread put in a host or path."""
    rest = url.partition("://")[2]
    userinfo = rest[: max(rest.rfind("@"), 0)]
    return userinfo.partition(":")[2]


def _query_pairs(query: str) -> list[tuple[str, str]]:
    return [
        (unquote(name), value)
        for name, sep, value in (piece.partition("=") for piece in query.split("&"))
        if sep
    ]


def _mask_assignments(text: str) -> str:
    return _ASSIGNMENT.sub(
        lambda match: f"{match['name']}={REDACTED}" if is_secret_name(match["name"]) else match[0],
        text,
    )


def scrub(message: str, secrets: list[str]) -> str:
    """A driver's message with any secret it echoed replaced, on one line."""
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, REDACTED)
    return " ".join(message.split())
