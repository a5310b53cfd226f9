"""The reason the gate gives the agent when it sends it back: which check failed and how, which
change is not covered, and what would count. Short, and built only from what the observers
recorded (already redacted) and the verdict: never the configuration's secrets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model import (
    DOM_ASSERTION,
    ENDPOINT_HEALTH,
    STATE_READBACK,
    TEST_RUN,
    UNCAPTURED,
    Claim,
    Evidence,
)
from ..report import describe_finding
from ..verify import Coverage, EvidenceResult, Verdict, evidence_ref

MAX_LINES = 12
MAX_LINE = 300
_WHAT = {
    TEST_RUN: "the test run",
    ENDPOINT_HEALTH: "the endpoint check of",
    STATE_READBACK: "the readback of",
    DOM_ASSERTION: "the page check of",
}
_WOULD_COUNT = {
    TEST_RUN: "a passing test_run of the configured tests after your last edit",
    ENDPOINT_HEALTH: "an endpoint_health check that sees the new value",
    STATE_READBACK: "a state_readback that reads the expected value back",
    DOM_ASSERTION: "a dom_assertion that sees the new value on the page",
}


def agent_reason(
    claim: Claim, verdict: Verdict, root: Path, capture_error: str | None = None
) -> str:
    """One line per problem, most useful first; "" when verified. The lines follow the verdict's
    codes; ``capture_error`` only words the one for a change the gate could not capture."""
    if verdict.state == "verified":
        return ""
    items = {evidence_ref(item, i): item for i, item in enumerate(claim.evidence)}
    mutations = {m.id: m for m in claim.mutations}
    lines = [
        f"the gate could not read your change: {capture_error or 'the work tree was unreadable'}"
        for unmet in verdict.unmet
        if unmet.code == "mutation_kind_unmapped"
        and unmet.mutation in mutations
        and mutations[unmet.mutation].kind == UNCAPTURED
    ]
    # With nothing changed no check runs (9.2): what a requirement lacks is then beside the point.
    unchanged = any(u.code == "no_mutations" for u in verdict.unmet)
    refuted = verdict.state == "refuted"
    for result in verdict.evidence:
        item = items[result.evidence]
        error = (item.details or {}).get("error")
        if isinstance(error, str):
            lines.append(f"{_subject(item)} could not run: {error}")
        elif result.contradicts:
            lines += _contradiction(item, result, root)
        lines += _tests_set_aside(item)
    for unmet in verdict.unmet:
        if unmet.code == "no_mutations":
            lines.append(
                "nothing changed in the work tree: make the change the task asks for, then stop"
            )
        elif unmet.code == "protected_target_changed" and unmet.mutation in mutations:
            lines.append(
                f"you changed {mutations[unmet.mutation].target}, the gate's configuration: "
                "restore it; it is the operator's, not yours to change"
            )
        elif unmet.code == "mutation_uncovered" and unmet.mutation in mutations:
            coverage = next(c for c in verdict.coverage if c.mutation == unmet.mutation)
            if not coverage.contradicted_by:  # the contradiction, named above, says it all
                lines.append(_uncovered(mutations[unmet.mutation], coverage, items))
        elif (
            unmet.code == "requirement_unmet"
            and unmet.check_type is not None
            and not (refuted or unchanged)
        ):
            lines.append(
                f"the policy requires a passing {unmet.check_type} observation; none counted"
            )
    if not lines:
        lines.append(verdict.reason)
    unique = list(dict.fromkeys(_shorten(line) for line in lines))
    if len(unique) > MAX_LINES:
        unique = [*unique[:MAX_LINES], f"... and {len(unique) - MAX_LINES} more"]
    return "\n".join(unique)


def _subject(item: Evidence) -> str:
    if item.check_type == TEST_RUN:
        return f"the test run ({item.target})"
    return f"{_WHAT.get(item.check_type, item.check_type)} {item.target}"


def _contradiction(item: Evidence, result: EvidenceResult, root: Path) -> list[str]:
    if item.check_type != TEST_RUN:
        return [f"{_subject(item)} failed: {result.mismatch or 'the observation differs'}"]
    failures = (item.details or {}).get("failures")
    lines = []
    if isinstance(failures, list):
        for failure in failures:
            if isinstance(failure, dict):
                name = node_id(str(failure.get("test", "")), root)
                verb = "failed" if failure.get("outcome") == "failed" else "errored"
                message = failure.get("message") or "no message"
                lines.append(f"{name} {verb}: {message}")
    lines += _baseline_lost(item, root)
    if not lines:
        observed = item.observed_value if isinstance(item.observed_value, dict) else {}
        lines.append(
            f"{_subject(item)} failed: {result.mismatch or 'the observation differs'}"
            + _tail_hint(item, observed)
        )
    return lines


_CASES_SHOWN = 3  # the cases a renamed one is said to have run as


def _baseline_lost(item: Evidence, root: Path) -> list[str]:
    """The tests the baseline saw (passed, failed or errored) that did not run and pass now,
    other than those named failing above: skipped (code that skips its own test) or no longer
    run at all."""
    seen = (item.details or {}).get("baseline_tests")
    observed = item.observed_value if isinstance(item.observed_value, dict) else {}
    tests = observed.get("tests")
    if not isinstance(seen, dict) or not isinstance(tests, dict):
        return []
    once = (item.details or {}).get("ran_once")
    once = once if isinstance(once, list) else []
    lines = []
    for name, then in seen.items():
        outcome = tests.get(name)
        if outcome in ("passed", "failed", "error"):  # a failure has its own line, with why
            continue
        before = {"passed": "passed", "failed": "failed", "error": "errored"}.get(str(then), then)
        if name in once:  # a Node runner's second run of it never happened (attack 176)
            lines.append(
                f"{node_id(str(name), root)} {before} before you started and ran once where "
                "the observer runs it twice: make it run and pass both times"
            )
            continue
        now = "skipped" if outcome == "skipped" else "not run at all" + _renamed(name, seen, tests)
        lines.append(
            f"{node_id(str(name), root)} {before} before you started and is now {now}: "
            "make it run and pass"
        )
    return lines


def _renamed(name: str, seen: dict[str, Any], tests: dict[str, Any]) -> str:
    """For a parametrized case gone under its name, the cases its function ran as that the
    baseline never saw: pytest names a case from its values, which may be the code's."""
    function, bracket, _ = name.partition("[")
    if not bracket:
        return ""
    ids = [test[len(function) :] for test in tests
           if test.startswith(f"{function}[") and test not in seen][:_CASES_SHOWN]  # fmt: skip
    if not ids:
        return ""
    short = function.rpartition("::")[2]
    return (
        f" ({short} ran as {', '.join(ids)}: a case named from values the change altered is "
        "another test to the baseline)"
    )


def _tests_set_aside(item: Evidence) -> list[str]:
    """The agent's edits to protected test paths that the trusted ref replaced: said, so that it
    stops editing the tests instead of the code."""
    restored = (item.details or {}).get("protected_restored")
    if item.check_type != TEST_RUN or not isinstance(restored, dict):
        return []
    paths = [
        str(path)
        for key in ("restored", "removed")
        if isinstance(restored.get(key), list)
        for path in restored[key]
    ]
    if not paths:
        return []
    return [
        f"your changes to {', '.join(paths[:5])} were not used: the tests run as the trusted ref "
        "has them, and changes to tests do not count; fix the code instead"
    ]


def _tail_hint(item: Evidence, observed: dict[str, Any]) -> str:
    """Why the observer counted no test (its own word, where it gave one), and the output's last
    line."""
    if "tests" in observed:
        return ""
    details = item.details or {}
    tail, why = details.get("output_tail"), details.get("no_counts")
    said = [str(why)[:400]] if isinstance(why, str) and why else []
    if isinstance(tail, list) and tail:
        said.append(f"last output: {str(tail[-1])[:120]}")
    return f" ({'; '.join(said)})" if said else ""


def _uncovered(mutation: Any, coverage: Coverage, items: dict[str, Evidence]) -> str:
    """Why no evidence covers this change, in the agent's terms, and what would count."""
    kind_to_check = {
        "file_write": TEST_RUN,
        "deploy": ENDPOINT_HEALTH,
        "state_write": STATE_READBACK,
        "ui_action": DOM_ASSERTION,
    }
    check_type = kind_to_check.get(mutation.kind, "check")
    why: list[str] = []
    attempted = False
    for result in coverage.not_counted:
        item = items[result.evidence]
        for finding in result.reasons:
            if finding.code == "kind_not_covered":
                continue
            if finding.code == "test_config_changed":
                changed = (item.details or {}).get("test_config_changed") or []
                named = ", ".join(str(path) for path in changed[:5]) or "the tests"
                why.append(f"you changed {named}; changes to tests do not count")
            elif finding.code == "not_discriminating" and "before the change" in (
                finding.detail or ""
            ):
                why.append(
                    f"{mutation.target} already had the expected value before you started, so "
                    "reading it back proves nothing about your change"
                )
            elif finding.code == "not_discriminating" and _crashed(item):
                observed = item.observed_value
                why.append(
                    f"the test run exited {observed['exit_code']} and reported no tests"
                    + _tail_hint(item, observed)
                )
            elif finding.code == "no_observation":
                attempted = True  # said above, with the observer's error
            else:
                why.append(describe_finding(finding))
    nothing = "its check could not observe it" if attempted else "no check of that type observed it"
    because = "; ".join(dict.fromkeys(why)) or nothing
    return (
        f"{mutation.target} ({mutation.kind}) is covered by no passing {check_type}: {because}; "
        f"what counts: {_WOULD_COUNT.get(check_type, 'an independent observation')}"
    )


def _crashed(item: Evidence) -> bool:
    observed = item.observed_value
    return (
        item.check_type == TEST_RUN
        and isinstance(observed, dict)
        and "tests" not in observed
        and observed.get("exit_code") != 0
    )


def node_id(report_name: str, root: Path) -> str:
    """``tests.test_calc::test_add`` as the pytest node id ``tests/test_calc.py::test_add``
    when that file is in the repository; else the report's own name."""
    classname, sep, name = report_name.partition("::")
    if not sep:
        return report_name
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return report_name


def _shorten(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."
