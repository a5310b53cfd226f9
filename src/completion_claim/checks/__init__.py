"""How each check type's observation is judged. Pure: no I/O.

A check type adds one module here with a ``why_not_discriminating`` function, and its name to
``model.KNOWN_CHECK_TYPES``; the registry below is the list of known types (evidence of any
other type does not qualify).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..model import (
    DOM_ASSERTION,
    ENDPOINT_HEALTH,
    EXPERIMENTAL_CHECK_TYPES,
    STATE_READBACK,
    TEST_RUN,
    Evidence,
    Policy,
)
from . import dom_assertion, endpoint_health, state_readback, test_run
from ._common import asserts_nothing, baseline_already_met

Judge = Callable[[Evidence, Policy], str | None]

CHECK_TYPES: Mapping[str, Judge] = {
    TEST_RUN: test_run.why_not_discriminating,
    ENDPOINT_HEALTH: endpoint_health.why_not_discriminating,
    STATE_READBACK: state_readback.why_not_discriminating,
    DOM_ASSERTION: dom_assertion.why_not_discriminating,
}


def why_switched_off(item: Evidence, policy: Policy) -> str | None:
    """An experimental check type counts only under a policy that keeps them on."""
    if item.check_type in EXPERIMENTAL_CHECK_TYPES and not policy.experimental_checks:
        return f"{item.check_type} is experimental"
    return None


def why_not_discriminating(item: Evidence, policy: Policy) -> str | None:
    """Why this observation could not have failed, or None when it could have."""
    return (
        asserts_nothing(item)
        or baseline_already_met(item)
        or CHECK_TYPES[item.check_type](item, policy)
    )
