"""How much signature checking one claim may ask for.

Pure (no ``cryptography``): the model applies these bounds when it parses a claim, so a claim
built to keep the verifier trying keys is invalid input before any key is tried, in every mode.
Within the bounds, signed mode verifies each (signature, candidate key) pair at most once, so its
cost is at most ``MAX_SIGNATURES_PER_CLAIM`` times the number of keys in the operator's policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import InvalidDocument

MAX_SIGNATURES_PER_ENVELOPE = 8
"""An observer signs once; a few more allow key rotation and co-signing."""
MAX_SIGNATURES_PER_CLAIM = 4096
"""Far more evidence than one task has; bounds the worst case to seconds."""


def check_signature_bounds(attestations: Iterable[dict[str, Any] | None]) -> None:
    """Invalid input when an evidence item's envelope, or the claim as a whole, carries more
    signatures than the bounds allow. ``attestations`` are the evidence items' in order.

    Only arrays are counted: any other ``signatures`` value is a malformed envelope, which
    signed mode reports as a finding on that item.
    """
    total = 0
    for index, attestation in enumerate(attestations):
        signatures = None if attestation is None else attestation.get("signatures")
        if type(signatures) is not list:
            continue
        if len(signatures) > MAX_SIGNATURES_PER_ENVELOPE:
            raise InvalidDocument(
                f"evidence[{index}].attestation.signatures",
                f"{len(signatures)} signatures; an envelope may carry at most "
                f"{MAX_SIGNATURES_PER_ENVELOPE}",
            )
        total += len(signatures)
    if total > MAX_SIGNATURES_PER_CLAIM:
        raise InvalidDocument(
            "evidence",
            f"{total} signatures in all; a claim may carry at most {MAX_SIGNATURES_PER_CLAIM}",
        )
