"""state_readback: the record read back from the system of record after the write."""

from __future__ import annotations

from ..model import Evidence, Policy


def why_not_discriminating(item: Evidence, policy: Policy) -> str | None:
    """Any non-empty expectation of the record can fail; the shared rules cover the rest."""
    del item, policy
    return None
