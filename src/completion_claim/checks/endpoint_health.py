"""endpoint_health: a live request after a deploy, asserting something the deploy changes."""

from __future__ import annotations

from ..model import Evidence, Policy
from ._common import is_empty

STATUS_KEY = "status"


def why_not_discriminating(item: Evidence, policy: Policy) -> str | None:
    """A status code alone would read the same before and after the deploy; empty members
    (``"json": {}``) assert nothing beside it."""
    del policy
    expected = item.expected
    if type(expected) is not dict or all(
        key == STATUS_KEY or is_empty(value) for key, value in expected.items()
    ):
        return "asserts only the status, which does not change with the deploy"
    return None
