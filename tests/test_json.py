"""Strict JSON reading helpers."""

from __future__ import annotations

import gc

import pytest

from completion_claim import InvalidDocument
from completion_claim._json import cycle_collection_paused, loads


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
