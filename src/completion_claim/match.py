"""The satisfies relation between an expected and an observed JSON value."""

from __future__ import annotations

import json
from typing import Any


def satisfies(expected: Any, observed: Any) -> bool:
    """Objects match as a recursive subset; arrays and scalars must be equal, JSON type included.

    Extra observed keys are allowed. ``"94107"`` is not ``94107`` and ``true`` is not ``1``,
    but ``1`` equals ``1.0``: JSON has one number type.
    """
    if type(expected) is dict:
        if type(observed) is not dict:
            return False
        for key, want in expected.items():
            if key not in observed or not satisfies(want, observed[key]):
                return False
        return True
    return json_equal(expected, observed)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_equal(left: Any, right: Any) -> bool:
    """Deep equality that respects JSON types (bool is not a number; int and float are)."""
    if type(left) is type(right) and type(left) in _SCALARS:  # the common case, decided at once
        return bool(left == right)
    left_type, right_type = _json_type(left), _json_type(right)
    if left_type != right_type:
        return False
    if left_type == "object":
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if left_type == "array":
        return len(left) == len(right) and all(map(json_equal, left, right))
    return bool(left == right)


def _json_type(value: Any) -> str:
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is int or kind is float:
        return "number"
    if kind is str:
        return "string"
    if kind is dict:
        return "object"
    if kind is list:
        return "array"
    return "null" if value is None else kind.__name__


def first_mismatch(expected: Any, observed: Any, path: str = "") -> str | None:
    """Where ``observed`` first fails to satisfy ``expected``, in words; None when it satisfies.

    Keys are visited in sorted order so the answer does not depend on how the document was written.
    """
    if type(expected) is dict and type(observed) is dict:
        for key in sorted(expected):
            where = f"{path}.{key}" if path else key
            if key not in observed:
                return f"{where}: expected {_show(expected[key])}, observed nothing"
            found = first_mismatch(expected[key], observed[key], where)
            if found is not None:
                return found
        return None
    if satisfies(expected, observed):
        return None
    return f"{path or 'value'}: expected {_show(expected)}, observed {_show(observed)}"


def _show(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
