"""The test baseline: every test seen before the agent worked is accounted for after.

Without it a run passes on the tests it still runs: code that makes a test skip (``pytest.skip``,
``pytest.xfail`` or ``unittest.SkipTest`` raised from the code under test, a Go ``init()``
narrowing ``-test.run``), or a case the code no longer yields, leaves a run with no failure
(attacks 93, 98). Skips are legitimate in general (a platform's), so the gate does not refuse
skips: it runs each test_run check once at ``claim gate --start``, exactly as it will judge
(same observer, same trusted ref and operator's copies, the work tree as it is before the agent
worked), and records every test the run reported with its outcome. When judging, each test that
passed, failed or errored then must have run and passed: skipped, missing, failed or errored
leaves the change unverified, naming the test. The failing one is usually the task; a test
skipped at the start (a platform's skip) stays unrequired.

The baseline belongs to the trusted commit, not to whichever start record exists: judging with
a trusted commit the start did not run on (CI: ``--base`` and ``--trusted-ref``, no start), the
trusted commit's own tests are run on its own code, a control run (:mod:`.control_run`), kept
per commit and command in the operator's runs folder.

A baseline that could not be taken is recorded with why, and the gate then judges without it
and says so: a missing baseline adds no requirement, and can never make a verdict verified that
would not be otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ObservationFailed, UsageError
from ..model import Mutation
from ..observe.runners.results import ERROR, PASSED, SKIPPED
from ..timefmt import format_time
from .anchors import pinned_trusted_ref, stored_content
from .config import GateConfig, TestRunCheck

if TYPE_CHECKING:
    from ..observe._common import Observation
    from ..observe.mirror import Mirror
    from ..observe.run_tree import TrustedContent
    from ..observe.test_run import RunRequest

RECORD_KEY = "test_baselines"
"""The start record's list of test baselines, one per test_run check that takes one."""
TESTS_KEY = "baseline_tests"
"""``{report name: outcome}`` of every test the baseline's run reported."""
PASSED_KEY = "baseline_passed"
"""A start record of an earlier version: the report names of the tests that passed."""
ERROR_KEY = "baseline_error"
FROM_KEY = "baseline_from"
FROM_START = "the start"
RENAMED_KEY = "baseline_renamed"
"""Go subtests the baseline saw under another name: ``{name then: a new subtest of its parent}``."""
LOADED_KEY = "baseline_loaded"
"""Units that errored at the baseline and now load: ``{name: [tests within it, the first few]}``."""
_LOADED_SHOWN = 5
_FAILED_IMPORT = "unittest.loader._FailedTest."  # unittest's stand-in for a module it cannot load


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
    problem = commit = stored = None
    try:
        commit = pinned_trusted_ref(trusted_ref or check.trusted_ref, record)
    except ObservationFailed as failure:
        problem = str(failure)
    if commit is not None:
        stored = stored_content(config, root, record, commit, check.protect)
    request = check_request(
        config, check, root, timeout, trusted_ref=commit, trusted_content=stored, mirror=mirror,
        excluded=[root / rel for rel in ignored],
    )  # fmt: skip
    return request, problem


def check_request(
    config: GateConfig,
    check: TestRunCheck,
    cwd: Path,
    timeout: float,
    *,
    trusted_ref: str | None,
    trusted_content: TrustedContent | None,
    mirror: Mirror | None,
    excluded: Sequence[Path],
) -> RunRequest:
    """The check's run in ``cwd``: the operator's toolchain, environment, network and
    dependency cache, whatever the tree it runs on."""
    from ..observe import test_run  # noqa: PLC0415 - the CLI starts without the runners

    return test_run.prepare(
        check.command, cwd, check.junit, check.require_tests, max(timeout, 0.001), excluded,
        python=check.chosen_toolchain, env_names=check.env, sandboxed=True,
        network=check.network, trusted_ref=trusted_ref, trusted_content=trusted_content,
        protect=check.protect,
        secret_files=() if config.sign_key is None else (str(config.sign_key),),
        dependency_cache=config.runs_dir / "dependencies",
        mirror=mirror, hidden_tests=check.hidden_tests,
        allow_test_aware=config.allow_test_aware,
    )  # fmt: skip


def tests_seen(seen: Observation) -> dict[str, Any]:
    """A baseline entry's result from its run: every test it reported with its outcome, or why
    it reported none."""
    tests = seen.observed_value.get("tests")
    if not isinstance(tests, dict):
        why = seen.details.get("no_counts") or "no per-test results"
        return {ERROR_KEY: f"the run reported no tests: {why}"}
    return {TESTS_KEY: dict(sorted(tests.items()))}


def take_test_baselines(
    config: GateConfig,
    root: Path,
    anchors: Mapping[str, Any],
    mutations: Sequence[Mutation],
    ignored: Sequence[str],
    capture_error: str | None,
    mirror: Mirror | None,
    trusted_ref: str | None = None,
) -> list[dict[str, Any]]:
    """Run each test_run check that takes a baseline once, on the work tree as it is now (bound
    to ``mutations``, its differences from HEAD, read through ``mirror`` as the capture read
    it), with ``trusted_ref`` (``--trusted-ref``) in place of each check's own when given; each
    check's entry holds every test the run reported and its outcome, or says why none could be
    taken. ``anchors``: the start record's so far (the trusted refs it pinned, the operator's
    copies)."""
    from ..observe import test_run  # noqa: PLC0415

    deadline = None if config.timeout_s is None else _now() + config.timeout_s
    entries = []
    for check in config.checks:
        if not isinstance(check, TestRunCheck) or not check.baseline:
            continue
        timeout = check.timeout_s if deadline is None else min(check.timeout_s, deadline - _now())
        request, problem = test_request(
            config, check, root, timeout, trusted_ref, anchors, mirror, ignored
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
            entry |= tests_seen(seen)
        entries.append(entry)
    return entries


@dataclass(frozen=True)
class Baseline:
    """What the baseline adds to one check's judging."""

    required: tuple[str, ...] = ()  # report names seen at the baseline, not skipped then
    seen: frozenset[str] = frozenset()  # every report name the baseline saw, skipped included
    # Those that failed or errored then: the change is to make them pass, and they run twice.
    failing: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)  # added to the evidence's details
    note: str | None = None  # for the report: where the baseline came from, or why it is not used


def baseline_for(
    check: TestRunCheck,
    request: RunRequest,
    record: Mapping[str, Any] | None,
    control: Callable[[], Mapping[str, Any]],
) -> Baseline:
    """This check's baseline: the start record's entry for the same command on the same trusted
    commit (another commit's tests are other tests), else, with a trusted commit, ``control``'s
    entry, the trusted commit's own run."""
    if not check.baseline:
        return Baseline(details={"baseline_taken": False}, note="off (baseline = false)")
    entry, why_not = _start_entry(request, record)
    if entry is not None:
        return _from_entry(entry, FROM_START)
    if request.trusted_ref is not None:
        return _from_entry(control(), f"a control run on {request.trusted_ref}")
    return Baseline(details={"baseline_taken": False}, note=why_not)


def _start_entry(
    request: RunRequest, record: Mapping[str, Any] | None
) -> tuple[Mapping[str, Any] | None, str | None]:
    """The start record's entry for this run, else why there is none to use."""
    if record is None:
        return None, None
    entries = record.get(RECORD_KEY)
    if not isinstance(entries, list):
        return None, "not taken: the start record holds none (taken by an earlier version)"
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("target") != request.target:
            continue
        if entry.get("trusted_ref") != request.trusted_ref:
            return None, (
                f"not used: taken on trusted commit {entry.get('trusted_ref')}, this run's is "
                f"{request.trusted_ref}"
            )
        return entry, None
    return None, "not taken: the check changed since the start; run claim gate --start again"


def _from_entry(entry: Mapping[str, Any], source: str) -> Baseline:
    """The tests an entry requires: each it saw but those skipped then. An entry of an earlier
    version names only the tests that passed."""
    at = entry.get("at")
    tests = entry.get(TESTS_KEY)
    passed = entry.get(PASSED_KEY)
    if not isinstance(tests, dict) and isinstance(passed, list):
        tests = dict.fromkeys(passed, "passed")
    if isinstance(tests, dict) and all(isinstance(v, str) for v in (*tests, *tests.values())):
        required = {name: outcome for name, outcome in tests.items() if outcome != SKIPPED}
        details = {"baseline_taken": True, "baseline_at": at, FROM_KEY: source, TESTS_KEY: required}
        note = None if source == FROM_START else f"is {source}"
        failing = tuple(name for name, outcome in required.items() if outcome != PASSED)
        return Baseline(tuple(required), frozenset(tests), failing, details, note)
    error = str(entry.get(ERROR_KEY) or "no result")
    where = "at the start" if source == FROM_START else f"by {source}"
    return Baseline(
        details={"baseline_taken": True, "baseline_at": at, FROM_KEY: source, ERROR_KEY: error},
        note=f"could not be taken {where} ({error}); judged without it",
    )


def units_loaded(seen: Observation, baseline: Baseline, operators: Sequence[str]) -> Observation:
    """The observation with each test that errored at the baseline as a whole unit, and now
    loads, taken out of what it requires. A test module that could not be imported (pytest's
    ``::tests.test_calc``, unittest's ``unittest.loader._FailedTest.tests::test_calc``), a Go
    package that did not build (``example.com/calc::[build failed]``), a jest file that did not
    run (``<file>::<file>``): the task adds what it loads, and after the fix the unit's tests
    run under their own names. Such a name, gone from the run, is accounted for by the tests
    within it that the baseline never saw, when there is one and each passed; the details name
    them. A name the operator requires (``require_tests``) stays required."""
    tests = seen.observed_value.get("tests") if isinstance(seen.observed_value, dict) else None
    wanted = seen.expected.get("tests") if isinstance(seen.expected, dict) else None
    errored = baseline.details.get(TESTS_KEY) or {}
    if not isinstance(tests, dict) or not isinstance(wanted, dict):
        return seen
    loaded: dict[str, list[str]] = {}
    for name, then in errored.items():
        if then != ERROR or name in tests or name in operators:
            continue
        prefixes = _within(name)
        within = sorted(t for t in tests if t not in baseline.seen and t.startswith(prefixes))
        if within and all(tests[t] == PASSED for t in within):
            loaded[name] = within[:_LOADED_SHOWN]
    go = seen.details.get("runner") == "go"
    renamed = _renamed_subtests(baseline, operators, tests) if go else {}
    if not loaded and not renamed:
        return seen
    still = {name: outcome for name, outcome in wanted.items()
             if name not in loaded and name not in renamed}  # fmt: skip
    expected = {key: value for key, value in seen.expected.items() if key != "tests"}
    details = {**seen.details, **({LOADED_KEY: loaded} if loaded else {})}
    return replace(
        seen,
        expected=expected | ({"tests": still} if still else {}),
        details=details | ({RENAMED_KEY: renamed} if renamed else {}),
    )


def _renamed_subtests(
    baseline: Baseline, operators: Sequence[str], tests: Mapping[str, str]
) -> dict[str, str]:
    """Go subtests the baseline saw, gone from the run, each accounted for by a subtest of the
    same parent that the baseline never saw: a table test may name its subtests by what the
    code returned (``t.Run(fmt.Sprint(got), ...)``), and the fix renames them. The parent must
    have passed (a Go test fails with any of its subtests), and have at least as many new
    subtests, each passed, as it lost: a run narrowed to fewer subtests is not accounted for."""
    missing: dict[str, list[str]] = {}
    for name in baseline.required:
        package, _, test = name.partition("::")
        parent = test.rpartition("/")[0]
        if parent and name not in tests and name not in operators:
            missing.setdefault(f"{package}::{parent}", []).append(name)
    renamed: dict[str, str] = {}
    for parent, gone in missing.items():
        new = sorted(t for t in tests if t.rpartition("/")[0] == parent and t not in baseline.seen)
        passed = tests.get(parent) == PASSED and all(tests[t] == PASSED for t in new)
        if passed and len(new) >= len(gone):
            renamed |= dict(zip(sorted(gone), new, strict=False))
    return renamed


def _within(name: str) -> tuple[str, ...]:
    """How the names of the tests within a unit begin, from the name of its load error; none
    for the name of a test (an error in its own setup stands for that test alone)."""
    dotted = name.replace("::", ".")
    if dotted.startswith(_FAILED_IMPORT):  # unittest's: <module's package>::<module's name>
        module = dotted.removeprefix(_FAILED_IMPORT)
        return f"{module}.", f"{module}::"
    unit_class, _, unit = name.rpartition("::")
    if not unit_class:  # pytest's module that could not be imported
        return f"{unit}::", f"{unit}."
    if unit.startswith("[") or unit == unit_class:  # Go's package, jest's file
        return (f"{unit_class}::",)
    return ()


def with_baseline(request: RunRequest, baseline: Baseline) -> RunRequest:
    """The request with the baseline's tests required besides the operator's, and those that
    failed then run a second time, in reverse order (attack 135: a result that depends on how
    often or in what order the code ran fails one of the two)."""
    if not baseline.required:
        return request
    required = tuple(dict.fromkeys((*request.required, *baseline.required)))
    return replace(request, required=required, repeat=(*request.repeat, *baseline.failing))


def _now() -> float:
    return datetime.now(UTC).timestamp()
