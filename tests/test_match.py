"""The satisfies relation: recursive subset for objects, typed equality for the rest."""

from __future__ import annotations

from typing import Any

import pytest

from completion_claim.match import json_equal, satisfies


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
