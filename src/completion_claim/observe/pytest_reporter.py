"""The pytest plugin a test run reports to the observer through (see :mod:`.test_run`).

Standalone on purpose: the observer mounts this file read-only into the sandbox, under a module
name drawn for each run, and pytest loads it with ``-p`` from ``PYTEST_ADDOPTS``, whatever
interpreter the operator chose. It imports nothing but the standard library, and does nothing
unless the observer started the run.

The observer hands the run two inherited pipes, named by ``CLAIM_REPORT_FDS`` (each as
``fd:inode``, so that a descriptor a wrapper closed and reused is never taken for one of them):
one holding this run's key, which the plugin reads to the end and closes when pytest registers it
(before any conftest or test module is imported, so the code under test never sees the key in a
file, the environment or ``/proc``), and one for the records. Each record is one line, the
HMAC-SHA256 of its JSON under the key, a space, and the JSON: a sequence number and either one
test phase's outcome or, at this session's own end, ``{"end": true}``. A run that stops before
that record (``os._exit``, a signal, a crash) has reported nothing the observer counts.

The key's pipe also holds, after the key's line and the run's settings' (JSON), the work tree's
root and the files the agent changed that are no test file: the plugin installs the runtime monitor
(:mod:`.runtime_monitor`, copied beside it) on them before pytest imports anything of the run, and
the monitor's records go through the same channel. The interpreter starts with ``PYTHONSAFEPATH``,
so nothing of the work tree can be imported before that (a ``argparse.py`` of the run's folder
would otherwise run first, as the standard library's): the plugin then puts the run's folder back
where ``-m``, ``-c`` or a script would have put it, and removes the variable for the processes the
tests start. pytest's ``PYTEST_CURRENT_TEST`` (the running test's name) is never set: the code
under test may not ask which test is running.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

ENVIRONMENT = "CLAIM_REPORT_FDS"
CANARY_PREFIX = "claim_canary_"
SAFE_PATH = "PYTHONSAFEPATH"
CURRENT_TEST = "PYTEST_CURRENT_TEST"
_MESSAGE_CHARS = 1000
_PR_SET_DUMPABLE = 4
_MAX_KEY_PIPE = 16 << 20


def pytest_addoption(pluginmanager: Any) -> None:
    """Called once, as pytest registers this module (and again for any session a test starts
    in this process, which no longer finds the variable)."""
    fds = os.environ.pop(ENVIRONMENT, None)
    if fds is None:
        return
    try:
        (key_fd, key_pipe), (records_fd, records_pipe) = (
            (int(number) for number in fd.split(":")) for fd in fds.split()
        )
        # A wrapper that closed them (Python's subprocess does) may have left the numbers to
        # files of its own: only the observer's own pipes are used.
        for fd, inode in ((key_fd, key_pipe), (records_fd, records_pipe)):
            found = os.fstat(fd)
            if not stat.S_ISFIFO(found.st_mode) or found.st_ino != inode:
                return
        made_ns = os.fstat(key_fd).st_ctime_ns
        with os.fdopen(key_fd, "rb") as pipe:
            key, _, rest = pipe.read(_MAX_KEY_PIPE).partition(b"\n")
            given, _, watched = rest.partition(b"\n")  # the run's settings, the monitor's files
        os.set_inheritable(records_fd, False)
        settings = json.loads(given or b"{}")
    except (OSError, ValueError):
        return
    if not key:
        return  # another pytest of the same run took the key: only the first one reports
    _not_dumpable()
    reporter = _Reporter(key, records_fd)
    monitor = importlib.import_module(f"{__name__}_monitor")
    monitor.install(monitor.watched(watched, made_ns), reporter._send)
    _restore_unsafe_path()
    _hide_the_running_test()
    pluginmanager.register(reporter, "claim-reporter")
    canaries = sorted(Path(__file__).parent.glob(f"{CANARY_PREFIX}*.py"))
    repeat = frozenset(settings.get("repeat") or ())
    if canaries or repeat:
        pluginmanager.register(_collector(canaries, repeat), "claim-collector")


def _restore_unsafe_path() -> None:
    """Put the run's folder on ``sys.path`` where the interpreter would have put it without
    ``PYTHONSAFEPATH`` (which kept it off while pytest imported itself), now that the monitor
    watches; and let the processes the tests start have it again."""
    if os.environ.pop(SAFE_PATH, None) is None or not getattr(sys.flags, "safe_path", False):
        return
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if getattr(main, "__spec__", None) is not None:
        folder = os.getcwd()  # python -m pytest
    elif script is not None:
        folder = os.path.dirname(os.path.realpath(script))  # python script.py
    else:
        folder = ""  # python -c
    sys.path.insert(0, folder)


def _hide_the_running_test() -> None:
    """pytest names the running test in ``PYTEST_CURRENT_TEST`` before each phase: code that
    reads it answers that test and no other."""
    import _pytest.runner  # noqa: PLC0415 - pytest's own, imported by pytest already

    os.environ.pop(CURRENT_TEST, None)
    if hasattr(_pytest.runner, "_update_current_test_var"):
        _pytest.runner._update_current_test_var = _no_current_test  # type: ignore[assignment]


def _no_current_test(*_: Any) -> None:
    os.environ.pop(CURRENT_TEST, None)


def _collector(canaries: list[Path], repeat: frozenset[str]) -> object:
    import pytest  # noqa: PLC0415 - loaded by pytest: it is there; not needed otherwise

    class Collector:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, session: Any, items: list[Any]) -> None:
            if not items:
                return  # pytest's own "no tests collected" stands
            again = [item for item in items if _junit_name(item.nodeid) in repeat]
            items.extend(reversed(again))
            for path in canaries:
                module = pytest.Module.from_parent(session, path=path, nodeid=path.name)
                first, *rest = module.collect()
                items.insert(0, first)
                items.extend(rest)

    return Collector()


def _not_dumpable() -> None:
    """Other processes of the run's user (a test's child, a leftover) may not read this one's
    memory, where the key now is, nor its descriptors."""
    with contextlib.suppress(ImportError, OSError, AttributeError):
        import ctypes  # noqa: PLC0415 - an interpreter may lack it; the report does not need it

        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


class _Reporter:
    def __init__(self, key: bytes, fd: int) -> None:
        self._key, self._fd, self._sequence = key, fd, 0

    def pytest_collectreport(self, report: Any) -> None:
        if not report.passed:
            self._phase(report, "collect")

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or not report.passed:
            self._phase(report, report.when)

    def pytest_sessionfinish(self) -> None:
        self._send({"end": True})
        os.close(self._fd)  # an atexit handler finds nothing left to write to
        self._fd = -1

    def _phase(self, report: Any, when: str) -> None:
        self._send(
            {
                "node": report.nodeid,
                "when": when,
                "outcome": report.outcome,
                "xfail": hasattr(report, "wasxfail"),
                "message": _message(report) if report.failed else "",
            }
        )

    def _send(self, record: dict[str, Any]) -> None:
        if self._fd < 0:
            return  # the session was ended already (by a conftest calling the hook early)
        body = json.dumps({"seq": self._sequence, **record}, separators=(",", ":")).encode()
        self._sequence += 1
        mac = hmac.new(self._key, body, hashlib.sha256).hexdigest().encode()
        line = memoryview(mac + b" " + body + b"\n")
        while line:
            line = line[os.write(self._fd, line) :]


def _junit_name(node_id: str) -> str:
    """The name the observer gives a node id (junitxml's, as in ``.runners.pytest``)."""
    address, bracket, params = node_id.partition("[")
    parts = address.split("::")
    parts[0] = parts[0].replace("/", ".").removesuffix(".py")
    return ".".join(parts[:-1]) + "::" + parts[-1] + bracket + params


def _message(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:_MESSAGE_CHARS]
