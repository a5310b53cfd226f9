"""Canonical JSON: one byte sequence per JSON value, so a digest means the same on any machine.

The form is RFC 8785 (JSON Canonicalization Scheme): no whitespace; object members sorted by the
UTF-16 code units of their names; strings escaped minimally (``"``, ``\\``, and control characters:
``\\b \\t \\n \\f \\r`` by name, others as ``\\u00xx``), everything else literal; numbers as
ECMAScript prints an IEEE-754 double (``1.0`` and ``1`` are both ``1``, ``1e21`` is ``1e+21``);
UTF-8. One extension: an integer that no double holds exactly (some beyond 2^53), which RFC 8785
does not admit, is written with all its decimal digits instead of being rounded.
"""

from __future__ import annotations

import hashlib
import json
import math
from decimal import Decimal
from typing import Any

from ..errors import InvalidDocument


def canonical_bytes(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a decoded JSON value."""
    parts: list[str] = []
    _write(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidDocument(
            "", "a string holds a lone surrogate, which UTF-8 cannot encode"
        ) from None


def sha256_hex(value: Any) -> str:
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def _write(value: Any, out: list[str]) -> None:
    kind = type(value)
    if kind is dict:
        out.append("{")
        for i, key in enumerate(sorted(value, key=_utf16_order)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif kind is list:
        out.append("[")
        for i, element in enumerate(value):
            if i:
                out.append(",")
            _write(element, out)
        out.append("]")
    elif kind is str:
        out.append(_string(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif kind is int:
        out.append(_integer(value))
    elif kind is float:
        out.append(_number(value))
    else:
        raise TypeError(f"not a JSON value: {kind.__name__}")


def _integer(value: int) -> str:
    try:
        as_double = float(value)
    except OverflowError:
        return str(value)
    return _number(as_double) if int(as_double) == value else str(value)


def _utf16_order(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def _string(text: str) -> str:
    # json.dumps without ensure_ascii escapes exactly what RFC 8785 requires, in the same forms.
    return json.dumps(text, ensure_ascii=False)


def _number(value: float) -> str:
    """ECMAScript Number::toString of a finite double (RFC 8785, section 3.2.2.3)."""
    if not math.isfinite(value):
        raise InvalidDocument("", "not JSON: a number is not finite")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip, which is what ECMAScript prints too.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = exponent + k  # value = 0.digits * 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if n - 1 > 0 else '-'}{abs(n - 1)}"
    return sign + text
