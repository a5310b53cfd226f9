"""Proven independence: keys, DSSE envelopes, signed evidence, signed verdicts (docs/spec.md §8).

Modules that need ``cryptography`` (``dsse``, ``keys``, ``evidence``, ``verdicts``) are imported
only where signing or signed mode is used, so an unsigned verification never loads it. This
module imports none of them on its own for the same reason; ``canonical`` is pure.
"""

from __future__ import annotations

from ..model import Claim, Trust
from ..verify import Independence


def check_signatures(claim: Claim, trust: Trust) -> Independence:
    """Rule 1 in signed mode for ``verify(..., signatures=check_signatures)``: an item is
    independent when a trusted observer's valid signature binds it to this claim. Loads the
    crypto library on first use."""
    from .evidence import signed_independence  # noqa: PLC0415

    return signed_independence(claim, trust)
