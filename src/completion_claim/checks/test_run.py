"""test_run: named tests or a build, run after the final file modification."""

from __future__ import annotations

from ..model import Evidence

COUNT_KEYS = ("passed", "failed", "errors")


def why_not_discriminating(item: Evidence) -> str | None:
    """A run whose counts show that no test executed could not have failed."""
    observed = item.observed_value
    if type(observed) is not dict:
        return None
    counts = [observed.get(key) for key in COUNT_KEYS]
    if any(key in observed for key in COUNT_KEYS) and all(
        type(count) is int and count == 0 for count in counts if count is not None
    ):
        return "no test was executed"
    return None
