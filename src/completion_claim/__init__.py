"""completion-claim: decide whether an AI agent really finished, from observations of the world.

The public API is what this module exports; everything else is private and may change.
"""

from .errors import ClaimError, InvalidDocument, ObservationFailed, UsageError
from .model import (
    ABSENT,
    BUILTIN_POLICY,
    Claim,
    Evidence,
    Mutation,
    Policy,
    Task,
    VerifierRef,
    load_claim,
    load_policy,
    parse_claim,
    parse_policy,
)
from .trust import check_signatures
from .verify import Coverage, EvidenceResult, Finding, NotCounted, Unmet, Verdict, verify

__version__ = "0.1.0"

__all__ = [
    "ABSENT",
    "BUILTIN_POLICY",
    "Claim",
    "ClaimError",
    "Coverage",
    "Evidence",
    "EvidenceResult",
    "Finding",
    "InvalidDocument",
    "Mutation",
    "NotCounted",
    "ObservationFailed",
    "Policy",
    "Task",
    "Unmet",
    "UsageError",
    "Verdict",
    "VerifierRef",
    "__version__",
    "check_signatures",
    "load_claim",
    "load_policy",
    "parse_claim",
    "parse_policy",
    "verify",
]
