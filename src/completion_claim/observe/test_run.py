"""test_run observed: run the tests once, outside the agent loop, and record what the run showed.

Only two things are trusted: the command's exit code, and the runner's report of its tests, a
report the observer asked for itself. The runner (:mod:`.runners`) is chosen by the command: it
gives the operator's toolchain, the dependencies installed from the lockfile into the operator's
cache (:mod:`.dependency_cache`), the exact command, and the parser of its report. pytest reports
through the observer's plugin over an inherited pipe, every record bound to a key only the plugin
read; other runners write their report into a folder only the run writes, or stream it on
standard output; any other command's JUnit XML report is named with ``--junit``. With no report
the run is recorded by its exit code alone (no counts), never as a run of zero tests. What the
tests print is kept for people to read, redacted of secrets, and never judged.

The run happens on exactly the files the claim describes (:mod:`.run_tree`: a fresh copy, or the
operator's mirror of the workspace seen through an overlay that takes the run's writes), with
protected test paths from a ref the operator trusts when given, under the operator's toolchain
and a scrubbed environment, in a sandbox (:mod:`.sandbox`) that cannot reach the workspace, the
signing key or the network, and whose every process dies with it. Matching of required tests is
exact: a test the report does not name is absent, and absent is not passed.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import fnmatch
import json
import os
import re
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from secrets import token_hex
from types import TracebackType
from typing import Any

from .._state import default_runs_dir
from ..errors import ObservationFailed, UsageError
from ..model import Mutation
from ._common import Observation
from .canaries import CANARIES, HELD, NOT_RUN, UNREPORTED, judged, plant
from .dependency_cache import DEPENDENCIES_MOUNT, install, read_lockfiles, require_protected
from .mirror import Mirror, require_unchanged
from .run_tree import (
    Deadline,
    GitContent,
    RunTree,
    TrustedContent,
    changed_code,
    changed_lines,
    changed_protected,
    pinned_commit,
    require_recorded,
    restore_protected,
)
from .runners import runner_for
from .runners.base import (
    Canaries,
    ChannelEnds,
    Invocation,
    ReportSource,
    RunContext,
    Runner,
    Toolchain,
    inside,
)
from .runners.pytest import report_name
from .runners.results import MAX_REPORT_BYTES, PASSED, Results, no_counts, ran_twice
from .runtime_monitor import Lines
from .runtime_monitor import __file__ as MONITOR
from .sandbox import PLUGINS, REPORTS, SYSTEM_PATH, WORK, Overlay, Sandbox
from .values import REDACTED, redact_url, url_secrets
from .workspace import Workspace, config_digests, tree_digest

CHECK_TYPE = "test_run"
OUTPUT_TAIL_LINES = 20
NO_SANDBOX = "none"
_OUTPUT_TAIL_BYTES = 64 * 1024
_SAID_CHARS = 300  # of a runner's own error, in a one-line reason
_SAID_LINES = 200  # of the output's end searched for it (above a stack trace)
_PLUGIN_FOLDER = "plugin"  # in the folder the observer owns
_REPORT_FOLDER = "report"  # in the folder the observer owns
_SECRET_NAME = re.compile("KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_SHORTEST_SECRET = 4  # shorter values would redact ordinary text
_PASSED_THROUGH = ("LC_ALL", "TZ", "TERM")
_POLL_S = 0.02  # how soon the end of a run is noticed while its pipe is read
_MAX_BUILD_REPORTS = 10_000
MAX_HIDDEN_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class RunRequest:
    """One test run to observe. Build it with :func:`prepare` so mistakes surface before any run."""

    command: tuple[str, ...]
    cwd: Path
    junit: str | None  # the JUnit file another runner writes, relative to cwd
    required: tuple[str, ...]  # report names (classname::name) that must have passed
    timeout_s: float
    excluded: tuple[Path, ...]  # files the observer itself writes (the claim)
    python: str | None = None  # the operator's toolchain (for Python, its interpreter)
    env_names: tuple[str, ...] = ()  # variables passed through to the run
    sandboxed: bool = True
    network: bool = False
    trusted_ref: str | None = None  # a full commit id (names are the agent's to move)
    trusted_content: TrustedContent | None = None  # the operator's copy of trusted_ref's files
    protect: tuple[str, ...] = ()  # globs of further protected paths
    secret_files: tuple[str, ...] = ()  # read after the run, to redact their material
    dependency_cache: Path | None = None  # the operator's; None: under the default runs dir
    mirror: Mirror | None = None  # the operator's mirror, held by the caller; None: a fresh copy
    hidden_tests: Path | None = None  # the operator's folder of tests the agent never sees
    # Globs of work-tree paths whose test-aware code the operator allows ([gate].allow_test_aware):
    # the runtime monitor does not watch them.
    allow_test_aware: tuple[str, ...] = ()
    # Report names run a second time, in reverse order, after the session's tests (a plugin's
    # runners): a result that depends on how often or in what order the code ran fails one.
    repeat: tuple[str, ...] = ()

    @property
    def runner(self) -> Runner:
        return runner_for(self.command, self.junit)

    @property
    def target(self) -> str:
        return shlex.join(redact_argv(self.command, environment_secrets(self.env_names)))

    @property
    def expected(self) -> dict[str, Any]:
        return self.expected_of(counted=False)

    def expected_of(self, *, counted: bool, canaries: Canaries | None = None) -> dict[str, Any]:
        """Exit code 0 (the runner's failure code when a canary must fail); no failed or
        errored test when pytest reported its tests (a run can end with any exit code it likes
        after its session ended); the required tests passed; the canaries held."""
        expected: dict[str, Any] = {"exit_code": 0}
        if canaries is not None:
            if not all(canary.passes for canary in canaries.tests):
                expected["exit_code"] = canaries.failed_exit_code
            expected[CANARIES] = HELD
        if counted:
            expected |= {"failed": 0, "errors": 0}
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
    **options: Any,
) -> RunRequest:
    runner_for(command, junit).check(command, junit)
    return RunRequest(
        command=tuple(command),
        cwd=cwd,
        junit=junit,
        required=tuple(dict.fromkeys(report_name(name) for name in require_tests)),
        timeout_s=timeout_s,
        excluded=tuple(excluded),
        **options,
    )


def observe(request: RunRequest, mutations: Sequence[Mutation] = ()) -> Observation:
    """Run the request on a copy of the workspace bound to ``mutations`` (the claim's)."""
    deadline = Deadline(request.timeout_s)
    workspace = Workspace.containing(request.cwd)
    if request.trusted_ref is not None and not workspace.in_git:
        raise UsageError("--trusted-ref needs a git repository: the workspace is not in one")
    for secret in request.secret_files:
        if inside(secret, workspace.root):
            raise ObservationFailed(
                f"the signing key {secret} is inside the workspace, where the agent and the "
                "run can read it: keep it elsewhere"
            )
    cwd = _relative(Path(os.path.realpath(request.cwd)), workspace.root) or "."
    hidden = {} if request.hidden_tests is None else hidden_files(request.hidden_tests, workspace)
    runner = request.runner
    toolchain = runner.toolchain(request.command, request.python, workspace.root)
    for path in (*toolchain.readable, *([toolchain.program] if toolchain.program else [])):
        if inside(path, workspace.root):
            raise UsageError(
                f"{path} is inside the workspace, which the agent controls; the tests run with "
                "the operator's toolchain: choose one outside it"
            )
    sandbox = Sandbox.find(network=request.network) if request.sandboxed else None
    excluded = [rel for rel in (_relative(p, workspace.root) for p in request.excluded) if rel]
    with contextlib.ExitStack() as stack:
        owned = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="claim-test-run-")))
        channel = None
        if runner.plugin is not None:
            settings = {"repeat": list(request.repeat)}
            channel = stack.enter_context(Channel(owned / _PLUGIN_FOLDER, runner.plugin, settings))
        if runner.preload is not None:
            (owned / _PLUGIN_FOLDER).mkdir(exist_ok=True)
            copied = owned / _PLUGIN_FOLDER / runner.preload.name
            if runner.preload.is_dir():  # programs among them keep their modes
                shutil.copytree(runner.preload, copied)
            else:
                shutil.copyfile(runner.preload, copied)
        owner = sandbox.uid if sandbox is not None and sandbox.setpriv is not None else None
        run_dir, report_dir = owned / "work", owned / _REPORT_FOLDER
        for folder in (run_dir, report_dir):
            folder.mkdir()
            if owner is not None:
                os.chown(folder, owner, owner)
        tree, mirror, overlay = _run_tree(request, workspace, sandbox, owned, owner)
        details, changed = _fill_run_tree(
            tree, request, workspace, mutations, excluded, deadline, mirror
        )
        captured = dict(tree.files)  # before protected paths are restored: the workspace's
        if hidden:
            details["hidden_tests"] = lay_hidden(tree, hidden, workspace.object_format())
        outputs = _clear_outputs(tree, runner, details)
        # A plugin repeats them in its process, a Node runner in its own; another runner, with
        # tests of the observer's where it can reach them.
        itself = channel is not None or runner.repeats_itself
        canaries = plant(runner, request.command, tree, cwd,
                         None if channel is None else channel.folder,
                         workspace.object_format(),
                         () if itself else request.repeat)  # fmt: skip
        if request.repeat:
            again = set(canaries.repeats.values()) if canaries is not None else set()
            repeated = [name for name in request.repeat if itself or name in again]
            details |= {key: names for key, names in (
                ("repeated", repeated),
                ("not_repeated", [name for name in request.repeat if name not in repeated]),
            ) if names}  # fmt: skip
        mounts = _dependencies(request, runner, toolchain, sandbox, tree, cwd, deadline, details)
        launch = _Launch(request, sandbox, toolchain, owned, cwd, channel, mounts, tree, overlay,
                         canaries)  # fmt: skip
        if channel is not None:
            channel.hand_over(launch.work, ((f"{launch.work}/{os.fsdecode(rel)}", lines)
                                            for rel, lines in changed.items()))  # fmt: skip
        invocation = runner.invocation(request.command, launch.context())
        started_argv, host_env, details["sandbox"] = launch.confined(invocation, deadline)
        report = None if invocation.report is None else launch.on_host(invocation.report)
        if invocation.source is ReportSource.STDOUT:
            report = owned / "stdout"  # the observer's file: the run holds only its descriptor
        report_before = _signature(report) if report is not None else None
        started = time.monotonic()
        host_cwd = run_dir / cwd if overlay is None else owned  # bwrap sets the run's own
        digests: dict[str, Any] = {}

        def digest_the_trees() -> None:
            # Read by no one before the run ends: worked out while the tests run.
            digests["subject"] = tree_digest(captured)
            digests["test_config"] = config_digests(tree.files)
            mirror.save()

        exit_code, stream = _run(
            started_argv, host_cwd, host_env, owned / "output.log", deadline.remaining(),
            channel, report if invocation.source is ReportSource.STDOUT else None,
            digest_the_trees,
        )  # fmt: skip
        duration = time.monotonic() - started
        try:
            if invocation.source is ReportSource.BUILD:
                # What the build wrote: in the overlay's own layer, or in the copy.
                written = run_dir if overlay is None else Path(overlay.upper)
                results = runner.build_results(_build_reports(runner, written, outputs, owned))
            else:
                results = _results(runner, invocation, channel, stream, report, report_before,
                                   exit_code, owned)  # fmt: skip
        except ObservationFailed:
            if exit_code != 0:  # a sandbox that cannot start the toolchain is the cause, if so
                launch.require_toolchain_starts()
            raise
        if runner.repeats_itself and request.repeat:
            results, once = ran_twice(results, request.repeat)
            if once:
                details["ran_once"] = once
        seen = None if canaries is None else judged(results, canaries)
        explained = (canaries is not None and exit_code == canaries.failed_exit_code
                     and seen is not None and seen[1]["state"] == HELD)  # fmt: skip
        if exit_code != 0 and not explained:
            # A failed run counts only once the sandbox is known to start the toolchain: a broken
            # sandbox never passes for a failed test. A run that passed needs no such proof, nor
            # one that exited as its canaries make it (Go's and Rust's must-fail canary fails
            # every run) when they held: tests named at random for this run reported their
            # planted outcomes, so the sandbox started the toolchain and it ran them.
            launch.require_toolchain_starts()
        _require_unmonitored(results, launch.work)
        cut = runner.cut_short(owned / "output.log")
        if cut is not None:
            raise ObservationFailed(f"{cut}: not verified")
        tail = _tail(owned / "output.log")
        # The tests read the mirror, never the work tree: a later edit cannot reach them. The
        # files this pass had to read (the changed ones) are checked again, so a process still
        # writing them is named; re-checking every file would cost a stat per file per stop.
        require_unchanged(mirror, (rel for rel in mirror.read_paths if rel in tree.files))
    if canaries is not None and seen is not None:
        results, details[CANARIES] = seen
        state = details[CANARIES]["state"]
        if state == NOT_RUN or (state == UNREPORTED and canaries.optional):
            canaries = None  # a run of no test (or of no runner): nothing to expect of them
    observed = {"exit_code": exit_code} | results.counts
    if canaries is not None:
        observed[CANARIES] = details[CANARIES]["state"]
    if request.required and not results.counts:
        raise ObservationFailed(
            f"--require-test needs the tests' results, and the run reported none "
            f"(it exited {exit_code}; {results.none_because})"
        )
    if results.none_because:
        details["no_counts"] = results.none_because
    # The child and everything it started are gone: only now is any key material read.
    secrets = environment_secrets(request.env_names) + key_material(request.secret_files)
    secrets += [secret for arg in request.command for secret in url_secrets(_url_of(arg))]
    details |= {
        "duration_s": round(duration, 3),
        "runner": runner.name,
        "argv": redact_argv(invocation.argv, secrets),
        "output_tail": [redact(line, secrets) for line in tail],
        "workspace_before": digests["subject"],
        "test_config": digests["test_config"],
    }
    if toolchain.program is not None:
        details["python" if runner.ecosystem == "python" else "program"] = toolchain.program
    if results.failures:
        details["failures"] = [
            {**failure, "message": redact(failure["message"], secrets)}
            for failure in results.failures
        ]
    counted = runner.counts_failures and bool(results.counts)
    return Observation(
        target=shlex.join(redact_argv(request.command, secrets)),
        expected=request.expected_of(counted=counted, canaries=canaries),
        observed_value=observed,
        subject=digests["subject"],
        details=details,
    )


def _results(
    runner: Runner,
    invocation: Invocation,
    channel: Channel | None,
    stream: bytes,
    report: Path | None,
    report_before: tuple[int, int, int, int] | None,
    exit_code: int,
    owned: Path,
) -> Results:
    if invocation.source is ReportSource.CHANNEL:
        assert channel is not None  # opened for every runner with a plugin
        return runner.channel_results(stream, channel.key)
    if invocation.source is ReportSource.NONE or report is None:
        return no_counts("the runner reports no per-test results: its exit code alone counts")
    if invocation.source is ReportSource.STDOUT:
        return runner.results(_read_report(report, owned))  # the observer's own file
    return runner.results(_read_fresh_report(report, report_before, exit_code, owned))


def hidden_files(folder: Path, workspace: Workspace) -> dict[bytes, bytes]:
    """The operator's hidden tests: every regular file below ``folder``, by its path there,
    which is its path in the run's copy. The folder must be outside the workspace (the agent
    would read and change it), and holds no link (a link could lead anywhere the agent put)."""
    if inside(str(folder), workspace.root):
        raise UsageError(
            f"hidden_tests: {folder} is inside the workspace, where the agent can read and change "
            "it; keep the hidden tests in a folder of the operator's"
        )
    if not folder.is_dir():
        raise UsageError(f"hidden_tests: {folder} is not a folder")
    found: dict[bytes, bytes] = {}
    size = 0
    for parent, folders, names in os.walk(folder):
        for name in sorted([*folders, *names]):
            path = Path(parent, name)
            if path.is_symlink() or not (path.is_dir() or path.is_file()):
                raise UsageError(f"hidden_tests: {path} is a link or a special file; only "
                                 "folders and regular files are laid into the run")  # fmt: skip
        for name in names:
            path = Path(parent, name)
            found[os.fsencode(path.relative_to(folder))] = data = path.read_bytes()
            size += len(data)
            if size > MAX_HIDDEN_BYTES:
                raise UsageError(f"hidden_tests: {folder} holds over {MAX_HIDDEN_BYTES} bytes")
    if not found:
        raise UsageError(f"hidden_tests: {folder} holds no file")
    return found


def lay_hidden(tree: RunTree, hidden: Mapping[bytes, bytes], hash_name: str) -> dict[str, str]:
    """Write the hidden tests into the run's copy, over whatever the work tree has at their
    paths, as the operator's files (not the claim's); each path with its content's digest."""
    laid = {}
    for rel, data in sorted(hidden.items()):
        tree.write(rel, data, "100644", hash_name)
        del tree.files[rel], tree.object_ids[rel]
        laid[os.fsdecode(rel)] = "sha256:" + sha256(data).hexdigest()
    return laid


# What each event of the runtime monitor (:mod:`.runtime_monitor`) says the code did.
_MONITORED = {
    "sys._getframe": "read the call stack",
    "sys._current_frames": "read every thread's call stack",
    "object.__getattr__": "read a frame",
    "object.__setattr__ __code__": "swapped a function's code object",
    "object.__setattr__ __defaults__": "replaced a function's default arguments",
    "object.__setattr__ __kwdefaults__": "replaced a function's default arguments",
    "code.__new__": "made a code object",
    "function.__new__": "made a function from a code object",
    "gc.get_objects": "walked the garbage collector",
    "gc.get_referrers": "walked the garbage collector",
    "gc.get_referents": "walked the garbage collector",
    "sys.settrace": "traced the interpreter",
    "sys.setprofile": "profiled the interpreter",
    "sys.addaudithook": "added an audit hook",
    "compile": "compiled code",
    "exec": "executed code",
    "os.kill": "signalled its own process",
    "os.killpg": "signalled its own process",
    "ctypes": "used ctypes",
}


def _require_unmonitored(results: Results, work: str) -> None:
    """Refused when the runtime monitor caught the changed code doing what only code that
    knows it is tested needs (a runner with no monitor reports nothing here)."""
    if not results.monitored:
        return
    event, file, line = results.monitored[0]
    kind = "ctypes" if event.startswith("ctypes.") else event
    what = _MONITORED.get(kind) or _MONITORED.get(kind.partition(" ")[0], kind)
    where = file.removeprefix(f"{work}/")  # a file outside the work tree as the run named it
    more = len(results.monitored) - 1
    raise ObservationFailed(
        f"the code under test {what} at {where}:{line} ({event})"
        + (f", and did {more} more such thing(s)" if more else "")
        + ": not verified"
    )


def _run_tree(
    request: RunRequest,
    workspace: Workspace,
    sandbox: Sandbox | None,
    owned: Path,
    owner: int | None,
) -> tuple[RunTree, Mirror, Overlay | None]:
    """Where the run's files are: with the operator's mirror and a sandbox, the mirror seen
    through an overlay (the run's writes go to a layer of its own); else a fresh copy."""
    run_dir = owned / "work"
    hash_name = workspace.object_format()
    if request.mirror is None or sandbox is None:
        mirror = Mirror.fresh(workspace.root, os.fsencode(run_dir), owner, hash_name)
        return RunTree(os.fsencode(run_dir), owner), mirror, None
    (owned / "layer").mkdir()
    if owner is not None:
        os.chown(owned / "layer", owner, owner)
    (owned / "overlay-work").mkdir()
    mirror = request.mirror
    overlay = Overlay(os.fsdecode(mirror.tree), str(owned / "layer"), str(owned / "overlay-work"))
    return RunTree(mirror.tree, owner, os.fsencode(owned / "layer")), mirror, overlay


def _clear_outputs(tree: RunTree, runner: Runner, details: dict[str, Any]) -> list[str]:
    """Remove the build's output folders from the run's copy (what the agent left there, built
    or written by hand, is not the run's): the build starts clean, and every report read from
    them after the run was written by it. The folders, as work-tree paths."""
    outputs = runner.outputs(os.fsdecode(rel) for rel in tree.files)
    removed = []
    for folder in outputs:
        inner = os.fsencode(folder) + b"/"
        held = [rel for rel in tree.files if rel.startswith(inner) or rel == inner[:-1]]
        for rel in held:
            tree.remove(rel)
        tree.remove_folder(os.fsencode(folder))
        if held:
            removed.append(folder)
    if removed:
        details["build_outputs_removed"] = removed
    return outputs


def _build_reports(
    runner: Runner, run_dir: Path, outputs: Sequence[str], owned: Path
) -> list[bytes]:
    """The report files the build wrote into its output folders, in path order. Links are not
    followed: a folder the run replaced by a link is not searched."""
    found: list[Path] = []
    for folder in outputs:
        for parent, folders, files in os.walk(run_dir / folder):
            folders.sort()
            paths = (Path(parent, name) for name in sorted(files))
            found += [path for path in paths if runner.is_report(str(path.relative_to(run_dir)))]
        if len(found) > _MAX_BUILD_REPORTS:
            raise ObservationFailed(f"the build wrote over {_MAX_BUILD_REPORTS} report files")
    reports, size = [], 0
    for path in found:
        reports.append(_read_report(path, owned))
        size += len(reports[-1])
        if size > MAX_REPORT_BYTES:
            raise ObservationFailed(f"the build's reports are over {MAX_REPORT_BYTES} bytes")
    return reports


def _fill_run_tree(
    tree: RunTree,
    request: RunRequest,
    workspace: Workspace,
    mutations: Sequence[Mutation],
    excluded: Sequence[str],
    deadline: Deadline,
    mirror: Mirror,
) -> tuple[dict[str, Any], dict[bytes, Lines | None]]:
    """Give the run the workspace, bind it to the claim, then deal with protected paths: the
    details saying what became of them, and the code the agent changed."""
    hash_name = workspace.object_format()
    tree.fill(workspace, excluded, deadline, mirror)
    head = workspace.head()
    require_recorded(tree, head, mutations, excluded)
    watched = [  # what the runtime monitor watches
        rel for rel in changed_code(tree, head, mutations, request.protect)
        if not any(fnmatch.fnmatchcase(os.fsdecode(rel), glob) for glob in request.allow_test_aware)
    ]  # fmt: skip
    if request.trusted_ref is None:
        changes = changed_protected(tree, head, mutations, request.protect)
        return {"test_config_changed": changes}, dict.fromkeys(watched)
    source = request.trusted_content or GitContent(
        workspace.root, pinned_commit(workspace.root, request.trusted_ref)
    )
    changed = changed_lines(tree, workspace.root, source.commit, watched)
    commit, restored = restore_protected(tree, source, request.protect, hash_name, deadline)
    return {
        "trusted_ref": commit,
        "protected_restored": restored,
        "test_config_changed": [],
    }, changed


def _dependencies(
    request: RunRequest,
    runner: Runner,
    toolchain: Toolchain,
    sandbox: Sandbox | None,
    tree: RunTree,
    cwd: str,
    deadline: Deadline,
    details: dict[str, Any],
) -> dict[str, tuple[Path, str]]:
    """The runner's dependencies from the operator's cache, installed first when needed: each
    mounted folder's host path and path as the run sees it."""

    def read(name: str) -> bytes | None:
        rel = os.path.normpath(os.path.join(cwd, name)).encode()
        return tree.read(rel) if rel in tree.files else None

    spec = runner.dependencies(request.command, read)
    if spec is None:
        return {}
    require_protected(runner, spec, cwd)
    run_dir = Path(os.fsdecode(tree.root))
    if tree.layer is None:
        lockfiles = read_lockfiles(run_dir / cwd, spec)
    else:
        # The run's view is an overlay no one mounted here: its lockfiles, as the run is given
        # them (restored ones from its layer), are read through a folder of their own.
        with tempfile.TemporaryDirectory(prefix="claim-lockfiles-") as folder:
            for name in spec.lockfiles:
                rel = os.path.normpath(os.path.join(cwd, name)).encode()
                if rel in tree.files:
                    (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
                    (Path(folder) / name).write_bytes(tree.read(rel))
            lockfiles = read_lockfiles(Path(folder), spec)
    cache = request.dependency_cache or default_runs_dir(os.environ) / "dependencies"
    deadline.check("installing the dependencies")
    installed = install(cache, runner, spec, lockfiles, toolchain, sandbox, deadline.remaining())
    details["dependencies"] = {
        "key": installed.key,
        "lockfiles": {
            name: "sha256:" + sha256(data).hexdigest() for name, data in lockfiles.items()
        },
    }
    mounts: dict[str, tuple[Path, str]] = {}
    work = WORK if sandbox is not None else str(run_dir)
    for sub, place in spec.mounts.items():
        host = installed.host(sub)
        if place is not None:
            seen = os.path.normpath(os.path.join(work, cwd, place))
        else:
            seen = f"{DEPENDENCIES_MOUNT}/{sub}" if sandbox is not None else str(host)
        if sandbox is None and place is not None:
            _link_in_place(Path(seen), host)
        mounts[sub] = (host, seen)
    return mounts


def _link_in_place(path: Path, host: Path) -> None:
    """Without a sandbox nothing can be mounted: the run's copy gets a link to the entry in
    place of whatever the agent left there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(host)


@dataclass(frozen=True)
class _Launch:
    """How the run is started: confined in the sandbox (paths as the run sees them), or, with
    no sandbox, at the observer's own paths."""

    request: RunRequest
    sandbox: Sandbox | None
    toolchain: Toolchain
    owned: Path
    cwd: str  # relative to the work tree's root
    channel: Channel | None
    mounts: Mapping[str, tuple[Path, str]]  # dependency folders: host path, path in the run
    tree: RunTree
    overlay: Overlay | None  # the run's files: the mirror under the run's own layer
    canaries: Canaries | None  # the observer's own tests in this run

    @property
    def work(self) -> str:
        return str(self.owned / "work") if self.sandbox is None else WORK

    @property
    def reports(self) -> str:
        return str(self.owned / _REPORT_FOLDER) if self.sandbox is None else REPORTS

    @property
    def home(self) -> str:
        return str(self.owned / "home") if self.sandbox is None else "/tmp"  # noqa: S108

    @property
    def plugin_dir(self) -> str | None:
        """The observer's folder the run reads (its plugin, its preload), on the host; None
        when the runner has neither."""
        folder = self.owned / _PLUGIN_FOLDER
        return str(folder) if folder.is_dir() else None

    def context(self) -> RunContext:
        ends = None
        folder = self.plugin_dir if self.sandbox is None else PLUGINS
        if self.channel is not None:
            ends = ChannelEnds(str(folder), self.channel.module, self.channel.descriptors)
        preload = self.request.runner.preload
        return RunContext(
            toolchain=self.toolchain,
            channel=ends,
            env=self.environment(),
            dependencies={sub: seen for sub, (_, seen) in self.mounts.items()},
            installed={sub: str(host) for sub, (host, _) in self.mounts.items()},
            work=self.work,
            cwd=os.path.normpath(f"{self.work}/{self.cwd}"),
            reports=self.reports,
            canaries=self.canaries,
            preload=None if preload is None else f"{folder}/{preload.name}",
            repeat=self.request.repeat,
        )

    def environment(self) -> dict[str, str]:
        """The allow-listed environment: nothing of the observer's reaches the run unless
        named."""
        path = ":".join([*self.toolchain.path, SYSTEM_PATH])
        env = {
            "PATH": path,
            "HOME": self.home,
            "TMPDIR": self.home,
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        env |= {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
        env |= dict(self.toolchain.env)
        return env | {n: os.environ[n] for n in self.request.env_names if n in os.environ}

    def require_toolchain_starts(self) -> None:
        """Refused unless the sandbox starts the toolchain (its probe command); nothing to
        prove without a sandbox."""
        if self.sandbox is None:
            return
        self.sandbox.probe(
            self.toolchain.probe or ("true",),
            str(self.owned / "work"),
            self.plugin_dir,
            list(self.toolchain.readable),
            self.overlay,
        )

    def on_host(self, path: str) -> Path:
        """A path the run named (in the work tree or the report folder), on the observer's
        side; refused when it is anywhere else."""
        written = self.owned / "work" if self.overlay is None else Path(self.overlay.upper)
        for seen, host in ((self.work, written),
                           (self.reports, self.owned / _REPORT_FOLDER)):  # fmt: skip
            rel = os.path.relpath(os.path.normpath(path), seen)
            if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
                return host / rel
        raise ObservationFailed(f"the report {path} is outside the run's folders")

    def confined(
        self, invocation: Invocation, deadline: Deadline
    ) -> tuple[list[str], dict[str, str], str]:
        """What to start, with which environment, and how the run is confined."""
        env = self.environment() | dict(invocation.env)
        run_dir = self.owned / "work"
        if self.sandbox is None:
            (self.owned / "home").mkdir()
            return list(invocation.argv), env, NO_SANDBOX
        readable = list(self.toolchain.readable)
        deadline.check("starting the sandbox")
        _require_program(invocation.argv[0], env["PATH"], self.cwd, self.tree)
        confined = self.sandbox.argv(
            invocation.argv,
            run_dir=str(run_dir),
            plugin_dir=self.plugin_dir,
            report_dir=str(self.owned / _REPORT_FOLDER),
            cwd=os.path.normpath(f"{WORK}/{self.cwd}"),
            env=env,
            readable=readable,
            hidden=self.request.secret_files,
            mounts=[(str(host), seen) for host, seen in self.mounts.values()],
            overlay=self.overlay,
        )
        return confined, {"PATH": SYSTEM_PATH}, self.sandbox.describe()


def _require_program(program: str, path: str, cwd: str, tree: RunTree) -> None:
    within = os.fsencode(os.path.normpath(os.path.join(cwd, program)))
    found = within in tree.files if "/" in program else shutil.which(program, path=path)
    if not found and not os.path.isabs(program):
        raise ObservationFailed(f"command not found: {program}")


def _relative(path: Path, root: Path) -> str | None:
    rel = os.path.relpath(os.path.realpath(path), root)
    if rel in (os.curdir, os.pardir) or rel.startswith(os.pardir + os.sep):
        return None
    return Path(rel).as_posix()


# --- secrets ------------------------------------------------------------------------------


def environment_secrets(passed: Iterable[str] = ()) -> list[str]:
    """Values of the observer's secret-looking variables, and of every variable passed on."""
    names = set(passed)
    return [
        value
        for name, value in os.environ.items()
        if (_SECRET_NAME.search(name) or name in names) and len(value) >= _SHORTEST_SECRET
    ]


def key_material(paths: Iterable[str]) -> list[str]:
    """Every way a key file's material may be printed: the file's text and lines, and the key
    bytes (the PEM body decoded, and its last 32 bytes, an Ed25519 seed) in hex and base64."""
    found: list[str] = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                text = handle.read(1 << 16).decode("utf-8", "replace")
        except OSError:
            continue
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        body = [line for line in lines if not line.startswith("-----")]
        found += [text.strip(), *lines]
        with contextlib.suppress(binascii.Error, ValueError):
            der = base64.b64decode("".join(body), validate=True)
            for blob in (der, der[-32:]):
                encoded = base64.b64encode(blob).decode()
                found += [blob.hex(), blob.hex().upper(), encoded, encoded.rstrip("=")]
                found.append(base64.urlsafe_b64encode(blob).decode().rstrip("="))
    return [value for value in found if len(value) >= _SHORTEST_SECRET]


def redact(text: str, secrets: Sequence[str]) -> str:
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def redact_argv(argv: Sequence[str], secrets: Sequence[str]) -> list[str]:
    """Arguments with URL credentials masked (also in ``--option=URL``) and secrets replaced."""
    return [redact(_redact_urls(arg), secrets) for arg in argv]


def _redact_urls(arg: str) -> str:
    url = _url_of(arg)
    return arg if not url else arg.removesuffix(url) + redact_url(url)


def _url_of(arg: str) -> str:
    """The URL an argument is (or an ``--option=URL`` holds); empty when none."""
    if "://" not in arg:
        return ""
    _, equals, value = arg.partition("=")
    return value if arg.startswith("-") and equals and "://" in value else arg


def _run(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    timeout_s: float,
    channel: Channel | None,
    stdout: Path | None = None,
    meanwhile: Callable[[], None] = lambda: None,
) -> tuple[int, bytes]:
    """Run without a shell, in a session of its own, so a timeout ends everything it started;
    whatever it leaves running is ended too, so nothing writes after the run is over. The exit
    code, and what came through the channel's pipe meanwhile. Standard output goes to the log
    with standard error, or to ``stdout`` when the runner reports there. ``meanwhile`` is the
    observer's own work, done once the command has started."""
    if timeout_s <= 0:
        raise ObservationFailed("the observation ran out of time before the command started")
    with open(log, "wb") as output, open(stdout or os.devnull, "wb") as events:
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=output if stdout is None else events,
                stderr=subprocess.STDOUT if stdout is None else output,
                start_new_session=True,
                pass_fds=() if channel is None else channel.inherited,
            )
        except FileNotFoundError:
            raise ObservationFailed(f"command not found: {argv[0]}") from None
        except OSError as exc:
            raise ObservationFailed(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        try:
            ends = time.monotonic() + timeout_s
            if channel is not None:
                channel.started()
            meanwhile()
            if channel is None:
                return process.wait(timeout=max(ends - time.monotonic(), 0)), b""
            return _wait_reading(process, channel.reader, ends - time.monotonic())
        except subprocess.TimeoutExpired:
            raise ObservationFailed(
                f"the command ran longer than {timeout_s:g} s and was killed"
            ) from None
        finally:
            with contextlib.suppress(ProcessLookupError):  # the whole group already exited
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _wait_reading(process: subprocess.Popen[bytes], fd: int, timeout_s: float) -> tuple[int, bytes]:
    """Wait for the process while reading ``fd``, so a full pipe never stalls the run. What a
    process it left behind writes later is not waited for (outside the sandbox one may hold
    the pipe open for ever): the runner's own records were all written before it exited."""
    ends = time.monotonic() + timeout_s
    received = bytearray()
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while process.poll() is None:
            remaining = ends - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(process.args, timeout_s)
            # Once the pipe is done with, this only waits for the process.
            if selector.select(min(remaining, _POLL_S)) and not _drain(fd, received):
                selector.unregister(fd)
    _drain(fd, received)
    return process.returncode, bytes(received)


def _drain(fd: int, into: bytearray) -> bool:
    """Read what is there; False once nothing more will be read: at the end of the stream, or
    past the limit (a stream that long counts for nothing, and a writer that fills the pipe
    then waits out the timeout)."""
    while len(into) <= MAX_REPORT_BYTES:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        into += chunk
    return False


# --- pytest's report ------------------------------------------------------------------------


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    """What changes whenever a file is written or replaced. Compared instead of the mtime with
    the run's start: file times come from a coarser clock and can lag a fresh write behind it."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class Channel:
    """How one run reports to the observer through a runner's plugin: the plugin copied under a
    module name drawn for the run (so no file of the work tree is imported in its place, and no
    configuration can name it to switch it off), a pipe holding the key only the plugin reads,
    and the pipe its records come through."""

    def __init__(self, folder: Path, plugin: Path, settings: Mapping[str, Any]) -> None:
        self.folder = folder
        self.plugin = plugin
        self.settings = json.dumps(settings).encode()
        self.module = f"claim_report_{token_hex(8)}"
        self.key = token_hex(32).encode()
        self._open: set[int] = set()
        self.inherited: tuple[int, int] = (-1, -1)
        self.reader = -1

    def __enter__(self) -> Channel:
        self.folder.mkdir()
        shutil.copyfile(self.plugin, self.folder / f"{self.module}.py")
        shutil.copyfile(MONITOR, self.folder / f"{self.module}_monitor.py")
        self.reader, records_write = self._pipe()
        self.inherited = (-1, records_write)
        return self

    def hand_over(self, work: str, watched: Iterable[tuple[str, Lines | None]]) -> None:
        """Make the key's pipe once the run's files are all written (its time is the runtime
        monitor's: a file of ``work`` changed after it was written by the run), and fill it: the
        key, the run's settings, then the work tree's root and the changed files the monitor
        watches, as the run sees them, each with the lines the agent changed (None: all). All of
        it fits in the pipe, so nothing blocks."""
        key_read, key_write = self._pipe()
        self.inherited = (key_read, self.inherited[1])
        # Paths as the run names them, undecodable bytes kept (surrogate escapes).
        listed = json.dumps({"root": work, "files": list(watched)}).encode()
        # The key, the run's settings, the monitor's files: read before any code of the run's.
        payload = memoryview(self.key + b"\n" + self.settings + b"\n" + zlib.compress(listed))
        with contextlib.suppress(OSError):  # a pipe holds 64 KiB, and may be made larger
            fcntl.fcntl(key_write, fcntl.F_SETPIPE_SZ, len(payload))
        if len(payload) > fcntl.fcntl(key_write, fcntl.F_GETPIPE_SZ):
            raise ObservationFailed(
                "the run's settings and changed files are more than a pipe holds"
            )
        while payload:
            payload = payload[os.write(key_write, payload) :]
        self._close(key_write)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for fd in list(self._open):
            self._close(fd)

    @property
    def descriptors(self) -> str:
        """The inherited descriptors as the plugin finds them: ``fd:inode`` each."""
        return " ".join(f"{fd}:{os.fstat(fd).st_ino}" for fd in self.inherited)

    def started(self) -> None:
        """The child holds its ends now: the observer's copies go, so only the run has them."""
        for fd in self.inherited:
            self._close(fd)

    def _pipe(self) -> tuple[int, int]:
        read, write = os.pipe()
        self._open |= {read, write}
        return read, write

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)


def _read_fresh_report(
    report: Path, before: tuple[int, int, int, int] | None, exit_code: int, within: Path
) -> bytes:
    after = _signature(report)
    if after is None or after == before:
        state = "missing" if after is None else "stale: the run did not write it"
        said = _error_said(within / "output.log")
        raise ObservationFailed(
            f"the report {report} is {state} (the command exited {exit_code}"
            f"{f': {said}' if said else ''})"
        )
    return _read_report(report, within)


# What a runner that stopped before its report says why with: its own complaint (mocha's
# ``Exception during run: calc.js:7``, jest's ``● Unrecognized CLI Parameter:``), the line after
# it, and the error it names (``SyntaxError: Unexpected token ';'``); never node's closing
# ``Node.js v20.20.2``.
_COMPLAINT = re.compile(r".*(\b(Exception|ERROR)\b|\u25cf).*|\S*Error\b.*")
_ERROR = re.compile(r"[\w$.]*Error( \[\w+\])?: .+")
_NODE_TRAILER = re.compile(r"Node\.js v[0-9.]+")


def _error_said(log: Path) -> str:
    """The run's first complaint with the line after it and its first error, else its last
    line of output."""
    lines = [
        line.strip()
        for line in _tail(log, _SAID_LINES)
        if line.strip() and not _NODE_TRAILER.fullmatch(line.strip())
    ]
    at = next((i for i, line in enumerate(lines) if _COMPLAINT.fullmatch(line)), None)
    error = next((line for line in lines if _ERROR.fullmatch(line)), None)
    found = [] if at is None else lines[at : at + 2]
    said = " | ".join(dict.fromkeys(line for line in (*found, error) if line))
    return (said or (lines[-1] if lines else ""))[:_SAID_CHARS]


def _read_report(path: Path, within: Path) -> bytes:
    # The command may have left something other than a file there: opening a FIFO must not
    # block, a device must not be read as a report, and a link must not make the observer read
    # a file the run could not (its processes are gone, so nothing can swap the path now).
    if not inside(os.path.realpath(path.parent), within):
        raise ObservationFailed(f"the report {path} is outside the run directory")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise ObservationFailed(f"cannot read the report {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ObservationFailed(f"the report {path} is not a regular file")
        data = handle.read(MAX_REPORT_BYTES + 1)
    if len(data) > MAX_REPORT_BYTES:
        raise ObservationFailed(f"the report {path} is over {MAX_REPORT_BYTES} bytes")
    return data


def _tail(log: Path, lines: int = OUTPUT_TAIL_LINES) -> list[str]:
    with open(log, "rb") as handle:
        handle.seek(max(0, log.stat().st_size - _OUTPUT_TAIL_BYTES))
        text = handle.read().decode("utf-8", "replace")
    return text.splitlines()[-lines:]
