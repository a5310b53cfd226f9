"""Strict JSON reading helpers."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from completion_claim import InvalidDocument
from completion_claim._json import cycle_collection_paused, decode_document, loads


def test_cycle_collection_resumes_after_parsing_even_on_error() -> None:
    assert gc.isenabled()
    seen: list[bool] = []

    def parse_while_paused() -> None:
        with cycle_collection_paused():
            seen.append(gc.isenabled())
            loads("{")

    with pytest.raises(InvalidDocument):
        parse_while_paused()
    assert seen == [False]
    assert gc.isenabled()


def test_cycle_collection_stays_paused_when_the_caller_paused_it() -> None:
    gc.disable()
    try:
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_syntax_error_names_its_place_once() -> None:
    """The decoder's own message may end in "at"; the place follows in parentheses, so the
    line never reads "starting at at line"."""
    with pytest.raises(InvalidDocument) as raised:
        loads('{\n  "task": "unterminated')
    problem = raised.value.problem
    assert problem == "not JSON: Unterminated string starting at (line 2, column 11)"
    assert " at at " not in problem


# --- the fast decoder answers as the strict one does ---------------------------------------------

_KEYS = st.sampled_from(["a", "b", "id", "at", "\u00e9", "a\\u0041", ""])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)


@st.composite
def _json_texts(draw: st.DrawFn) -> str:
    """JSON texts written by hand, so that they can hold what no encoder writes: duplicate
    keys at any depth, escapes, odd spacing, and now and then a corrupted character."""

    def value(depth: int) -> str:
        kind = draw(st.integers(0, 2 if depth < 4 else 0))
        if kind == 0:
            return json.dumps(draw(_SCALARS))
        if kind == 1:
            items = [value(depth + 1) for _ in range(draw(st.integers(0, 3)))]
            return "[" + draw(st.sampled_from([",", ", ", " ,\n"])).join(items) + "]"
        keys = draw(st.lists(_KEYS, max_size=4))  # repeats are duplicate keys
        members = [f'"{key}" : {value(depth + 1)}' for key in keys]
        return "{" + ",".join(members) + "}"

    text = value(0)
    if draw(st.integers(0, 9)) == 0 and text:  # a corrupted document, now and then
        spot = draw(st.integers(0, len(text) - 1))
        text = text[:spot] + draw(st.sampled_from(["NaN", "\ud800", "1e999", "}", '"', "\x01"]))
        text += text[spot + 1 :]
    return text


def _outcome(decode: Callable[[], object]) -> tuple[str, object]:
    try:
        return "value", decode()
    except InvalidDocument as error:
        return "invalid", str(error)


@settings(max_examples=400, deadline=None)
@given(_json_texts())
def test_the_fast_decoder_accepts_and_names_exactly_what_the_strict_one_does(text: str) -> None:
    """msgspec reads most documents; the strict decoder is the referee. Same value (types
    included: 1 is not 1.0, True is not 1), same error, bytes or text alike."""
    strict = _outcome(lambda: loads(text))
    fast = _outcome(lambda: decode_document(text))
    assert _typed(fast) == _typed(strict)
    if "\ud800" not in text:
        assert _typed(_outcome(lambda: decode_document(text.encode()))) == _typed(strict)


def _typed(outcome: tuple[str, object]) -> str:
    """The outcome with every value's type written out, so 1 == 1.0 == True cannot pass."""
    return repr(_with_types(outcome))


def _with_types(value: object) -> object:
    if isinstance(value, dict):
        return {repr(key): _with_types(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_with_types(item) for item in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize(
    "document",
    [
        b'{"a": 1, "a": 1}',
        b'{"a": {"b": [1, {"c": 2, "c": 3}]}}',
        b'{"a": [1, 2, 3], "a": 1}',  # the kept value has fewer lines than the dropped one
        b'{"a": 1, "b": {}, "a": {"x": [1, 2]}}',
        b'{"\\u0061": 1, "a": 2}',  # the same key, spelt twice
    ],
)
def test_attack_36_duplicate_keys_are_refused_by_the_fast_decoder(document: bytes) -> None:
    """Parsers disagree on which duplicate wins: a document that says two things is refused,
    whichever decoder reads it first."""
    with pytest.raises(InvalidDocument, match="duplicate key"):
        decode_document(document)
