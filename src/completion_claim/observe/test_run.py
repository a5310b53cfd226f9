"""test_run observed: run the tests once, outside the agent loop, and record what the run showed.

Only two things are trusted: the command's exit code, and a JUnit XML report this observer asked
for (pytest is given ``--junitxml`` into a folder the observer owns) or was told to read
(``--junit``) and saw written during the run. What the tests print is kept for people to read and
never judged.

The run is bound to the exact files it saw: the workspace digest is taken before and after, and a
run during which the workspace changed is not evidence of anything.

Report names: a test is ``<classname>::<name>`` as the report spells them. A required test may be
named that way or by its pytest node id (``tests/test_x.py::TestA::test_b[1]``), which is mapped
the way pytest's junitxml plugin maps node ids (path separators become dots, ``.py`` is dropped,
classes join the module: ``tests.test_x.TestA::test_b[1]``). Matching is exact: a test the report
does not name is absent, and absent is not passed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import stat
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.parsers import expat

from ..errors import ObservationFailed, UsageError
from ._common import Observation
from .workspace import Workspace, changed_paths, config_digests, tree_digest

CHECK_TYPE = "test_run"
PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
COUNT_KEYS = {PASSED: "passed", FAILED: "failed", ERROR: "errors", SKIPPED: "skipped"}
# When one name appears more than once in a report, the least favourable outcome stands.
_SEVERITY = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}
MAX_REPORT_BYTES = 64 * 1024 * 1024
OUTPUT_TAIL_LINES = 20
_OUTPUT_TAIL_BYTES = 64 * 1024
_CHANGED_NAMED = 5
_PYTHON = re.compile(r"(python|pypy)[0-9.]*")
_PYTEST_PROGRAMS = frozenset({"pytest", "py.test"})
_PYTEST_REPORT_OPTIONS = ("--junitxml", "--junit-xml")


@dataclass(frozen=True)
class RunRequest:
    """One test run to observe. Build it with :func:`prepare` so mistakes surface before any run."""

    command: tuple[str, ...]
    cwd: Path
    report: Path | None  # the JUnit file the command writes; None for pytest or a bare command
    pytest: bool
    required: tuple[str, ...]  # report names (classname::name) that must have passed
    timeout_s: float
    excluded: tuple[Path, ...]  # files the observer itself writes (the claim)

    @property
    def target(self) -> str:
        return shlex.join(self.command)

    @property
    def expected(self) -> dict[str, Any]:
        expected: dict[str, Any] = {"exit_code": 0}
        if self.required:
            expected["tests"] = dict.fromkeys(self.required, PASSED)
        return expected


def prepare(
    command: Sequence[str],
    cwd: Path,
    junit: str | None,
    require_tests: Sequence[str],
    timeout_s: float,
    excluded: Sequence[Path],
) -> RunRequest:
    pytest = is_pytest(command)
    if pytest and junit is not None:
        raise UsageError("--junit is for other commands: pytest is asked for its own report")
    if pytest and any(arg.startswith(_PYTEST_REPORT_OPTIONS) for arg in command):
        raise UsageError(
            "remove --junitxml from the pytest command: the observer asks pytest for its own "
            "report, in a folder it owns"
        )
    if require_tests and not pytest and junit is None:
        raise UsageError(
            "--require-test needs a report: run pytest, or name the report with --junit"
        )
    return RunRequest(
        command=tuple(command),
        cwd=cwd,
        report=None if junit is None else cwd / junit,
        pytest=pytest,
        required=tuple(dict.fromkeys(report_name(name) for name in require_tests)),
        timeout_s=timeout_s,
        excluded=tuple(excluded),
    )


def is_pytest(command: Sequence[str]) -> bool:
    """``pytest``/``py.test``, or ``python -m pytest``, by whatever path they are called."""
    program = os.path.basename(command[0])
    if program in _PYTEST_PROGRAMS:
        return True
    return _PYTHON.fullmatch(program) is not None and list(command[1:3]) == ["-m", "pytest"]


def report_name(name: str) -> str:
    """The report name (``classname::name``) a ``--require-test`` NAME refers to."""
    if "::" not in name:
        raise UsageError(
            f"--require-test: {name!r} names no test; use a pytest node id "
            "(tests/test_x.py::test_a) or the report's classname::name"
        )
    if not name.partition("::")[0].endswith(".py"):
        return name
    # pytest's junitxml mangle_test_address: parameters are kept verbatim.
    address, bracket, params = name.partition("[")
    parts = address.split("::")
    parts[0] = parts[0].replace("/", ".").removesuffix(".py")
    return ".".join(parts[:-1]) + "::" + parts[-1] + bracket + params


def observe(request: RunRequest) -> Observation:
    workspace = Workspace.containing(request.cwd)
    with tempfile.TemporaryDirectory(prefix="claim-test-run-") as owned_text:
        owned = Path(owned_text)
        report, argv = request.report, request.command
        if request.pytest:
            report = owned / "junit.xml"
            argv = _with_report_option(request.command, report)
        excluded = (*request.excluded, owned, *([report] if report is not None else []))
        before = workspace.snapshot(excluded)
        report_before = _signature(report) if report is not None else None
        started = time.monotonic()
        exit_code = _run(argv, request.cwd, owned / "output.log", request.timeout_s)
        duration = time.monotonic() - started
        after = workspace.snapshot(excluded)
        if after != before:
            raise ObservationFailed(_changed_message(changed_paths(before, after)))
        observed: dict[str, Any] = {"exit_code": exit_code}
        if report is not None:
            observed |= _read_fresh_report(report, report_before, exit_code)
        tail = _tail(owned / "output.log")
    details: dict[str, Any] = {
        "duration_s": round(duration, 3),
        "argv": list(argv),
        "output_tail": tail,
        "workspace_before": tree_digest(before),
        "workspace_after": tree_digest(after),
        "test_config": config_digests(before),
    }
    if workspace.in_git:
        details["test_config_changed"] = workspace.config_changed_from_head(before)
    return Observation(
        target=request.target,
        expected=request.expected,
        observed_value=observed,
        subject=tree_digest(before),
        details=details,
    )


def _with_report_option(command: tuple[str, ...], report: Path) -> tuple[str, ...]:
    # Right after the program, before any "--" the user's arguments may hold.
    split = 1 if os.path.basename(command[0]) in _PYTEST_PROGRAMS else 3
    return (*command[:split], f"--junitxml={report}", *command[split:])


def _run(argv: Sequence[str], cwd: Path, log: Path, timeout_s: float) -> int:
    """Run without a shell, in a process group of its own, so a timeout ends everything it
    started; whatever it leaves running is ended too, so nothing writes after the run is over."""
    with open(log, "wb") as output:
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise ObservationFailed(f"command not found: {argv[0]}") from None
        except OSError as exc:
            raise ObservationFailed(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        try:
            return process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ObservationFailed(
                f"the command ran longer than {timeout_s:g} s and was killed"
            ) from None
        finally:
            with contextlib.suppress(ProcessLookupError):  # the whole group already exited
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    """What changes whenever a file is written or replaced. Compared instead of the mtime with
    the run's start: file times come from a coarser clock and can lag a fresh write behind it."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _read_fresh_report(
    report: Path, before: tuple[int, int, int, int] | None, exit_code: int
) -> dict[str, Any]:
    after = _signature(report)
    if after is None or after == before:
        state = "missing" if after is None else "stale: the run did not write it"
        raise ObservationFailed(
            f"the JUnit report {report} is {state} (the command exited {exit_code})"
        )
    return parse_junit(_read_report(report))


def _read_report(path: Path) -> bytes:
    # The command may have left something other than a file there: opening a FIFO must not
    # block, and a device must not be read as a report.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ObservationFailed(f"cannot read the JUnit report {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ObservationFailed(f"the JUnit report {path} is not a regular file")
        data = handle.read(MAX_REPORT_BYTES + 1)
    if len(data) > MAX_REPORT_BYTES:
        raise ObservationFailed(f"the JUnit report {path} is over {MAX_REPORT_BYTES} bytes")
    return data


class _Declaration(Exception):
    """Raised from the expat handler on the first DOCTYPE or entity declaration."""


def parse_junit(data: bytes) -> dict[str, Any]:
    """Counts and per-test outcomes from a JUnit XML report (untrusted input)."""
    _refuse_declarations(data)
    try:
        root = ET.fromstring(data)  # noqa: S314 - declarations are refused above
    except ET.ParseError as exc:
        raise ObservationFailed(f"the JUnit report is not XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ObservationFailed(f"not a JUnit report: the root element is <{root.tag}>")
    counts: Counter[str] = Counter()
    tests: dict[str, str] = {}
    for case in root.iter("testcase"):
        outcome = _outcome(case)
        counts[outcome] += 1
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if name not in tests or _SEVERITY[outcome] > _SEVERITY[tests[name]]:
            tests[name] = outcome
    return {key: counts[outcome] for outcome, key in COUNT_KEYS.items()} | {"tests": tests}


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


def _tail(log: Path) -> list[str]:
    with open(log, "rb") as handle:
        handle.seek(max(0, log.stat().st_size - _OUTPUT_TAIL_BYTES))
        text = handle.read().decode("utf-8", "replace")
    return text.splitlines()[-OUTPUT_TAIL_LINES:]


def _changed_message(paths: list[str]) -> str:
    named = ", ".join(paths[:_CHANGED_NAMED])
    more = f" and {len(paths) - _CHANGED_NAMED} more" if len(paths) > _CHANGED_NAMED else ""
    return f"the workspace changed during the run ({named}{more}); the run is not evidence"
