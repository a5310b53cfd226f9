"""pytest: results through the observer's own plugin, never a report file the tests could write.

Whatever the command, pytest loads the observer's plugin (:mod:`..pytest_reporter`, through
``PYTEST_ADDOPTS``) under a module name drawn for the run; it reports each test's outcome through
an inherited pipe, every record bound to a key only the plugin read, and counts only when its
session reached its own end.

Report names: a test is ``<classname>::<name>`` as a JUnit report spells them; pytest's node ids
are mapped the way its junitxml plugin maps them (path separators become dots, ``.py`` is
dropped, classes join the module: ``tests/test_x.py::TestA::test_b[1]`` is
``tests.test_x.TestA::test_b[1]``). A required test may be named either way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ..pytest_reporter import SAFE_PATH, junit_name
from ..runtime_monitor import CANARY_PREFIX
from ..runtime_monitor import ENVIRONMENT as REPORT_FDS
from ..sandbox import SYSTEM_PATH
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
    inside,
)
from .python_project import python_tests, unittest_command
from .results import ERROR, FAILED, PASSED, SKIPPED, Results

PLUGIN = Path(__file__).parent.parent / "pytest_reporter.py"
PYTHON_PROGRAM = re.compile(r"(python|pypy)[0-9.]*")
PYTEST_COMMAND = ("python", "-m", "pytest", "-q")
_PYTEST_PROGRAMS = frozenset({"pytest", "py.test"})
_REPORT_OPTIONS = ("--junitxml", "--junit-xml")
_RECORD_FIELDS = {"seq", "node", "when", "outcome", "xfail", "message"}
_QUERY_TIMEOUT_S = 30.0
_CONFIG_NAMES = frozenset(
    {
        b"conftest.py",
        # pytest's own files, read first (CONFIG_LOADERS_BY_NAME in _pytest/config/findpaths.py)
        b"pytest.toml",
        b".pytest.toml",
        b"pytest.ini",
        b".pytest.ini",
        b"tox.ini",
        b"setup.cfg",
        b"pyproject.toml",
        b"sitecustomize.py",
        b"usercustomize.py",
    }
)
_ENTRY_POINTS = b"entry_points.txt"
_DISTRIBUTIONS = (b".dist-info", b".egg-info")
# A module by one of these names, anywhere pytest puts on sys.path, replaces pytest itself.
_PYTEST_OWN = frozenset({b"pytest", b"_pytest", b"py", b"pluggy", b"iniconfig"})


def is_pytest(command: Sequence[str]) -> bool:
    """``pytest``/``py.test``, or ``python -m pytest``, by whatever path they are called."""
    program = os.path.basename(command[0])
    if program in _PYTEST_PROGRAMS:
        return True
    return PYTHON_PROGRAM.fullmatch(program) is not None and list(command[1:3]) == ["-m", "pytest"]


def is_python_config(rel: bytes) -> bool:
    folder, _, name = rel.rpartition(b"/")
    if name == _ENTRY_POINTS:
        # A distribution's metadata on the path names plugins pytest loads by itself.
        return folder.endswith(_DISTRIBUTIONS)
    return name in _CONFIG_NAMES or name.endswith(b".pth")


class Pytest(Runner):
    name = "pytest"
    example_test = "tests/test_calc.py::test_add"
    ecosystem = "python"
    plugin = PLUGIN
    examples = (
        "conftest.py", "test_x.py", "x_test.py", "pytest.ini", ".pytest.ini", "pytest.toml",
        ".pytest.toml", "tox.ini", "setup.cfg", "pyproject.toml", "x.pth", "pytest.py",
        "_pytest/x.py", "sitecustomize.py", "x-1.0.dist-info/entry_points.txt",
    )  # fmt: skip

    def recognises(self, command: Sequence[str]) -> bool:
        return is_pytest(command)

    def detect(self, root: Path) -> Detected | None:
        """Test modules at the top or in a test folder (``toolz/tests/`` too), or pytest's
        configuration; not a project of unittest's tests alone (:mod:`.python_project`)."""
        tests = python_tests(root)
        if not (tests.modules or tests.pytest_configured) or unittest_command(tests):
            return None
        return Detected(PYTEST_COMMAND, "pytest tests or configuration")

    def protected(self, rel: bytes) -> bool:
        """Test configuration, the test files pytest collects, modules that would replace
        pytest."""
        parts = rel.split(b"/")
        name = parts[-1]
        if is_python_config(rel):
            return True
        if name.endswith(b".py") and (name.startswith(b"test_") or name.endswith(b"_test.py")):
            return True
        return any(part.removesuffix(b".py") in _PYTEST_OWN for part in parts)

    def configuration(self, rel: bytes) -> bool:
        return is_python_config(rel)

    def check(self, command: Sequence[str], report: str | None) -> None:
        if report is not None:
            raise UsageError("--junit is for other commands: pytest reports to the observer itself")
        if any(arg.startswith(_REPORT_OPTIONS) for arg in command):
            raise UsageError(
                "remove --junitxml from the pytest command: the observer reads pytest's results "
                "through its own plugin, never a report file the tests could write"
            )

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        return Interpreter.chosen(chosen, workspace).toolchain()

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        assert context.channel is not None  # the observer opens one for every pytest run
        # However pytest is started (python -B -m pytest, pytest.main(), make), it reads these;
        # the operator's own values, passed on with env, are kept.
        ours = f"-p {context.channel.module} -p no:cacheprovider"
        given = context.env.get("PYTEST_ADDOPTS")
        env = {
            REPORT_FDS: context.channel.descriptors,
            "PYTHONPATH": ":".join(filter(None, [context.channel.folder,
                                                 context.env.get("PYTHONPATH")])),
            "PYTEST_ADDOPTS": ours if given is None else f"{given} {ours}",
            "PYTHONDONTWRITEBYTECODE": "1",
        }  # fmt: skip
        if is_pytest(command):
            # Nothing of the run's folder is imported before the plugin (which puts the folder
            # back): a module of it named like one of the standard library's would run first.
            env[SAFE_PATH] = "1"
        return Invocation(python_command(command, context.toolchain), env, ReportSource.CHANNEL)

    def canaries(self, command: Sequence[str], files: Sequence[bytes], draw: Draw) -> Canaries:
        """A module beside the plugin, which collects it after every other plugin picked the
        session's tests (so no configuration deselects it), its first test first and the others
        last."""
        module = f"{CANARY_PREFIX}{draw()}"
        source, tests = canary_module(draw)
        return Canaries(
            files={},
            tests=tuple(
                Canary(f"{module}::{name}", passes, None if passes else SKIPPED)
                for name, passes in tests
            ),
            failed_exit_code=0,  # a strict xfail that fails fails no session
            beside_plugin={f"{module}.py": source.encode()},
            optional=not is_pytest(command),  # make test, a script: pytest may not run at all
        )

    def channel_results(self, stream: bytes, key: bytes) -> Results:
        return read_records(stream, key)


def canary_module(draw: Draw) -> tuple[str, list[tuple[str, bool]]]:
    """A test module of the observer's for pytest, and its tests: (name, whether it must pass).
    The one that must fail is a strict xfail, so that an honest session still passes (as pytest
    files it: skipped), while a runner made to pass every test fails it (XPASS(strict))."""
    equal, kept, given, wanted = draw(), draw(), draw(), draw()
    names = [f"test_{draw()}" for _ in range(3)]
    source = f"""import pytest


def {names[0]}():
    value = "{equal}"
    assert value == "{equal}"


def {names[1]}():
    with pytest.raises(KeyError):
        {{}}["{kept}"]


@pytest.mark.xfail(strict=True)
def {names[2]}():
    value = "{given}"
    assert value == "{wanted}"
"""
    return source, [(names[0], True), (names[1], True), (names[2], False)]


def python_command(command: Sequence[str], toolchain: Toolchain) -> tuple[str, ...]:
    """``python``/``python3.X`` runs as the chosen interpreter; ``pytest`` as ``<it> -m pytest``."""
    program = os.path.basename(command[0])
    assert toolchain.program is not None  # a Python runner's toolchain is its interpreter
    if PYTHON_PROGRAM.fullmatch(program):
        return (toolchain.program, *command[1:])
    if program in _PYTEST_PROGRAMS:
        return (toolchain.program, "-m", "pytest", *command[1:])
    return tuple(command)


def report_name(name: str) -> str:
    """The report name (``classname::name``) a ``--require-test`` NAME refers to."""
    if "::" not in name:
        raise UsageError(
            f"--require-test: {name!r} names no test; use a pytest node id "
            "(tests/test_x.py::test_a) or the report's classname::name"
        )
    return junit_name(name) if name.partition("::")[0].endswith(".py") else name


@dataclass(frozen=True)
class Interpreter:
    """The Python the operator chose, and the folders it needs to run (mounted read-only)."""

    executable: str
    prefixes: tuple[str, ...]

    @classmethod
    def chosen(cls, python: str | None, workspace: Path) -> Interpreter:
        if python is None:
            interpreter = cls(sys.executable, (sys.prefix, sys.base_prefix))
        else:
            executable = shutil.which(python)
            if executable is None:
                raise UsageError(f"--python: no interpreter {python!r}")
            _outside_workspace(executable, workspace)  # before running it even once
            interpreter = cls._query(os.path.abspath(executable))
        for path in (interpreter.executable, *interpreter.prefixes):
            _outside_workspace(path, workspace)
        return interpreter

    @classmethod
    def _query(cls, executable: str) -> Interpreter:
        script = "import sys; print(sys.prefix); print(sys.base_prefix)"
        try:
            done = subprocess.run(
                [executable, "-I", "-c", script],
                cwd="/",
                env={"PATH": SYSTEM_PATH},
                capture_output=True,
                timeout=_QUERY_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"--python: cannot run {executable}: {exc}") from None
        lines = done.stdout.decode(errors="replace").splitlines()
        if done.returncode != 0 or len(lines) != 2:
            raise UsageError(f"--python: {executable} is not a working Python interpreter")
        return cls(executable, (lines[0], lines[1]))

    @property
    def bin_dir(self) -> str:
        return os.path.dirname(self.executable)

    @property
    def readable(self) -> list[str]:
        """The prefixes, and the folder the executable really lives in, minus the system
        folders the sandbox mounts anyway."""
        real_home = os.path.dirname(os.path.dirname(os.path.realpath(self.executable)))
        folders = {os.path.realpath(p) for p in (*self.prefixes, real_home)}
        kept = [f for f in sorted(folders) if not inside(f, Path("/usr"))]
        return [f for f in kept if not any(o != f and inside(f, Path(o)) for o in kept)]

    def toolchain(self) -> Toolchain:
        return Toolchain(
            tuple(self.readable),
            (self.bin_dir,),
            program=self.executable,
            probe=(self.executable, "-I", "-c", ""),
        )


def read_records(stream: bytes, key: bytes) -> Results:
    """pytest's records (:mod:`.channel`): one per test phase, named by node id."""
    return channel.read_records(stream, key, "pytest", _phase, junit_name, span="session")


def _phase(record: dict[str, Any]) -> channel.Outcome:
    """A test phase's node id, its outcome as pytest's junitxml would file it (None for a
    passed setup or teardown), and its message."""
    if set(record) != _RECORD_FIELDS or not all(
        type(record[key]) is str for key in ("node", "when", "outcome", "message")
    ):
        raise channel.Refused("is not a test phase")
    node, when, outcome = channel.text(record["node"]), record["when"], record["outcome"]
    if outcome == "skipped":
        found: str | None = SKIPPED
    elif outcome == "failed" and when == "call":
        found = SKIPPED if record["xfail"] is True else FAILED  # an xfail test that passed
    elif outcome == "failed":
        found = ERROR  # in setup, teardown or collection
    elif outcome == "passed":
        found = PASSED if when == "call" else None
    else:
        raise channel.Refused(f"has an unknown outcome {outcome!r}")
    return node, found, channel.text(record["message"])


def _outside_workspace(path: str, workspace: Path) -> None:
    if inside(path, workspace):
        raise UsageError(
            f"--python: {path} is inside the workspace, which the agent controls; "
            "choose an interpreter outside it"
        )
