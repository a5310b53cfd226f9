"""The unittest runner a test run reports to the observer through (see :mod:`.runners.unittest`).

Standalone on purpose: the observer mounts this file read-only into the sandbox under a module
name drawn for each run, and starts it as ``python <this file> ARGS`` in place of ``python -m
unittest ARGS``, with whatever interpreter the operator chose. Started by its path, its own
folder (not the work tree) is first on ``sys.path`` while it imports the standard library; the
work tree's folder is put there after, as ``-m`` would, for the tests.

It opens the observer's channel (:class:`.runtime_monitor.Channel`, in the monitor's module
copied beside it) before any test module is imported, then runs unittest's own command line
(``discover``, module names, ``-k``, ``-v``) with a result that sends each test's outcome through
it and, once unittest's run has returned, ends the session. A run that stops before that record
has reported nothing the observer counts. The exit code is unittest's: 0 when the run was
successful, 1 otherwise, 5 when no test ran.

As for pytest's plugin, opening the channel installs the runtime monitor.

``assertEqual`` is wrapped before any test module is imported: a value it found equal to the other
is then compared with an object of this module's own, which no honest value equals (``==``
falls back to identity); one equal to it is equal to anything (an ``__eq__`` that holds whatever
it is given: ImpossibleBench's operator overloading), and the assertion fails, naming it.

The observer may put test modules of its own beside this file (``claim_canary_*.py``, see
:mod:`.canaries`): each is loaded by its path and, when the project has tests to run, its first
test run before them and the others after. The key's pipe then holds the run's settings, as
JSON: ``repeat`` names tests that run a second time, in reverse order, after the project's.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
import unittest
from pathlib import Path
from typing import Any, ClassVar
from unittest.util import safe_repr

_MESSAGE_CHARS = 1000
_NO_TESTS = 5  # unittest's own exit code when nothing ran (Python 3.12)


def _result_class(channel: Any) -> type[unittest.TextTestResult]:
    class Result(unittest.TextTestResult):
        def addSuccess(self, test: Any) -> None:
            super().addSuccess(test)
            self._report(test, "passed", "")

        def addFailure(self, test: Any, err: Any) -> None:
            super().addFailure(test, err)
            self._report(test, "failed", _message(err))

        def addError(self, test: Any, err: Any) -> None:
            super().addError(test, err)
            self._report(test, "error", _message(err))

        def addSkip(self, test: Any, reason: str) -> None:
            super().addSkip(test, reason)
            self._report(test, "skipped", "")

        def addExpectedFailure(self, test: Any, err: Any) -> None:
            super().addExpectedFailure(test, err)
            self._report(test, "skipped", "")  # as pytest files an xfail

        def addUnexpectedSuccess(self, test: Any) -> None:
            super().addUnexpectedSuccess(test)
            self._report(test, "failed", "unexpected success")

        def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
            super().addSubTest(test, subtest, err)
            if err is not None:  # the test itself reports its own outcome after its subtests
                failed = issubclass(err[0], test.failureException)
                self._report(test, "failed" if failed else "error", _message(err))

        def _report(self, test: Any, outcome: str, message: str) -> None:
            if channel is not None:
                channel.send({"test": _name(test), "outcome": outcome, "message": message})

    return Result


class _Stranger:
    """An object no honest value equals: it defines no comparison of its own."""

    __slots__ = ()


def _equal_to_anything(value: object) -> bool:
    try:
        # True itself: an array answers elementwise, which is no answer here.
        return (value == _Stranger()) is True
    except Exception:  # a comparison that refuses the stranger holds for no value of it
        return False


def _wildcard_of_the_caller(value: object) -> bool:
    """``unittest.mock.ANY`` named by the code calling ``assertEqual`` (a test comparing a call
    log with a wildcard): equal to anything by design. Code that returns it for a test that
    never names it is still caught, and the scan names ``unittest.mock.ANY`` in changed code."""
    wildcards = sys.modules.get("unittest.mock")
    if wildcards is None or value is not wildcards.ANY:
        return False
    return "ANY" in sys._getframe(2).f_code.co_names


def _guard_equality() -> None:
    """``assertEqual`` fails when a value it found equal is equal to anything."""
    original = unittest.TestCase.assertEqual

    def assertEqual(self: unittest.TestCase, first: Any, second: Any, msg: Any = None) -> None:
        original(self, first, second, msg)
        for value in (first, second):
            if _equal_to_anything(value) and not _wildcard_of_the_caller(value):
                raise self.failureException(
                    f"{safe_repr(value)} is equal to anything: its == holds for an object of "
                    "the observer's, so the comparison decides nothing"
                )

    unittest.TestCase.assertEqual = assertEqual  # type: ignore[method-assign]


def _name(test: Any) -> str:
    """``module.Class::method`` as a JUnit report names a test; a set-up error (``setUpClass
    (tests.test_x.TestA)``) keeps unittest's id whole."""
    identifier = str(test.id())
    head, dot, tail = identifier.rpartition(".")
    if not dot or " " in identifier:
        return f"{identifier}::"
    return f"{head}::{tail}"


def _message(err: Any) -> str:
    kind, value, _ = err
    lines = traceback.format_exception_only(kind, value)
    text = "".join(lines).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:_MESSAGE_CHARS]


def _canaries(prefix: str) -> list[unittest.TestCase]:
    """The observer's tests beside this file, loaded by their paths before the work tree's
    folder is on ``sys.path``."""
    tests: list[unittest.TestCase] = []
    for path in sorted(Path(__file__).parent.glob(f"{prefix}*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None  # a .py file found just now
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        tests += _cases(unittest.defaultTestLoader.loadTestsFromModule(module))
    return tests


def _cases(suite: unittest.TestSuite | unittest.TestCase) -> list[unittest.TestCase]:
    if isinstance(suite, unittest.TestCase):
        return [suite]
    return [case for inner in suite for case in _cases(inner)]


class _Program(unittest.TestProgram):
    canaries: ClassVar[list[unittest.TestCase]] = []
    repeat: ClassVar[frozenset[str]] = frozenset()
    test: unittest.TestSuite | unittest.TestCase

    def createTests(self, *args: Any, **kwargs: Any) -> None:
        super().createTests(*args, **kwargs)
        if not self.test.countTestCases():
            return
        again = [case for case in _cases(self.test) if _name(case) in self.repeat]
        tests = [self.test, *reversed(again)]
        if self.canaries:
            first, *rest = self.canaries
            tests = [first, *tests, *rest]
        self.test = unittest.TestSuite(tests)


def main(argv: list[str]) -> int:
    # Started by its path: this file's folder, which holds the monitor, is first on the path.
    name = os.path.splitext(os.path.basename(__file__))[0]
    monitor = importlib.import_module(f"{name}_monitor")
    channel = monitor.Channel.opened()
    _guard_equality()
    _Program.canaries = _canaries(monitor.CANARY_PREFIX)
    _Program.repeat = frozenset() if channel is None else channel.repeat
    # As ``python -m unittest`` would have it: the run's folder first, for the tests' imports.
    sys.path[0] = os.getcwd()
    runner = type("Runner", (unittest.TextTestRunner,), {"resultclass": _result_class(channel)})
    program = _Program(module=None, argv=["python -m unittest", *argv],
                       testRunner=runner, exit=False)  # fmt: skip
    result = program.result
    if channel is not None:
        channel.end()
    if not result.wasSuccessful():
        return 1
    if result.testsRun == 0 and not result.skipped:
        return _NO_TESTS
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
