"""Canaries: tests of the observer's own, planted in every run beside the trusted tests.

The process that reports a test's outcome also runs the agent's code, which can patch the runner
(every test "passes" without running), disarm the assertions, or print a whole stream of passes
and exit. Each run therefore carries tests whose outcome the observer knows in advance: some must
pass, some must fail, with names and values drawn for the run and written with the assertions the
ecosystem's tests use (the runner decides how: ``Runner.canaries``). A report in which any of
them is missing or has the other outcome was not written by an honest run of the tests: the
observation records the report as forged, and no verdict built on it is verified.

The canaries are taken out of the counts the claim records: the run's ``tests``, ``passed``,
``failed`` are the project's own. A must-fail canary makes an honest runner exit with its failure
code; the expected exit code is that one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from secrets import token_hex
from typing import Any

from ..errors import ObservationFailed
from .run_tree import RunTree
from .runners.base import Canaries, Canary, Runner
from .runners.results import COUNT_KEYS, ERROR, FAILED, PASSED, SEVERITY, Results

HELD, FORGED, UNREPORTED, NOT_RUN = "held", "forged", "unreported", "not run"
CANARIES = "canaries"  # in the observed value, the expectation and the details
_WORD_BYTES = 6


def draw() -> str:
    """A word nobody can guess before the run: for a canary's name or value."""
    return token_hex(_WORD_BYTES)


def plant(
    runner: Runner,
    command: tuple[str, ...],
    tree: RunTree,
    cwd: str,
    plugin_folder: Path | None,
    hash_name: str,
    repeat: Sequence[str] = (),
) -> Canaries | None:
    """The runner's canaries for this run, with the tests it runs a second time (``repeat``,
    report names) where it can, written into the run's copy (at paths the work tree does not
    have, and not recorded as its files) and beside its plugin."""
    prefix = b"" if cwd == "." else os.fsencode(cwd) + b"/"
    files = [rel[len(prefix) :] for rel in tree.files if rel.startswith(prefix)]
    canaries = runner.canaries(command, files, draw)
    if canaries is None:
        return None
    if repeat:

        def read(rel: bytes) -> bytes | None:
            try:
                return tree.read(os.path.normpath(prefix + rel))
            except ObservationFailed:
                return None

        canaries = runner.repeat(canaries, repeat, draw, read)
    for name, data in canaries.files.items():
        rel = os.path.normpath(prefix + os.fsencode(name))
        if rel in tree.files or rel.startswith(b"../"):
            raise AssertionError(f"a canary may not replace the run's {name}")
        tree.write(rel, data, "100644", hash_name)
        del tree.files[rel], tree.object_ids[rel]  # the observer's, not the claim's
    if canaries.beside_plugin:
        assert plugin_folder is not None  # only a runner with a plugin plants beside it
        for name, data in canaries.beside_plugin.items():
            (plugin_folder / name).write_bytes(data)
    return canaries


def judged(results: Results, canaries: Canaries) -> tuple[Results, dict[str, Any]]:
    """The results without the canaries, and what they showed: every canary reported with its
    planted outcome (``held``), else the report is ``forged`` and the details name each one
    that was not."""
    tests: Mapping[str, str] = results.counts.get("tests") or {}
    counts = {key: value for key, value in results.counts.items() if key != "tests"}
    kept = dict(tests)
    wrong, planted = [], set()
    for canary in canaries.tests:
        want = canary.reported or (PASSED if canary.passes else FAILED)
        for name in _reported_names(canary, canaries, tests):
            planted.add(name)
            reported = kept.pop(name, None)
            if reported is not None and COUNT_KEYS[reported] in counts:
                counts[COUNT_KEYS[reported]] -= 1
            if reported != want:
                wrong.append({"test": name, "planted": want, "reported": reported or "missing"})
    repeated = _second_runs(kept, counts, canaries.repeats, results.failures)
    ours = planted | set(canaries.repeats)
    failures = [failure for failure in results.failures if failure["test"] not in ours]
    failures += repeated
    if results.counts:
        results = replace(results, counts=counts | {"tests": kept}, failures=failures)
    details: dict[str, Any] = {"planted": len(canaries.tests)}
    if not results.counts:
        details["state"] = UNREPORTED  # no per-test report: a runner with one was kept from it
    elif not tests:
        # A run of no test at all (a runner plants none where the project has none): nothing
        # to check them in, and nothing a verdict can rest on either (not discriminating).
        details["state"] = NOT_RUN
    elif wrong:
        details |= {"state": FORGED, "wrong": wrong}
    else:
        details["state"] = HELD
    return results, details


def _second_runs(
    kept: dict[str, str],
    counts: dict[str, Any],
    repeats: Mapping[str, str],
    failures: Sequence[dict[str, str]],
) -> list[dict[str, str]]:
    """Each repeated test's outcome made the worse of its two runs (its second run's report
    taken out of ``kept`` and ``counts``), and the failures of those the second run failed. A
    second run missing from the report leaves the test as its first run left it: the runner's
    build did not reach it (the canaries judge a report the code under test made)."""
    added = []
    for again, test in repeats.items():
        second = kept.pop(again, None)
        if second is None:
            continue
        if COUNT_KEYS[second] in counts:
            counts[COUNT_KEYS[second]] -= 1
        first = kept.get(test)
        if first is None or SEVERITY[second] <= SEVERITY[first]:
            continue
        kept[test] = second
        for outcome, change in ((first, -1), (second, 1)):
            if COUNT_KEYS[outcome] in counts:
                counts[COUNT_KEYS[outcome]] += change
        said = next((f["message"] for f in failures if f["test"] == again), "")
        message = "passed, then failed when run a second time in the same process"
        added.append({"test": test, "outcome": second,
                      "message": f"{message}: {said}" if said else message})  # fmt: skip
    return added


def _reported_names(canary: Canary, canaries: Canaries, tests: Mapping[str, str]) -> list[str]:
    """The names ``canary`` must be reported under: its own, or, added to each test file, its
    name in every file that ran a test (an error loading a file runs none of its tests, the
    canaries' either; that file is not verified anyway)."""
    if not canary.in_each_file:
        return [canary.name]
    ours = tuple(f"::{each.name}" for each in canaries.tests if each.in_each_file)
    files = {
        name.split("::", 1)[0]
        for name, outcome in tests.items()
        if outcome != ERROR and not name.endswith(ours)
    }
    return [f"{file}::{canary.name}" for file in sorted(files)]
