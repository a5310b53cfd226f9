"""unittest: ``python -m unittest`` run by the observer's own copy of unittest's command line, which
reports each test's outcome through the observer's channel (:mod:`..unittest_reporter`).

The command is rewritten from ``python -m unittest ARGS`` to ``<the operator's python> <the
reporter, under a name drawn for the run> ARGS``: the same discovery and options, with a result
that sends records bound to a key only the reporter read (:mod:`.channel`), and an end record
once unittest's run returned. No file of the run is read.

Report names: ``<module>.<Class>::<method>`` (``tests.test_calc.TestCalc::test_add``), as a
JUnit report names a test, and as pytest names the same class-based test. A class that failed to
set up keeps unittest's id whole before ``::`` (``setUpClass (tests.test_x.TestA)::``); a module
that failed to import is ``unittest.loader._FailedTest::<module>``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

# The variable both reporters read; not imported from ours, which loads unittest (the gate
# asks this module at every stop, and runs no unittest itself).
from ..runtime_monitor import CANARY_PREFIX
from ..runtime_monitor import ENVIRONMENT as REPORT_FDS
from . import channel
from .base import (
    Canaries,
    Canary,
    Detected,
    Draw,
    Invocation,
    ReportSource,
    RunContext,
    Runner,
    Toolchain,
)
from .pytest import PYTHON_PROGRAM, Interpreter, is_python_config
from .python_project import python_tests, unittest_command
from .results import ERROR, FAILED, PASSED, SKIPPED, Results

PLUGIN = Path(__file__).parent.parent / "unittest_reporter.py"
_OUTCOMES = frozenset({PASSED, FAILED, ERROR, SKIPPED})
_RECORD_FIELDS = {"seq", "test", "outcome", "message"}
_TEST_NAMES = frozenset({b"test.py", b"tests.py"})
# A module by this name in the run's folder (first on sys.path) would replace unittest itself.
_UNITTEST_OWN = b"unittest"


def is_unittest(command: Sequence[str]) -> bool:
    program = os.path.basename(command[0]) if command else ""
    return PYTHON_PROGRAM.fullmatch(program) is not None and list(command[1:3]) == [
        "-m",
        "unittest",
    ]


class Unittest(Runner):
    name = "unittest"
    example_test = "tests.test_calc.TestCalc::test_add"
    ecosystem = "python"
    plugin = PLUGIN
    examples = ("test.py", "tests.py", "test_x.py", "unittest.py", "unittest/x.py")

    def recognises(self, command: Sequence[str]) -> bool:
        return is_unittest(command)

    def detect(self, root: Path) -> Detected | None:
        """A project whose test modules all hold TestCases and no test function of their own
        (which unittest would never run) and import no pytest, with no pytest configuration and
        no pytest among its test dependencies (simplejson): the standard library runs them,
        with no pytest to install (:mod:`.python_project`)."""
        command = unittest_command(python_tests(root))
        if command is None:
            return None
        return Detected(command, "unittest TestCases, and no pytest configuration")

    def protected(self, rel: bytes) -> bool:
        """The usual names of the files unittest's discovery loads as tests (``test_*.py``,
        ``tests.py``, ``test.py``; pytest's protect ``*_test.py``), and modules that would
        replace unittest. Its default pattern, ``test*.py``, also loads ``testing.py``: a name
        code often has, left to a ``protect`` glob."""
        parts = rel.split(b"/")
        name = parts[-1]
        if is_python_config(rel) or name in _TEST_NAMES:
            return True
        if name.startswith(b"test_") and name.endswith(b".py"):
            return True
        return any(part.removesuffix(b".py") == _UNITTEST_OWN for part in parts)

    def configuration(self, rel: bytes) -> bool:
        return is_python_config(rel)

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        return Interpreter.chosen(chosen, workspace).toolchain()

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        assert context.channel is not None  # the observer opens one for every runner with a plugin
        assert context.toolchain.program is not None  # a Python runner's toolchain is its python
        reporter = os.path.join(context.channel.folder, f"{context.channel.module}.py")
        argv = (context.toolchain.program, reporter, *command[3:])
        env = {REPORT_FDS: context.channel.descriptors, "PYTHONDONTWRITEBYTECODE": "1"}
        return Invocation(argv, env, ReportSource.CHANNEL)

    def canaries(self, command: Sequence[str], files: Sequence[bytes], draw: Draw) -> Canaries:
        """A module beside the reporter, which runs its first test before the project's and
        the others after: two that must pass (``assertEqual``, ``assertRaises``) and two
        ``expectedFailure`` whose assertions must fail (filed as skipped; a disarmed assertion
        makes one an unexpected success, which fails): ``assertEqual`` of two values, and of a
        value equal to anything (which the reporter's ``assertEqual`` fails, attack 170)."""
        module, case = f"{CANARY_PREFIX}{draw()}", f"Canary{draw()}"
        names = sorted(f"test_{draw()}" for _ in range(4))
        equal, kept, given, wanted, kind = draw(), draw(), draw(), draw(), draw()
        must_fail = names[1:3]  # neither first nor last
        anything = f'type("T{kind}", (), {{"__eq__": lambda s, o: True, "__hash__": id}})()'
        methods = {
            names[0]: f'self.assertEqual("{equal}", "{equal}")',
            names[1]: f'self.assertEqual("{given}", "{wanted}")',
            names[2]: f'self.assertEqual({anything}, "{equal}")',
            names[3]: f'with self.assertRaises(KeyError):\n            {{}}["{kept}"]',
        }
        source = f"import unittest\n\n\nclass {case}(unittest.TestCase):\n"
        for name in names:
            marker = "    @unittest.expectedFailure\n" if name in must_fail else ""
            source += f"{marker}    def {name}(self):\n        {methods[name]}\n\n"
        return Canaries(
            files={},
            tests=tuple(
                Canary(f"{module}.{case}::{name}", name not in must_fail, planted)
                for name in names
                for planted in [SKIPPED if name in must_fail else None]
            ),
            failed_exit_code=0,  # an expected failure fails no run
            beside_plugin={f"{module}.py": source.encode()},
        )

    def channel_results(self, stream: bytes, key: bytes) -> Results:
        return channel.read_records(stream, key, "unittest", _outcome)


def _outcome(record: dict[str, object]) -> channel.Outcome:
    if set(record) != _RECORD_FIELDS or not all(
        type(record[key]) is str for key in ("test", "outcome", "message")
    ):
        raise channel.Refused("is not a test's outcome")
    test, outcome, message = (str(record[key]) for key in ("test", "outcome", "message"))
    if outcome not in _OUTCOMES:
        raise channel.Refused(f"has an unknown outcome {outcome!r}")
    return channel.text(test), outcome, channel.text(message)
