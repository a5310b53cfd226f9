"""Reasons shared by every check type why an observation could not have failed."""

from __future__ import annotations

from ..match import satisfies
from ..model import ABSENT, Evidence

BASELINE_KEY = "baseline"
"""``details.baseline``: the value observed before the change, recorded by the observer."""


def asserts_nothing(item: Evidence) -> str | None:
    # ``null`` is an assertion (the record must be absent, as after a deletion), not emptiness.
    if item.expected is ABSENT or is_empty(item.expected):
        return "expected asserts nothing"
    return None


def is_empty(value: object) -> bool:
    """An empty object, array or string: a value that asserts nothing when expected."""
    return type(value) in (dict, list, str) and not value


def baseline_already_met(item: Evidence) -> str | None:
    """A check that the world already passed before the change proves nothing about the change."""
    if item.details is None or BASELINE_KEY not in item.details:
        return None
    if satisfies(item.expected, item.details[BASELINE_KEY]):
        return "the value observed before the change already met the expectation"
    return None
