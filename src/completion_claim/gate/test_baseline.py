"""The start's test baseline: the tests that passed before the agent worked stay required after.

Without it a run passes on the tests it still runs: code that makes its own failing test skip
(``pytest.skip`` or ``unittest.SkipTest`` raised from the code under test, a Go ``t.Skip``
reached from it), or a unit test deleted from a source file, leaves a run with no failure
(attack 93). Skips are legitimate in general (a platform's), so the gate does not refuse skips:
it runs each test_run check once at ``claim gate --start``, exactly as it will judge (same
observer, same trusted ref and operator's copies, the work tree as it is before the agent
worked), and records the report names of the tests that passed. When judging, each of them must
have passed again; one skipped, missing, failed or errored leaves the change unverified.

A test failing at the start is not required (fixing it is usually the task). A baseline that
could not be taken is recorded with why, and the gate then judges without it and says so: a
missing baseline adds no requirement, and can never make a verdict verified that would not be
otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ObservationFailed, UsageError
from ..model import Mutation
from ..timefmt import format_time
from .anchors import pinned_trusted_ref, stored_content
from .config import GateConfig, TestRunCheck

if TYPE_CHECKING:
    from ..observe.mirror import Mirror
    from ..observe.test_run import RunRequest

RECORD_KEY = "test_baselines"
"""The start record's list of test baselines, one per test_run check that takes one."""
PASSED_KEY = "baseline_passed"
ERROR_KEY = "baseline_error"


def test_request(
    config: GateConfig,
    check: TestRunCheck,
    root: Path,
    timeout: float,
    trusted_ref: str | None,
    record: Mapping[str, Any] | None,
    mirror: Mirror | None,
    ignored: Sequence[str],
) -> tuple[RunRequest, str | None]:
    """The run the gate observes for this check, and why it cannot run (a trusted ref named by
    a name nobody pinned), if so. One definition for the start and the judging, so the baseline
    is of the run that is judged."""
    from ..observe import test_run  # noqa: PLC0415 - the CLI starts without the runners

    problem = commit = stored = None
    try:
        commit = pinned_trusted_ref(trusted_ref or check.trusted_ref, record)
    except ObservationFailed as failure:
        problem = str(failure)
    if commit is not None:
        stored = stored_content(config, root, record, commit, check.protect)
    request = test_run.prepare(
        check.command, root, check.junit, check.require_tests, max(timeout, 0.001),
        [root / rel for rel in ignored], python=check.chosen_toolchain, env_names=check.env,
        sandboxed=True, network=check.network,
        trusted_ref=commit, trusted_content=stored, protect=check.protect,
        secret_files=() if config.sign_key is None else (str(config.sign_key),),
        dependency_cache=config.runs_dir / "dependencies",
        mirror=mirror, hidden_tests=check.hidden_tests,
        allow_test_aware=config.allow_test_aware,
    )  # fmt: skip
    return request, problem


def take_test_baselines(
    config: GateConfig,
    root: Path,
    anchors: Mapping[str, Any],
    mutations: Sequence[Mutation],
    ignored: Sequence[str],
    capture_error: str | None,
    mirror: Mirror | None,
) -> list[dict[str, Any]]:
    """Run each test_run check that takes a baseline once, on the work tree as it is now (bound
    to ``mutations``, its differences from HEAD, read through ``mirror`` as the capture read
    it); each check's entry names the tests that passed, or says why none could be taken.
    ``anchors``: the start record's so far (the trusted refs it pinned, the operator's
    copies)."""
    from ..observe import test_run  # noqa: PLC0415

    deadline = None if config.timeout_s is None else _now() + config.timeout_s
    entries = []
    for check in config.checks:
        if not isinstance(check, TestRunCheck) or not check.baseline:
            continue
        timeout = check.timeout_s if deadline is None else min(check.timeout_s, deadline - _now())
        request, problem = test_request(
            config, check, root, timeout, None, anchors, mirror, ignored
        )
        entry: dict[str, Any] = {
            "target": request.target,
            "trusted_ref": request.trusted_ref,
            "runner": request.runner.name,
            "at": format_time(datetime.now(UTC)),
        }
        try:
            if capture_error is not None or problem is not None:
                raise ObservationFailed(capture_error or str(problem))
            if timeout <= 0:
                raise ObservationFailed("the start ran out of time ([gate].timeout_s)")
            seen = test_run.observe(request, mutations)
        except (ObservationFailed, UsageError) as failure:
            entry[ERROR_KEY] = str(failure)
        else:
            tests = seen.observed_value.get("tests")
            if not isinstance(tests, dict):
                why = seen.details.get("no_counts") or "no per-test results"
                entry[ERROR_KEY] = f"the run reported no tests: {why}"
            else:
                entry[PASSED_KEY] = sorted(n for n, outcome in tests.items() if outcome == "passed")
        entries.append(entry)
    return entries


@dataclass(frozen=True)
class Baseline:
    """What the start's baseline adds to one check's judging."""

    required: tuple[str, ...] = ()  # report names that passed at the start
    details: dict[str, Any] = field(default_factory=dict)  # added to the evidence's details
    note: str | None = None  # for the report, when the baseline is not used in full


def baseline_for(
    check: TestRunCheck, request: RunRequest, record: Mapping[str, Any] | None
) -> Baseline:
    """This check's baseline from the start record: its entry for the same command on the same
    trusted commit (another commit's tests are other tests)."""
    if not check.baseline:
        return Baseline(details={"baseline_taken": False}, note="off (baseline = false)")
    if record is None:
        return Baseline(details={"baseline_taken": False})
    entries = record.get(RECORD_KEY)
    if not isinstance(entries, list):
        return Baseline(
            details={"baseline_taken": False},
            note="not taken: the start record holds none (taken by an earlier version)",
        )
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("target") != request.target:
            continue
        if entry.get("trusted_ref") != request.trusted_ref:
            return Baseline(
                details={"baseline_taken": False},
                note=f"not used: taken on trusted commit {entry.get('trusted_ref')}, this run's "
                f"is {request.trusted_ref}",
            )
        at = entry.get("at")
        passed = entry.get(PASSED_KEY)
        if isinstance(passed, list) and all(isinstance(name, str) for name in passed):
            return Baseline(
                tuple(passed),
                {"baseline_taken": True, "baseline_at": at, PASSED_KEY: passed},
                None,
            )
        error = str(entry.get(ERROR_KEY) or "no result")
        return Baseline(
            details={"baseline_taken": True, "baseline_at": at, ERROR_KEY: error},
            note=f"could not be taken at the start ({error}); judged without it",
        )
    return Baseline(
        details={"baseline_taken": False},
        note="not taken: the check changed since the start; run claim gate --start again",
    )


def with_baseline(request: RunRequest, baseline: Baseline) -> RunRequest:
    """The request with the baseline's tests required besides the operator's."""
    if not baseline.required:
        return request
    return replace(request, required=tuple(dict.fromkeys((*request.required, *baseline.required))))


def _now() -> float:
    return datetime.now(UTC).timestamp()
