"""``claim observe ...``: the observer group, and what its subcommands share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..match import satisfies
from ..observe._common import Observation, ObserverSettings, run_observer
from . import EXIT_VERIFIED, app
from ._output import emit_json, say

TIMEOUT = click.FloatRange(min=0, min_open=True)

Describe = Callable[[dict[str, Any]], str]


@app.group("observe")
def observe_group() -> None:
    """Observe the world from outside the agent loop and record evidence in a claim.

    \b
    Exit 0 when an observation was recorded, whatever it shows (failing tests are an
    observation too); 5 when no observation could be made.
    """


def recorded_line(item: dict[str, Any]) -> str:
    """What was recorded and whether the observation met the expectation (which is not the
    verdict: timing, coverage and the policy decide that)."""
    agrees = satisfies(item["expected"], item["observed_value"])
    outcome = "observed as expected" if agrees else "observed value differs from expected"
    return f"{item['check_type']} {item['target']}: {outcome}"


def record_and_report(
    settings: ObserverSettings,
    check_type: str,
    observe: Callable[[], Observation],
    failed_target: str,
    failed_expected: Any,
    describe: Describe = recorded_line,
) -> int:
    """Observe once, record the item, and say in one line what was recorded."""
    item = run_observer(settings, check_type, observe, failed_target, failed_expected)
    if settings.as_json:
        emit_json(
            {
                "path": settings.claim_path,
                "recorded": not settings.print_only,
                "evidence": item,
                "as_expected": satisfies(item["expected"], item["observed_value"]),
            }
        )
    elif not settings.print_only:
        say(f"recorded {item['id']}: {describe(item)}")
    return EXIT_VERIFIED
