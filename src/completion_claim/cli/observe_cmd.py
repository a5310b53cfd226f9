"""``claim observe ...``: the observer commands (one subcommand per check type)."""

from __future__ import annotations

from . import app


@app.group("observe")
def observe_group() -> None:
    """Observe the world from outside the agent loop and record evidence in a claim.

    \b
    Exit 0 when an observation was recorded, whatever it shows (failing tests are an
    observation too); 5 when no observation could be made.
    """
