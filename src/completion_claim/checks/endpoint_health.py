"""endpoint_health: a live request after a deploy, asserting something the deploy changes."""

from __future__ import annotations

from ..model import Evidence

STATUS_KEY = "status"


def why_not_discriminating(item: Evidence) -> str | None:
    """A status code alone would read the same before and after the deploy."""
    expected = item.expected
    if type(expected) is not dict or set(expected) <= {STATUS_KEY}:
        return "asserts only the status, which does not change with the deploy"
    return None
