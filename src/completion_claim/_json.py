"""Strict JSON reading: UTF-8 only, bounded size and depth, no duplicate keys, no NaN/Infinity,
no lone surrogates."""

from __future__ import annotations

import gc
import json
import math
import re
from typing import Any

import msgspec

from .errors import InvalidDocument

DEFAULT_MAX_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64

JsonValue = Any


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InvalidDocument("", f"not JSON: duplicate key {key!r}")
            seen.add(key)
    return obj


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidDocument("", f"not JSON: number {text[:20]!r} is out of range")
    return value


def _reject_constant(name: str) -> None:
    raise InvalidDocument("", f"not JSON: {name} is not a JSON value")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_reject_duplicates,
    parse_float=_finite_float,
    parse_constant=_reject_constant,
)


def decode_bytes(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    if len(data) > max_bytes:
        raise InvalidDocument("", f"document is over the size limit of {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDocument("", f"not UTF-8: invalid byte at offset {exc.start}") from None


_FAST = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder().encode
_FORMAT = msgspec.json.format


def decode_document(data: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> JsonValue:
    """Decode one JSON document as ``loads`` does (same values, same errors), at C speed.

    msgspec rejects what the strict decoder rejects (NaN, numbers out of range, lone
    surrogates, bad UTF-8, control characters) but silently keeps the last of duplicate keys.
    Formatting keeps duplicates. The decoded value re-encoded spells each member name of an
    object differently, so a text whose compact form is those very bytes has no duplicate (the
    common case: one pass). Otherwise, with one member or element per line, the document has
    none exactly when its text and the re-encoded value format to as many lines (a string
    cannot hold a raw newline). Whatever the fast path does not accept, the strict decoder
    decides, and names the problem.
    """
    if isinstance(data, bytes):
        if len(data) > max_bytes:
            raise InvalidDocument("", f"document is over the size limit of {max_bytes} bytes")
    elif len(data) * 4 > max_bytes and len(data.encode("utf-8", "surrogatepass")) > max_bytes:
        # A character is 1 to 4 bytes in UTF-8: only a text near the limit needs measuring.
        raise InvalidDocument("", f"document is over the size limit of {max_bytes} bytes")
    try:
        value = _FAST.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):
        # UnicodeEncodeError: a text holding a lone surrogate, which has no UTF-8 form
        return _strict(data, max_bytes)
    encoded = _ENCODE(value)
    if _FORMAT(data, indent=-1) == encoded:
        return value
    if _lines(_FORMAT(data, indent=1)) != _lines(_FORMAT(encoded, indent=1)):
        return _strict(data, max_bytes)
    return value


def _lines(text: bytes | str) -> int:
    return text.count(b"\n") if isinstance(text, bytes) else text.count("\n")


def _strict(data: bytes | str, max_bytes: int) -> JsonValue:
    return loads(decode_bytes(data, max_bytes) if isinstance(data, bytes) else data)


def loads(text: str) -> JsonValue:
    """Parse one JSON text strictly; every failure is an InvalidDocument with one clear line."""
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        # The decoder's messages may end in "at" ("Unterminated string starting at"): the place
        # goes in parentheses, never after a second "at".
        raise InvalidDocument(
            "", f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise InvalidDocument("", "not JSON: nesting is too deep") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InvalidDocument("", f"not JSON: {exc}") from None
    if _may_hold_lone_surrogate(text):
        _reject_lone_surrogates(value)
    return value


# A surrogate code point (U+D800-U+DFFF) is half of a UTF-16 pair, not a character: no UTF-8
# output can carry one alone, so a string holding one would crash whatever prints or signs it.
_SURROGATE = re.compile("[\ud800-\udfff]")
# Escapes read left to right, as the decoder reads them: an escaped backslash, a high-low pair
# (one character), or a surrogate escape left over (group 1), the only one that decodes alone.
_ESCAPES = re.compile(
    r"\\(?:\\|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F]))"
)


def _may_hold_lone_surrogate(text: str) -> bool:
    """A pass over the text at C speed; only when it says yes is the decoded tree walked."""
    if any(escape.group(1) for escape in _ESCAPES.finditer(text)):
        return True
    if text.isascii():  # constant time: CPython records it
        return False
    try:  # a literal surrogate: only in a text that was not decoded from UTF-8
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _reject_lone_surrogates(value: JsonValue) -> None:
    """Name the first string (member names included) holding a lone surrogate, if any."""
    stack: list[tuple[JsonValue, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if type(node) is str:
            _check_text(node, path, "")
        elif type(node) is dict:
            for key in node:
                _check_text(key, path, "a member name holds ")
            prefix = f"{path}." if path else ""
            stack.extend((node[key], prefix + key) for key in reversed(node))
        elif type(node) is list:
            stack.extend((node[i], f"{path}[{i}]") for i in reversed(range(len(node))))


def _check_text(text: str, path: str, where: str) -> None:
    found = _SURROGATE.search(text)
    if found is not None:
        raise InvalidDocument(
            path, f"{where}lone surrogate U+{ord(found.group()):04X}, which is not a character"
        )


def check_depth(value: JsonValue, path: str, limit: int = MAX_DEPTH) -> None:
    """Reject free-form values nested deeper than ``limit`` (iteratively: no recursion to abuse).

    Walks one level at a time, so no (node, depth) pair is built per value.
    """
    level: list[JsonValue] = [value]
    depth = 1
    while level:
        below: list[JsonValue] = []
        for node in level:
            if isinstance(node, dict):
                children: Any = node.values()
            elif isinstance(node, list):
                children = node
            else:
                continue
            if depth > limit:
                raise InvalidDocument(path, f"nested deeper than {limit} levels")
            below.extend(children)
        level = below
        depth += 1


def dumps(value: JsonValue, *, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)


class cycle_collection_paused:
    """Pause the cycle collector while a document's tree is built.

    A decoded document is acyclic, so reference counting frees it; the collector would only
    re-scan the growing tree, and on a 10,000-item claim those passes make parsing
    super-linear. Collection resumes afterwards unless someone else had paused it. A class,
    not a generator: it is entered once per claim, thousands of times a second in a batch.
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *_: object) -> None:
        if self._was_enabled:
            gc.enable()
