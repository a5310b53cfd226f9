"""The pytest plugin a test run reports to the observer through (see :mod:`.test_run`).

Standalone on purpose: the observer mounts this file read-only into the sandbox, under a module
name drawn for each run, and pytest loads it with ``-p`` from ``PYTEST_ADDOPTS``, whatever
interpreter the operator chose. It imports nothing but the standard library, and does nothing
unless the observer started the run.

It reports through the observer's channel (:class:`.runtime_monitor.Channel`, in the monitor's
module copied beside it), which it opens when pytest registers it, before any conftest or test
module is imported, so the code under test never sees the run's key in a file, the environment or
``/proc``. Each test phase's outcome is one record; a run that stops before the session's end
record (``os._exit``, a signal, a crash) has reported nothing the observer counts.

Opening the channel installs the runtime monitor on the files the agent changed that are no test
file, before pytest imports anything of the run; the monitor's records go through the same channel.
The interpreter starts with ``PYTHONSAFEPATH``, so nothing of the work tree can be imported before
that (a ``argparse.py`` of the run's folder would otherwise run first, as the standard library's):
the plugin then puts the run's folder back where ``-m``, ``-c`` or a script would have put it, and
removes the variable for the processes the tests start. pytest's ``PYTEST_CURRENT_TEST`` (the
running test's name) is never set: the code under test may not ask which test is running.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

SAFE_PATH = "PYTHONSAFEPATH"
CURRENT_TEST = "PYTEST_CURRENT_TEST"
_MESSAGE_CHARS = 1000


def pytest_addoption(pluginmanager: Any) -> None:
    """Called once, as pytest registers this module (and again for any session a test starts
    in this process, which no longer finds the variable)."""
    monitor = importlib.import_module(f"{__name__}_monitor")
    channel = monitor.Channel.opened()
    if channel is None:
        return
    reporter = _Reporter(channel)
    _restore_unsafe_path()
    _hide_the_running_test()
    pluginmanager.register(reporter, "claim-reporter")
    canaries = sorted(Path(__file__).parent.glob(f"{monitor.CANARY_PREFIX}*.py"))
    if canaries or channel.repeat:
        pluginmanager.register(_collector(canaries, channel.repeat), "claim-collector")


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
            again = [item for item in items if junit_name(item.nodeid) in repeat]
            items.extend(reversed(again))
            for path in canaries:
                module = pytest.Module.from_parent(session, path=path, nodeid=path.name)
                first, *rest = module.collect()
                items.insert(0, first)
                items.extend(rest)

    return Collector()


class _Reporter:
    def __init__(self, channel: Any) -> None:
        self._channel = channel

    def pytest_collectreport(self, report: Any) -> None:
        if not report.passed:
            self._phase(report, "collect")

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or not report.passed:
            self._phase(report, report.when)

    def pytest_sessionfinish(self) -> None:
        self._channel.end()

    def _phase(self, report: Any, when: str) -> None:
        self._channel.send(
            {
                "node": report.nodeid,
                "when": when,
                "outcome": report.outcome,
                "xfail": hasattr(report, "wasxfail"),
                "message": _message(report) if report.failed else "",
            }
        )


def junit_name(node_id: str) -> str:
    """The name pytest's junitxml gives a node id (its mangle_test_address), which the observer
    reports tests by: parameters are kept verbatim."""
    address, bracket, params = node_id.partition("[")
    parts = address.split("::")
    parts[0] = parts[0].replace("/", ".").removesuffix(".py")
    return ".".join(parts[:-1]) + "::" + parts[-1] + bracket + params


def _message(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:_MESSAGE_CHARS]
