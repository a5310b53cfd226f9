"""The satisfies relation: recursive subset for objects, typed equality for the rest."""

from __future__ import annotations

from typing import Any

import pytest

from completion_claim.match import first_mismatch, json_equal, satisfies


@pytest.mark.parametrize(
    ("expected", "observed"),
    [
        ({"zip": "94107"}, {"zip": "94107", "city": "SF"}),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}),
        (1, 1.0),
        ([1, "x"], [1.0, "x"]),
        (None, None),
        ({}, {"anything": True}),
    ],
)
def test_satisfied(expected: Any, observed: Any) -> None:
    assert satisfies(expected, observed)


@pytest.mark.parametrize(
    ("expected", "observed"),
    [
        ({"zip": "94107"}, {"zip": 94107}),
        (True, 1),
        (1, True),
        (0, False),
        ({"zip": "94107"}, None),
        ({"zip": "94107"}, {}),
        ([1, 2], [1, 2, 3]),
        ([{"a": 1}], [{"a": 1, "b": 2}]),
        ("1", 1),
        ({"a": None}, {}),
    ],
)
def test_not_satisfied(expected: Any, observed: Any) -> None:
    assert not satisfies(expected, observed)


def test_json_equal_distinguishes_types_inside_arrays() -> None:
    assert not json_equal([True], [1])
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})


@pytest.mark.parametrize(
    ("expected", "observed", "words"),
    [
        ({"exit_code": 0}, {"exit_code": 1, "passed": 3}, "exit_code: expected 0, observed 1"),
        ({"a": {"zip": "94107"}}, {"a": {"zip": 94107}}, 'a.zip: expected "94107", observed 94107'),
        ({"b": 1, "a": 2}, {}, "a: expected 2, observed nothing"),
        ({"zip": "1"}, None, 'value: expected {"zip": "1"}, observed null'),
        ("x" * 100, "y", 'value: expected "' + "x" * 56 + '..., observed "y"'),
    ],
)
def test_first_mismatch_says_where_and_what(expected: Any, observed: Any, words: str) -> None:
    assert first_mismatch(expected, observed) == words


def test_first_mismatch_is_none_when_satisfied() -> None:
    assert first_mismatch({"a": 1}, {"a": 1.0, "b": 2}) is None
