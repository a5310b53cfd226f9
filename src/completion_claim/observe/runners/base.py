"""What every test runner tells the observer, the gate and ``claim init``: one interface, so none
of them names an ecosystem.

A runner is asked, in order:

- ``detect(root)``: for ``claim init``, whether the project uses it, and the command to write;
- ``recognises(command)``: whether a configured command is its own (the first runner of the
  registry that says yes runs it);
- ``toolchain(command, chosen)``: the operator's programs the run needs, mounted read-only;
- ``dependencies(command)``: what it installs from the trusted lockfile, into the operator's cache;
- ``invocation(command, context)``: the argument list the sandbox starts (the runner's program
  resolved to the toolchain, never through a script the agent can edit), the environment it adds,
  and where its machine-readable report comes back;
- ``results(report)``: the per-test results that report holds.

``protected(rel)`` names the paths that decide what a run does for this ecosystem (its test files
and its configuration): they are restored from the trusted ref before a run, and an agent's change
to them is a protected change. Every runner's paths are protected in every repository: a project may
mix ecosystems, and protecting too much can only cost a verdict, never give a false one.
"""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import ClassVar

from ...errors import UsageError
from .results import Results

Draw = Callable[[], str]


class ReportSource(Enum):
    """Where a runner's results come from."""

    CHANNEL = "channel"  # pytest's plugin pipe (see observe/pytest_reporter.py)
    FILE = "file"  # a file the runner writes into the report folder
    STDOUT = "stdout"  # the runner's standard output (an event stream); stderr is the log
    # Report files a build writes into its own output folders (Maven's target/, Gradle's
    # build/), which are removed from the run's copy first: every one read is the run's own.
    BUILD = "build"
    NONE = "none"  # no report: the exit code alone


@dataclass(frozen=True)
class Detected:
    """What ``claim init`` writes for a project this runner found."""

    command: tuple[str, ...]
    why: str  # one line for the comment above the check: what was found
    toolchain: str | None = None  # the folder found for ``toolchain =``, when not on PATH
    # Test files the project's configuration names where no protected path covers them: the
    # check's ``protect`` (a Rust ``[[test]] path`` outside tests/).
    protect: tuple[str, ...] = ()


@dataclass(frozen=True)
class Toolchain:
    """The operator's programs a run needs: folders mounted read-only at their own paths, folders
    put first on the run's PATH, and variables the programs need to find themselves."""

    readable: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    program: str | None = None  # the resolved program the command starts, outside the work tree
    # What must start in the sandbox before the run counts (so a sandbox that cannot start the
    # toolchain never passes for failed tests); empty: the command's own program, with no
    # arguments, is not run, and the sandbox is probed with ``true``.
    probe: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dependencies:
    """What a runner installs from the lockfile (:mod:`..dependency_cache`).

    ``lockfiles`` are paths relative to the run's folder, and must be protected paths of the
    runner: with a trusted ref pinned they are read as that commit has them, never as the agent
    left them. Their digest keys a folder of the operator's cache, filled once by ``install``
    (run with the network, in that folder, with the lockfiles written into it; ``{entry}`` in
    ``install_env`` values stands for the folder as the install sees it) and mounted read-only
    for every run after. ``mounts`` maps a folder of the entry to a path relative to the run's
    folder (``node_modules``, shadowing the agent's), or to None: the observer places it, and
    the runner finds where in ``RunContext.dependencies``. A lockfile named in ``optional`` may
    be absent (a Go module with no requirement has no go.sum); its absence is part of the key."""

    lockfiles: tuple[str, ...]
    install: tuple[str, ...]
    mounts: Mapping[str, str | None]
    install_env: Mapping[str, str] = field(default_factory=dict)
    optional: tuple[str, ...] = ()
    # The lines of a failed install's output that say what went wrong (npm's ``npm error``
    # lines, not its closing notices); None: the last lines.
    error_lines: str | None = None
    shown: str = ""  # the install as messages name it (default: ``install`` joined)

    @property
    def named(self) -> str:
        return self.shown or " ".join(self.install)


@dataclass(frozen=True)
class ChannelEnds:
    """The observer's record pipe as the run sees it (for runners with a ``plugin``): the
    plugin's folder, the module name it was copied under, and the inherited descriptors."""

    folder: str
    module: str
    descriptors: str


@dataclass(frozen=True)
class Canary:
    """One test of the observer's own, planted in the run beside the trusted tests: its name as
    this runner's results give it, and whether it must pass (else it must fail)."""

    name: str
    passes: bool
    # How the runner's results file the planted outcome when not as passed or failed: a test
    # the runner itself expects to fail (pytest's strict xfail, unittest's expectedFailure),
    # filed as skipped, whose unexpected pass fails it; jest's ``test.failing`` and vitest's
    # ``test.fails``, filed as passed.
    reported: str | None = None
    # Added to every test file by a setup file of the observer's (jest and vitest run each file
    # in a context of its own, and only a test in that context shares its ``expect`` with the
    # code under test): ``name`` leaves out the file, and every file that ran a test reports it.
    in_each_file: bool = False


@dataclass(frozen=True)
class Canaries:
    """The observer's own tests for one run (see :mod:`..canaries`): files written into the
    run's copy (paths relative to the run's folder, never a path the work tree has) or beside
    the runner's plugin (names only: a plugin loads them itself), the tests they hold, and the
    exit code the runner ends with when the must-fail ones alone failed."""

    files: Mapping[str, bytes]
    tests: tuple[Canary, ...]
    failed_exit_code: int = 1
    beside_plugin: Mapping[str, bytes] = field(default_factory=dict)
    # Planted in case the command starts the runner (a command no runner recognises, run with
    # pytest's plugin): a run that reports no tests at all expects nothing of them.
    optional: bool = False
    # One of ``files``: the configuration the runner is started with, which adds the canaries
    # to the project's own (the runner reads it in place of the one it would have found).
    config: str | None = None
    # Tests of the observer's that run a project's test a second time in its process (runners
    # without a plugin, ``Runner.repeat``): the report name of each, and of the test it repeats.
    repeats: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunContext:
    """What a runner knows when it builds the run's command."""

    toolchain: Toolchain
    channel: ChannelEnds | None
    env: Mapping[str, str]  # the run's environment so far (the operator's variables included)
    dependencies: Mapping[str, str]  # each mounted folder of its Dependencies, as the run sees it
    work: str  # the work tree's root as the run sees it
    cwd: str  # the run's folder as the run sees it
    reports: str  # an empty folder the run may write its report into, as the run sees it
    canaries: Canaries | None = None  # what the runner's ``canaries`` planted for this run
    preload: str | None = None  # the runner's ``preload`` as the run sees it
    # Report names to run a second time, in the same process, after the others (by the runner
    # itself, ``Runner.repeats_itself``, or by tests of the observer's, ``Runner.repeat``).
    repeat: tuple[str, ...] = ()
    # Each mounted folder of its Dependencies on the host: the operator's cache entry, read
    # to find what was installed (a package's entry script), never written.
    installed: Mapping[str, str] = field(default_factory=dict)


FileVersion = tuple[int, int, int, int] | None


def file_version(path: str) -> FileVersion:
    """Which file ``path`` is, and which version of it (device, inode, size, modification
    time): None when there is none. A toolchain's answer asked once is kept while its program
    is still this version."""
    try:
        seen = os.stat(path)
    except OSError:
        return None
    return seen.st_dev, seen.st_ino, seen.st_size, seen.st_mtime_ns


@dataclass(frozen=True)
class Invocation:
    """What the sandbox starts, what it adds to the environment, and where results come back
    (a FILE report by its path as the run sees it: in ``reports``, or in the work tree)."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    source: ReportSource = ReportSource.NONE
    report: str | None = None


class Runner(ABC):
    """One test runner of one ecosystem."""

    name: ClassVar[str]  # as the check's details and ``claim init`` name it
    ecosystem: ClassVar[str]  # python, node, go, rust, java
    # A reporter the run loads under a module name drawn for it, which writes HMAC'd records to
    # an inherited pipe (ReportSource.CHANNEL): results no file of the run can forge.
    plugin: ClassVar[Path | None] = None
    # A script the runtime loads before any test file, in every process of the run (Node's
    # --require), or a folder of programs the build starts its test processes through (a Java
    # build's test JVMs): copied into the observer's read-only plugin folder, found by the runner
    # in ``RunContext.preload``.
    preload: ClassVar[Path | None] = None
    # Whether a failed or errored test in the report fails the run whatever its exit code (the
    # runner's own report, requested by the observer), or the exit code alone decides.
    counts_failures: ClassVar[bool] = True
    # Whether the runner runs the tests of ``RunContext.repeat`` a second time itself (without a
    # plugin): each must then be reported twice, else it is not taken as passed.
    repeats_itself: ClassVar[bool] = False
    # One work-tree path of each kind ``protected`` answers yes for: an ignore glob of the gate
    # that matches one is refused at load.
    examples: ClassVar[tuple[str, ...]] = ()
    # A test named as this runner's report names it, for the example ``claim init`` writes.
    example_test: ClassVar[str] = ""

    @abstractmethod
    def recognises(self, command: Sequence[str]) -> bool:
        """Whether ``command`` (as configured, before any rewriting) runs this runner."""

    @abstractmethod
    def detect(self, root: Path) -> Detected | None:
        """For ``claim init``: the check to write when the project at ``root`` uses this runner."""

    @abstractmethod
    def protected(self, rel: bytes) -> bool:
        """Whether the work-tree path ``rel`` is a test file or test configuration here."""

    def configuration(self, rel: bytes) -> bool:
        """Whether ``rel`` configures the runner (recorded by digest in the run's details)."""
        return False

    def check(self, command: Sequence[str], report: str | None) -> None:  # noqa: B027
        """Refuse (UsageError) a command this runner cannot be observed running; ``report`` is
        the check's ``junit`` file. Most runners take any."""

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        """The operator's programs for ``command``; ``chosen`` is the check's ``toolchain``
        (``python`` for Python). Nothing of it may lie in ``workspace``."""
        return Toolchain()

    def dependencies(
        self, command: Sequence[str], read: Callable[[str], bytes | None]
    ) -> Dependencies | None:
        """What the run installs; ``read(name)`` is the file ``name`` of the run's folder, as
        the run is given it (a protected one as the trusted ref has it), or None."""
        return None

    @abstractmethod
    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        """The command as the sandbox runs it."""

    def canaries(
        self, command: Sequence[str], files: Sequence[bytes], draw: Draw
    ) -> Canaries | None:
        """The observer's own tests for this run, or None where the runner has no per-test
        report to check them in. ``files``: the run copy's work-tree paths, relative to the
        run's folder; ``draw()``: a fresh random word for a name or a value. The tests must use
        the assertion mechanisms this ecosystem's tests use, and be run by ``command`` as
        ``invocation`` builds it (which finds them in ``RunContext.canaries``)."""
        return None

    def repeat(
        self,
        canaries: Canaries,
        names: Sequence[str],
        draw: Draw,
        read: Callable[[bytes], bytes | None],
    ) -> Canaries:
        """``canaries`` with tests of the observer's added that run each test of ``names`` (report
        names) a second time in the same process, where this runner can reach it
        (``Canaries.repeats``); the others run once. ``read``: a file of the run's copy (a path
        relative to the run's folder), None when it has none. A runner with a plugin repeats
        them there."""
        del names, draw, read
        return canaries

    def cut_short(self, output: Path) -> str | None:
        """Why the run's own output (``output``, the observer's file of what the run wrote to
        its standard output and error) says a test process ended before its tests did, where the
        build tool says so there and not in its exit code; None otherwise. The tests can add
        lines to that output, never take the build tool's out."""
        return None

    def results(self, report: bytes) -> Results:
        """The per-test results in the runner's FILE or STDOUT report (untrusted input)."""
        raise NotImplementedError(f"{self.name} reads no report")

    def outputs(self, files: Iterable[str]) -> list[str]:
        """The build's output folders, as work-tree paths, given the paths of the run's copy
        (``ReportSource.BUILD``): removed from the copy before the run, and searched for its
        reports after it."""
        return []

    def is_report(self, rel: str) -> bool:
        """Whether ``rel``, a work-tree path inside one of the ``outputs``, is a report file."""
        return False

    def build_results(self, reports: Sequence[bytes]) -> Results:
        """The per-test results of all the report files the build wrote (untrusted input)."""
        raise NotImplementedError(f"{self.name} reads no build report")

    def channel_results(self, stream: bytes, key: bytes) -> Results:
        """The per-test results its plugin sent through the channel, bound to ``key``."""
        raise NotImplementedError(f"{self.name} has no plugin")


# The operator's proxy settings, which an install (never a run) passes on to reach a registry.
PROXY_SETTINGS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


def observer_settings(names: Sequence[str]) -> dict[str, str]:
    """The observer's values of ``names`` that are set."""
    return {name: os.environ[name] for name in names if name in os.environ}


def program_name(command: Sequence[str]) -> str:
    return os.path.basename(command[0]) if command else ""


def inside(path: str, folder: Path | str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip("/") + "/")


def chosen_program(
    program: str, command: Sequence[str], chosen: str | None, workspace: Path, unset: str
) -> str:
    """The operator's ``program``: in the check's ``toolchain`` (the program, or a folder
    holding it or its ``bin/``), else the command's own absolute path, else on the observer's
    PATH (``unset`` says what to do when it is not); never one in the workspace. Not resolved:
    a proxy (rustup's) must be run by the path it was found at."""
    if chosen is not None:
        candidates = [os.path.join(chosen, "bin", program), os.path.join(chosen, program), chosen]
        found = next((c for c in candidates if os.path.isfile(c)), None) or shutil.which(chosen)
        what = f"toolchain: no {program} program in {chosen!r}"
    elif os.path.isabs(command[0]):
        found, what = command[0], f"no {program} program {command[0]}"
    else:
        found, what = shutil.which(program), f"{program} is not on the PATH: {unset}"
    if found is None or not os.path.isfile(found):
        raise UsageError(what)
    if inside(found, workspace):
        raise UsageError(
            f"toolchain: {found} is inside the workspace, which the agent controls; the tests "
            f"run with the operator's {program}"
        )
    return found
