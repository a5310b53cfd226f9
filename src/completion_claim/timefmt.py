"""RFC 3339 timestamps: an explicit offset is required; instants compare to the microsecond."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from .errors import InvalidDocument

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?\Z",
    re.ASCII,  # RFC 3339 digits are ASCII; without this, \d also matches e.g. full-width digits
)
_OFFSETS: dict[str, timezone] = {}


def parse_time(text: object, path: str) -> datetime:
    """Parse an RFC 3339 date-time; a missing offset or an impossible date is invalid input.

    Digits finer than a microsecond are dropped. Dropping preserves order, so it can make an
    observation look earlier than it was (stricter) but never later.
    """
    if not isinstance(text, str):
        raise InvalidDocument(path, f"expected an RFC 3339 date-time string, got {type_name(text)}")
    match = _RFC3339.match(text)
    if match is None:
        raise InvalidDocument(path, f"not an RFC 3339 date-time: {text[:40]!r}")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    if zulu:
        tz: timezone = UTC
    elif sign:
        tz = _offset(sign, off_h, off_m, path)
    else:
        raise InvalidDocument(path, "no UTC offset")
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        moment = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tz
        )
    except ValueError as exc:
        raise InvalidDocument(path, f"impossible date-time {text!r}: {exc}") from None
    if year in _EDGE_YEARS:
        _check_utc_range(moment, text, path)
    return moment


# An offset is under a day, so only in the first and the last year can it move an instant out of
# the range every time is compared and printed in (UTC, years 1 to 9999).
_EDGE_YEARS = frozenset({"0001", "9999"})


def _check_utc_range(moment: datetime, text: str, path: str) -> None:
    try:
        moment.astimezone(UTC)
    except OverflowError:
        raise InvalidDocument(
            path, f"{text!r} is outside the representable range (years 1 to 9999) in UTC"
        ) from None


def _offset(sign: str, hours: str, minutes: str, path: str) -> timezone:
    key = sign + hours + minutes
    tz = _OFFSETS.get(key)
    if tz is None:
        if int(hours) > 23 or int(minutes) > 59:
            raise InvalidDocument(path, f"impossible UTC offset {sign}{hours}:{minutes}")
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        tz = timezone(-delta if sign == "-" else delta)
        _OFFSETS[key] = tz
    return tz


def format_time(moment: datetime) -> str:
    """UTC, ``Z`` suffix, microseconds only when present."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    # Not strftime: its %Y writes year 1 as "1", which no RFC 3339 reader accepts.
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def type_name(value: object) -> str:
    """The JSON name of a Python value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
