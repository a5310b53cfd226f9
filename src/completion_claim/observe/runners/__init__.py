"""Test runners, one module per ecosystem behind one interface (:mod:`.base`).

The observer, the gate and ``claim init`` ask the registry, never an ecosystem by name: a new
runner is one module here and its line in ``RUNNERS``.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
from collections.abc import Iterable, Sequence
from functools import cache
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


PROTECTED = 1
CONFIGURATION = 2
# A test folder of any ecosystem: what is below it decides what a run does.
_TEST_FOLDERS = frozenset({b"tests", b"test"})
# What each path is, asked of every file of the tree on every run (100,000 in a monorepo), and
# a function of the path and this package's code alone: worked out once a path.
_KINDS: dict[bytes, int] = {}


def path_kind(rel: bytes) -> int:
    """``PROTECTED`` (under a test folder, or a test file or test configuration of any
    ecosystem) and ``CONFIGURATION`` (recorded by digest in a run's details), or 0."""
    kind = _KINDS.get(rel)
    if kind is None:
        parts = rel.split(b"/")
        protected = any(part in _TEST_FOLDERS for part in parts[:-1]) or any(
            runner.protected(rel) for runner in RUNNERS
        )
        configuration = any(runner.configuration(rel) for runner in RUNNERS)
        kind = _KINDS[rel] = PROTECTED * protected | CONFIGURATION * configuration
    return kind


def is_runner_protected(rel: bytes) -> bool:
    """Under a test folder, or a test file or test configuration of any ecosystem."""
    return bool(path_kind(rel) & PROTECTED)


def is_runner_configuration(rel: bytes) -> bool:
    return bool(path_kind(rel) & CONFIGURATION)


def of_kind(paths: Iterable[bytes], kind: int) -> list[bytes]:
    """Those of ``paths`` that are ``kind``: ``path_kind`` of each, in bulk (this runs over
    every file of the tree, whose kinds are mostly known already)."""
    paths = list(paths)
    for rel in itertools.filterfalse(_KINDS.__contains__, paths):
        path_kind(rel)
    kinds = map(operator.and_, map(_KINDS.__getitem__, paths), itertools.repeat(kind))
    return list(itertools.compress(paths, kinds))


_UNKNOWN = 255  # the kind kept for a path not worked out


def known_kinds(paths: Sequence[bytes]) -> bytes:
    """The kind of each of ``paths`` worked out so far (a byte each), to be kept for the next
    process."""
    return bytes(map(_KINDS.get, paths, itertools.repeat(_UNKNOWN)))


def remember_kinds(paths: Sequence[bytes], kinds: bytes) -> None:
    """Kinds kept by an earlier process (``known_kinds``) whose code had the same
    ``kinds_fingerprint``."""
    if len(kinds) == len(paths):
        _KINDS.update(zip(paths, kinds, strict=True))
        for rel in itertools.compress(paths, map(operator.eq, kinds, itertools.repeat(_UNKNOWN))):
            del _KINDS[rel]


@cache
def kinds_fingerprint() -> str:
    """The code that decides kinds: every module of this package, so that kinds kept under
    other rules (an upgrade, an edit) are never believed."""
    hasher = hashlib.sha256()
    for module in sorted(Path(__file__).parent.glob("*.py")):
        hasher.update(module.name.encode() + b"\0" + module.read_bytes() + b"\0")
    return hasher.hexdigest()


def protected_examples() -> list[str]:
    return [example for runner in RUNNERS for example in runner.examples]
