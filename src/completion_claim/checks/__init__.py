"""How each check type's observation is judged. Pure: no I/O.

A check type adds one module here with a ``why_not_discriminating`` function; the registry below
is the list of known types (evidence of any other type does not qualify).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..model import Evidence
from . import endpoint_health, state_readback, test_run
from ._common import asserts_nothing, baseline_already_met

Judge = Callable[[Evidence], str | None]

CHECK_TYPES: Mapping[str, Judge] = {
    "test_run": test_run.why_not_discriminating,
    "endpoint_health": endpoint_health.why_not_discriminating,
    "state_readback": state_readback.why_not_discriminating,
}


def why_not_discriminating(item: Evidence) -> str | None:
    """Why this observation could not have failed, or None when it could have."""
    return asserts_nothing(item) or baseline_already_met(item) or CHECK_TYPES[item.check_type](item)
