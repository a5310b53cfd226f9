"""Small builders for claim documents in tests: valid by default, overridable per field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from completion_claim import Claim, parse_claim
from completion_claim.timefmt import format_time

T0 = datetime(2026, 8, 27, 18, 0, 0, tzinfo=UTC)


def ts(seconds: float) -> str:
    """An RFC 3339 time ``seconds`` after T0."""
    return format_time(T0 + timedelta(seconds=seconds))


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def mutation(mid: str = "m1", t: float = 0, **over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": mid, "kind": "state_write", "target": "accounts/4471", "at": ts(t)}
    doc.update(over)
    return doc


def evidence(t: float = 10, covers: list[str] | None = None, **over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "check_type": "state_readback",
        "target": "accounts/4471",
        "expected": {"billing_zip": "94107"},
        "observed_value": {"billing_zip": "94107"},
        "at": ts(t),
        "covers": ["m1"] if covers is None else covers,
        "verifier": {"id": "ci/1", "kind": "independent"},
    }
    doc.update(over)
    return doc


def claim_doc(
    mutations: list[dict[str, Any]] | None = None,
    evidence_items: list[dict[str, Any]] | None = None,
    **over: Any,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "spec_version": "0.1",
        "task": {"id": "deploy-4471", "description": "Update the billing address"},
        "claimed_outcome": "Updated the billing address on account 4471.",
        "mutations": [mutation()] if mutations is None else mutations,
        "evidence": [evidence()] if evidence_items is None else evidence_items,
    }
    doc.update(over)
    return doc


def build(
    mutations: list[dict[str, Any]] | None = None,
    evidence_items: list[dict[str, Any]] | None = None,
    **over: Any,
) -> Claim:
    return parse_claim(claim_doc(mutations, evidence_items, **over))
