"""Any other command that writes a JUnit XML report: the check names the file (``junit``).

The command runs with the operator's Python (``python`` in it is that interpreter), as a script
or a Makefile that drives the tests usually needs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ...errors import UsageError
from .base import Detected, Invocation, ReportSource, RunContext, Runner, Toolchain
from .pytest import Interpreter, python_command
from .results import Results, junit_results


class JunitFile(Runner):
    """Never detected nor recognised: chosen when a check names its report. The file is read
    only when the run wrote it afresh."""

    name = "junit"
    ecosystem = "any"
    # The command chose what to write: its exit code decides; the report names tests.
    counts_failures = False

    def __init__(self, report: str) -> None:
        if os.path.isabs(report) or ".." in Path(report).parts:
            raise UsageError(f"--junit: {report} must be a path inside the run's folder")
        self.report = report

    def recognises(self, command: Sequence[str]) -> bool:
        return False

    def detect(self, root: Path) -> Detected | None:
        return None

    def protected(self, rel: bytes) -> bool:
        return False

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        return Interpreter.chosen(chosen, workspace).toolchain()

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        argv = python_command(command, context.toolchain)
        return Invocation(argv, {}, ReportSource.FILE, os.path.join(context.cwd, self.report))

    def results(self, report: bytes) -> Results:
        return junit_results(report)
