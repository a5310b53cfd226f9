"""The unittest runner a test run reports to the observer through (see :mod:`.runners.unittest`).

Standalone on purpose: the observer mounts this file read-only into the sandbox under a module
name drawn for each run, and starts it as ``python <this file> ARGS`` in place of ``python -m
unittest ARGS``, with whatever interpreter the operator chose. Started by its path, its own
folder (not the work tree) is first on ``sys.path`` while it imports the standard library; the
work tree's folder is put there after, as ``-m`` would, for the tests.

It reads the run's key from the observer's inherited pipe (named, with the records pipe, by
``CLAIM_REPORT_FDS`` as ``fd:inode`` pairs) and closes it before any test module is imported,
then runs unittest's own command line (``discover``, module names, ``-k``, ``-v``) with a result
that sends each test's outcome through the records pipe, every line the HMAC-SHA256 of its JSON
under the key, a space, and the JSON (:mod:`.runners.channel`), and, once unittest's run has
returned, ``{"end": true}``. A run that stops before that record has reported nothing the
observer counts. The exit code is unittest's: 0 when the run was successful, 1 otherwise, 5 when
no test ran.

As pytest's plugin does, it installs the runtime monitor (:mod:`.runtime_monitor`, copied beside
it) on the files the key's pipe names after the run's settings, before any test module is
imported.

The observer may put test modules of its own beside this file (``claim_canary_*.py``, see
:mod:`.canaries`): each is loaded by its path and, when the project has tests to run, its first
test run before them and the others after. The key's pipe then holds the run's settings, as
JSON: ``repeat`` names tests that run a second time, in reverse order, after the project's.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib
import importlib.util
import json
import os
import stat
import sys
import traceback
import unittest
from pathlib import Path
from typing import Any, ClassVar

ENVIRONMENT = "CLAIM_REPORT_FDS"
CANARY_PREFIX = "claim_canary_"
_MESSAGE_CHARS = 1000
_PR_SET_DUMPABLE = 4
_NO_TESTS = 5  # unittest's own exit code when nothing ran (Python 3.12)
_MAX_KEY_PIPE = 16 << 20


class _Channel:
    def __init__(self, key: bytes, fd: int, repeat: frozenset[str]) -> None:
        self._key, self._fd, self._sequence = key, fd, 0
        self.repeat = repeat  # tests run a second time, in reverse order, after the others

    @classmethod
    def opened(cls) -> _Channel | None:
        """The observer's channel, once its key is read and its pipe closed, with the runtime
        monitor watching; None when the run was not started by the observer (or a wrapper closed
        its pipes)."""
        fds = os.environ.pop(ENVIRONMENT, None)
        if fds is None:
            return None
        try:
            (key_fd, key_pipe), (records_fd, records_pipe) = (
                (int(number) for number in fd.split(":")) for fd in fds.split()
            )
            for fd, inode in ((key_fd, key_pipe), (records_fd, records_pipe)):
                found = os.fstat(fd)
                if not stat.S_ISFIFO(found.st_mode) or found.st_ino != inode:
                    return None
            made_ns = os.fstat(key_fd).st_ctime_ns
            with os.fdopen(key_fd, "rb") as pipe:
                key, _, rest = pipe.read(_MAX_KEY_PIPE).partition(b"\n")
                given, _, watched = rest.partition(b"\n")  # the run's settings, the monitor's
            os.set_inheritable(records_fd, False)
            settings = json.loads(given or b"{}")
        except (OSError, ValueError):
            return None
        if not key:
            return None
        _not_dumpable()
        channel = cls(key, records_fd, frozenset(settings.get("repeat") or ()))
        # Started by its path: this file's folder, which holds the monitor, is first on the path.
        name = os.path.splitext(os.path.basename(__file__))[0]
        monitor = importlib.import_module(f"{name}_monitor")
        monitor.install(monitor.watched(watched, made_ns), channel.send)
        return channel

    def send(self, record: dict[str, Any]) -> None:
        if self._fd < 0:
            return
        body = json.dumps({"seq": self._sequence, **record}, separators=(",", ":")).encode()
        self._sequence += 1
        mac = hmac.new(self._key, body, hashlib.sha256).hexdigest().encode()
        line = memoryview(mac + b" " + body + b"\n")
        while line:
            line = line[os.write(self._fd, line) :]

    def end(self) -> None:
        self.send({"end": True})
        os.close(self._fd)
        self._fd = -1


def _not_dumpable() -> None:
    """Other processes of the run's user may not read this one's memory, where the key is."""
    with contextlib.suppress(ImportError, OSError, AttributeError):
        import ctypes  # noqa: PLC0415 - an interpreter may lack it; the report does not need it

        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _result_class(channel: _Channel | None) -> type[unittest.TextTestResult]:
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


def _canaries() -> list[unittest.TestCase]:
    """The observer's tests beside this file, loaded by their paths before the work tree's
    folder is on ``sys.path``."""
    tests: list[unittest.TestCase] = []
    for path in sorted(Path(__file__).parent.glob(f"{CANARY_PREFIX}*.py")):
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
    channel = _Channel.opened()
    _Program.canaries = _canaries()
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
