"""What a runner's report says of its tests, in one shape for every runner.

A report is untrusted input (the run wrote it). Per-test outcomes are tallied the same way for
every runner: when one name appears more than once, the least favourable outcome stands; the
first MAX_FAILURES failed or errored tests keep the first line of their message, for the agent and
people to read, never judged.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any
from xml.parsers import expat

from ...errors import ObservationFailed

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
COUNT_KEYS = {PASSED: "passed", FAILED: "failed", ERROR: "errors", SKIPPED: "skipped"}
SEVERITY = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}
MAX_REPORT_BYTES = 64 * 1024 * 1024
MAX_FAILURES = 20  # failed tests whose first message line is kept in details.failures
MAX_FAILURE_CHARS = 200


@dataclass(frozen=True)
class Results:
    """What the runner reported of its tests: counts and ``tests`` (empty when nothing counts,
    and then why), and its failed and errored tests for people."""

    counts: dict[str, Any]
    failures: list[dict[str, str]]
    none_because: str = ""
    # What the runtime monitor caught the changed code doing (:mod:`..runtime_monitor`): the
    # event, the file as the run saw it, and the line.
    monitored: tuple[tuple[str, str, int], ...] = ()
    # Each outcome the report gives each test, in report order (a repeated test's two runs).
    runs: dict[str, list[str]] = field(default_factory=dict)


def tally(outcomes: Iterable[tuple[str, str, str]]) -> Results:
    """Results from ``(report name, outcome, message)`` per test case, in report order."""
    counts: Counter[str] = Counter()
    runs: dict[str, list[str]] = {}
    tests: dict[str, str] = {}
    failures: list[dict[str, str]] = []
    for name, outcome, message in outcomes:
        counts[outcome] += 1
        runs.setdefault(name, []).append(outcome)
        if name not in tests or SEVERITY[outcome] > SEVERITY[tests[name]]:
            tests[name] = outcome
        if outcome in (FAILED, ERROR) and len(failures) < MAX_FAILURES:
            failures.append({"test": name, "outcome": outcome, "message": first_line(message)})
    totals = {key: counts[outcome] for outcome, key in COUNT_KEYS.items()}
    return Results(totals | {"tests": tests}, failures, runs=runs)


def ran_twice(results: Results, repeated: Iterable[str]) -> tuple[Results, list[str]]:
    """The results with each test of ``repeated`` counted once, by the worse of its runs (the
    second run is no further test: ``min_tests`` counts tests), and each that passed but was
    reported fewer than two times taken as skipped; and those tests. The runner was to run it
    a second time, and a run in which the second never happened (the code kept it from being
    added) is no proof that the outcome does not depend on how often the code was called."""
    tests: dict[str, str] = dict(results.counts.get("tests") or {})
    if not tests:
        return results, []
    counts = dict(results.counts)
    once = []
    for name in dict.fromkeys(repeated):
        outcomes = results.runs.get(name, [])
        if name not in tests or not outcomes:
            continue
        for outcome in outcomes:
            counts[COUNT_KEYS[outcome]] -= 1
        if tests[name] == PASSED and len(outcomes) < 2:
            tests[name] = SKIPPED
            once.append(name)
        counts[COUNT_KEYS[tests[name]]] += 1
    return replace(results, counts=counts | {"tests": tests}), once


def no_counts(why: str) -> Results:
    return Results({}, [], why)


def first_line(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > MAX_FAILURE_CHARS:
        first = first[: MAX_FAILURE_CHARS - 3] + "..."
    return first


# --- JUnit XML ------------------------------------------------------------------------------


def junit_results(data: bytes) -> Results:
    """Results from a JUnit XML report: a test is ``<classname>::<name>``."""
    return tally(junit_cases(data))


def parse_junit(data: bytes) -> dict[str, Any]:
    """Counts and per-test outcomes from a JUnit XML report (untrusted input)."""
    return junit_results(data).counts


def junit_failures(data: bytes) -> list[dict[str, str]]:
    """Each failed or errored test (the first MAX_FAILURES) with its message's first line."""
    return junit_results(data).failures


def junit_cases(data: bytes) -> Iterable[tuple[str, str, str]]:
    """Each test case of a JUnit XML report: ``(classname::name, outcome, message)``."""
    root = junit_root(data)
    for case in root.iter("testcase"):
        outcome = _outcome(case)
        element = case.find("failure" if outcome == FAILED else "error")
        text = "" if element is None else element.get("message") or element.text or ""
        yield f"{case.get('classname', '')}::{case.get('name', '')}", outcome, text


def junit_root(data: bytes) -> ET.Element:
    """The report's root element, once a DOCTYPE or entity declaration has been refused."""
    _refuse_declarations(data)
    try:
        root = ET.fromstring(data)  # noqa: S314 - declarations are refused above
    except ET.ParseError as exc:
        raise ObservationFailed(f"the JUnit report is not XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ObservationFailed(f"not a JUnit report: the root element is <{root.tag}>")
    return root


class _Declaration(Exception):
    """Raised from the expat handler on the first DOCTYPE or entity declaration."""


def _refuse_declarations(data: bytes) -> None:
    """A report may not declare a DOCTYPE or entities: expansion is a way to make a small file
    huge, and nothing a test report needs."""
    parser = expat.ParserCreate()

    def refuse(*_: object) -> None:
        raise _Declaration

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(data, True)
    except _Declaration:
        raise ObservationFailed("the JUnit report declares a DOCTYPE or entities") from None
    except expat.ExpatError as exc:
        raise ObservationFailed(f"the JUnit report is not XML: {exc}") from None


def _outcome(case: ET.Element) -> str:
    if case.find("failure") is not None:
        return FAILED
    if case.find("error") is not None:
        return ERROR
    if case.find("skipped") is not None:
        return SKIPPED
    return PASSED
