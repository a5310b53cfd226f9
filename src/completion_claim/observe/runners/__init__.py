"""Test runners, one module per ecosystem behind one interface (:mod:`.base`).

The observer, the gate and ``claim init`` ask the registry, never an ecosystem by name: a new
runner is one module here and its line in ``RUNNERS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .base import Detected, Runner
from .go import GoTest
from .java import Gradle, Maven
from .junit import JunitFile
from .node import Jest, Mocha, NodeTest, PackageScript, Vitest
from .pytest import Pytest
from .rust import CargoTest
from .unittest import Unittest

# In the order a command is offered to them; the first that recognises it runs it.
RUNNERS: tuple[Runner, ...] = (
    GoTest(),
    CargoTest(),
    Maven(),
    Gradle(),
    NodeTest(),
    Vitest(),
    Jest(),
    Mocha(),
    PackageScript(),
    Unittest(),
    Pytest(),
)
# An unrecognised command without a report runs with pytest's plugin channel open, so a pytest
# it starts (make test, a script) still reports; anything else is judged by its exit code.
FALLBACK: Runner = RUNNERS[-1]


def runner_for(command: Sequence[str], junit: str | None = None) -> Runner:
    for runner in RUNNERS:
        if runner.recognises(command):
            return runner
    return FALLBACK if junit is None else JunitFile(junit)


def detect(root: Path) -> list[tuple[Runner, Detected]]:
    """Every runner whose project ``claim init`` finds at ``root``."""
    found = ((runner, runner.detect(root)) for runner in RUNNERS)
    return [(runner, detected) for runner, detected in found if detected is not None]


def is_runner_protected(rel: bytes) -> bool:
    """A test file or test configuration of any ecosystem."""
    return any(runner.protected(rel) for runner in RUNNERS)


def is_runner_configuration(rel: bytes) -> bool:
    return any(runner.configuration(rel) for runner in RUNNERS)


def protected_examples() -> list[str]:
    return [example for runner in RUNNERS for example in runner.examples]
