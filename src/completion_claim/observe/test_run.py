"""test_run observed: run the tests once, outside the agent loop, and record what the run showed.

Only two things are trusted: the command's exit code, and the runner's report of its tests.
Whatever the command, pytest loads the observer's plugin (:mod:`.pytest_reporter`, through
``PYTEST_ADDOPTS``) under a module name drawn for the run; it reports each test's outcome through
an inherited pipe, every record bound to a key only the plugin read, and counts only when its
session reached its own end. Nothing the tests can write by path, or without the key, is read.
Another runner's JUnit XML report is named with ``--junit``. With no report the run is recorded
by its exit code alone (no counts), never as a run of zero tests. What the tests print is kept
for people to read, redacted of secrets, and never judged.

The run happens on exactly the files the claim describes (:mod:`.run_tree`: a fresh copy, or the
operator's mirror of the workspace seen through an overlay that takes the run's writes), with
protected test paths from a ref the operator trusts when given, under the operator's interpreter
and a scrubbed environment, in a sandbox (:mod:`.sandbox`) that cannot reach the workspace, the
signing key or the network, and whose every process dies with it.

Report names: a test is ``<classname>::<name>`` as a JUnit report spells them; pytest's node ids
are mapped the way its junitxml plugin maps them (path separators become dots, ``.py`` is
dropped, classes join the module: ``tests/test_x.py::TestA::test_b[1]`` is
``tests.test_x.TestA::test_b[1]``). A required test may be named either way. Matching is exact: a
test the report does not name is absent, and absent is not passed.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
import re
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from secrets import token_hex
from types import TracebackType
from typing import Any
from xml.parsers import expat

from ..errors import ObservationFailed, UsageError
from ..model import Mutation
from ._common import Observation
from .mirror import Mirror, require_unchanged
from .pytest_reporter import ENVIRONMENT as REPORT_FDS
from .run_tree import (
    Deadline,
    GitContent,
    RunTree,
    TrustedContent,
    changed_protected,
    pinned_commit,
    require_recorded,
    restore_protected,
)
from .sandbox import PLUGINS, SYSTEM_PATH, WORK, Overlay, Sandbox
from .values import REDACTED, redact_url, url_secrets
from .workspace import Workspace, config_digests, tree_digest

CHECK_TYPE = "test_run"
PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
COUNT_KEYS = {PASSED: "passed", FAILED: "failed", ERROR: "errors", SKIPPED: "skipped"}
# When one name appears more than once in a report, the least favourable outcome stands.
_SEVERITY = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}
MAX_REPORT_BYTES = 64 * 1024 * 1024
OUTPUT_TAIL_LINES = 20
MAX_FAILURES = 20  # failed tests whose first message line is kept in details.failures
MAX_FAILURE_CHARS = 200
NO_SANDBOX = "none"
_OUTPUT_TAIL_BYTES = 64 * 1024
_PYTHON = re.compile(r"(python|pypy)[0-9.]*")
_PYTEST_PROGRAMS = frozenset({"pytest", "py.test"})
_PYTEST_REPORT_OPTIONS = ("--junitxml", "--junit-xml")
_PLUGIN = Path(__file__).with_name("pytest_reporter.py")
_PLUGIN_FOLDER = "plugin"  # in the folder the observer owns
_RECORD_FIELDS = {"seq", "node", "when", "outcome", "xfail", "message"}
_SECRET_NAME = re.compile("KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_SHORTEST_SECRET = 4  # shorter values would redact ordinary text
_PASSED_THROUGH = ("LC_ALL", "TZ", "TERM")
_QUERY_TIMEOUT_S = 30.0
_POLL_S = 0.02  # how soon the end of a run is noticed while its pipe is read


@dataclass(frozen=True)
class RunRequest:
    """One test run to observe. Build it with :func:`prepare` so mistakes surface before any run."""

    command: tuple[str, ...]
    cwd: Path
    junit: str | None  # the JUnit file another runner writes, relative to cwd
    required: tuple[str, ...]  # report names (classname::name) that must have passed
    timeout_s: float
    excluded: tuple[Path, ...]  # files the observer itself writes (the claim)
    python: str | None = None  # the operator's interpreter; None: the observer's own
    env_names: tuple[str, ...] = ()  # variables passed through to the run
    sandboxed: bool = True
    network: bool = False
    trusted_ref: str | None = None  # a full commit id (names are the agent's to move)
    trusted_content: TrustedContent | None = None  # the operator's copy of trusted_ref's files
    protect: tuple[str, ...] = ()  # globs of further protected paths
    secret_files: tuple[str, ...] = ()  # read after the run, to redact their material
    mirror: Mirror | None = None  # the operator's mirror, held by the caller; None: a fresh copy

    @property
    def target(self) -> str:
        return shlex.join(redact_argv(self.command, environment_secrets(self.env_names)))

    @property
    def expected(self) -> dict[str, Any]:
        return self.expected_of(counted=False)

    def expected_of(self, *, counted: bool) -> dict[str, Any]:
        """Exit code 0; no failed or errored test when pytest reported its tests (a run can
        end with any exit code it likes after its session ended); the required tests passed."""
        expected: dict[str, Any] = {"exit_code": 0}
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
    pytest = is_pytest(command)
    if pytest and junit is not None:
        raise UsageError("--junit is for other commands: pytest reports to the observer itself")
    if pytest and any(arg.startswith(_PYTEST_REPORT_OPTIONS) for arg in command):
        raise UsageError(
            "remove --junitxml from the pytest command: the observer reads pytest's results "
            "through its own plugin, never a report file the tests could write"
        )
    return RunRequest(
        command=tuple(command),
        cwd=cwd,
        junit=junit,
        required=tuple(dict.fromkeys(report_name(name) for name in require_tests)),
        timeout_s=timeout_s,
        excluded=tuple(excluded),
        **options,
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
    return junit_name(name) if name.partition("::")[0].endswith(".py") else name


def junit_name(node_id: str) -> str:
    """The name pytest's junitxml gives a node id (its mangle_test_address): parameters are
    kept verbatim."""
    address, bracket, params = node_id.partition("[")
    parts = address.split("::")
    parts[0] = parts[0].replace("/", ".").removesuffix(".py")
    return ".".join(parts[:-1]) + "::" + parts[-1] + bracket + params


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
        kept = [f for f in sorted(folders) if not _inside(f, Path("/usr"))]
        return [f for f in kept if not any(o != f and _inside(f, Path(o)) for o in kept)]

    def command(self, command: Sequence[str]) -> list[str]:
        """``python``/``python3.X`` runs as this interpreter; ``pytest`` as ``<it> -m pytest``."""
        program = os.path.basename(command[0])
        if _PYTHON.fullmatch(program):
            return [self.executable, *command[1:]]
        if program in _PYTEST_PROGRAMS:
            return [self.executable, "-m", "pytest", *command[1:]]
        return list(command)


def observe(request: RunRequest, mutations: Sequence[Mutation] = ()) -> Observation:
    """Run the request on a copy of the workspace bound to ``mutations`` (the claim's)."""
    deadline = Deadline(request.timeout_s)
    workspace = Workspace.containing(request.cwd)
    if request.trusted_ref is not None and not workspace.in_git:
        raise UsageError("--trusted-ref needs a git repository: the workspace is not in one")
    for secret in request.secret_files:
        if _inside(secret, workspace.root):
            raise ObservationFailed(
                f"the signing key {secret} is inside the workspace, where the agent and the "
                "run can read it: keep it elsewhere"
            )
    cwd = _relative(Path(os.path.realpath(request.cwd)), workspace.root) or "."
    interpreter = Interpreter.chosen(request.python, workspace.root)
    sandbox = Sandbox.find(network=request.network) if request.sandboxed else None
    excluded = [rel for rel in (_relative(p, workspace.root) for p in request.excluded) if rel]
    with contextlib.ExitStack() as stack:
        owned = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="claim-test-run-")))
        channel = None if request.junit is not None else stack.enter_context(Channel(owned))
        run_dir = owned / "work"
        owner = sandbox.uid if sandbox is not None and sandbox.setpriv is not None else None
        tree, mirror, overlay = _run_tree(request, workspace, sandbox, owned, owner)
        subject, details = _fill_run_tree(tree, request, workspace, mutations, excluded, deadline,
                                          mirror)  # fmt: skip
        argv = interpreter.command(request.command)
        started_argv, host_env, details["sandbox"] = _launcher(
            request, sandbox, interpreter, argv, owned, cwd, channel, deadline, tree, overlay
        )
        # What the run wrote: in the overlay's own layer, or in the copy.
        written = run_dir if overlay is None else Path(overlay.upper)
        junit = None if request.junit is None else written / cwd / request.junit
        junit_before = _signature(junit) if junit is not None else None
        started = time.monotonic()
        host_cwd = run_dir / cwd if overlay is None else owned  # bwrap sets the run's own
        exit_code, stream = _run(
            started_argv, host_cwd, host_env, owned / "output.log", deadline.remaining(), channel
        )
        duration = time.monotonic() - started
        if channel is not None:
            results = channel.results(stream)
        else:
            assert junit is not None  # the channel is left out for --junit only
            report = _read_fresh_report(junit, junit_before, exit_code, written)
            results = Results(parse_junit(report), junit_failures(report))
        tail = _tail(owned / "output.log")
        require_unchanged(mirror, (rel for rel in tree.files if rel in mirror.seen))
    observed = {"exit_code": exit_code} | results.counts
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
        "argv": redact_argv(argv, secrets),
        "output_tail": [redact(line, secrets) for line in tail],
        "python": interpreter.executable,
        "workspace_before": subject,
        "test_config": config_digests(tree.files),
    }
    if results.failures:
        details["failures"] = [
            {**failure, "message": redact(failure["message"], secrets)}
            for failure in results.failures
        ]
    return Observation(
        target=shlex.join(redact_argv(request.command, secrets)),
        expected=request.expected_of(counted=channel is not None and bool(results.counts)),
        observed_value=observed,
        subject=subject,
        details=details,
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
    for folder in (run_dir, owned / "layer") if request.mirror and sandbox else (run_dir,):
        folder.mkdir()
        if owner is not None:
            os.chown(folder, owner, owner)
    if request.mirror is None or sandbox is None:
        mirror = Mirror.fresh(workspace.root, os.fsencode(run_dir), owner, hash_name)
        return RunTree(os.fsencode(run_dir), owner), mirror, None
    (owned / "overlay-work").mkdir()
    mirror = request.mirror
    overlay = Overlay(os.fsdecode(mirror.tree), str(owned / "layer"), str(owned / "overlay-work"))
    return RunTree(mirror.tree, owner, os.fsencode(owned / "layer")), mirror, overlay


def _fill_run_tree(
    tree: RunTree,
    request: RunRequest,
    workspace: Workspace,
    mutations: Sequence[Mutation],
    excluded: Sequence[str],
    deadline: Deadline,
    mirror: Mirror,
) -> tuple[str, dict[str, Any]]:
    """Give the run the workspace, bind it to the claim, then deal with protected paths: the
    digest of what the run was given, and the details saying what became of protected paths."""
    hash_name = workspace.object_format()
    tree.fill(workspace, excluded, deadline, mirror)
    head = workspace.head()
    require_recorded(tree, head, mutations, excluded)
    subject = tree_digest(tree.files)
    if request.trusted_ref is None:
        return subject, {
            "test_config_changed": changed_protected(tree, head, mutations, request.protect)
        }
    source = request.trusted_content or GitContent(
        workspace.root, pinned_commit(workspace.root, request.trusted_ref)
    )
    commit, restored = restore_protected(tree, source, request.protect, hash_name, deadline)
    return subject, {
        "trusted_ref": commit,
        "protected_restored": restored,
        "test_config_changed": [],
    }


def _launcher(
    request: RunRequest,
    sandbox: Sandbox | None,
    interpreter: Interpreter,
    argv: Sequence[str],
    owned: Path,
    cwd: str,
    channel: Channel | None,
    deadline: Deadline,
    tree: RunTree,
    overlay: Overlay | None,
) -> tuple[list[str], dict[str, str], str]:
    """What to start, with which environment, and how the run is confined."""
    run_dir = owned / "work"
    plugin_dir = None if channel is None else str(channel.folder)
    if sandbox is None:
        (owned / "home").mkdir()
        home, plugins = str(owned / "home"), str(owned / _PLUGIN_FOLDER)
        env = _environment(interpreter, home, request.env_names, channel, plugins)
        return list(argv), env, NO_SANDBOX
    sandbox.check(interpreter.executable, str(run_dir), plugin_dir, interpreter.readable,
                  overlay)  # fmt: skip
    deadline.check("starting the sandbox")
    home = "/tmp"  # noqa: S108 - the sandbox's own, empty tmpfs
    env = _environment(interpreter, home, request.env_names, channel, PLUGINS)
    _require_program(argv[0], env["PATH"], cwd, tree)
    confined = sandbox.argv(
        argv,
        run_dir=str(run_dir),
        plugin_dir=plugin_dir,
        cwd=os.path.normpath(f"{WORK}/{cwd}"),
        env=env,
        readable=interpreter.readable,
        hidden=request.secret_files,
        overlay=overlay,
    )
    return confined, {"PATH": SYSTEM_PATH}, sandbox.describe()


def _environment(
    interpreter: Interpreter,
    home: str,
    passed: Iterable[str],
    channel: Channel | None,
    plugin_dir: str,
) -> dict[str, str]:
    """The allow-listed environment: nothing of the observer's reaches the run unless named.
    ``plugin_dir`` is the channel's folder as the run sees it."""
    env = {
        "PATH": f"{interpreter.bin_dir}:{SYSTEM_PATH}",
        "HOME": home,
        "TMPDIR": home,
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env |= {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
    env |= {name: os.environ[name] for name in passed if name in os.environ}
    # However pytest is started (python -B -m pytest, pytest.main(), make), it reads these.
    ours = "-p no:cacheprovider"
    if channel is not None:
        ours = f"-p {channel.module} {ours}"
        env[REPORT_FDS] = " ".join(f"{fd}:{os.fstat(fd).st_ino}" for fd in channel.inherited)
        env["PYTHONPATH"] = ":".join(filter(None, [plugin_dir, env.get("PYTHONPATH")]))
    env["PYTEST_ADDOPTS"] = f"{env['PYTEST_ADDOPTS']} {ours}" if "PYTEST_ADDOPTS" in env else ours
    return env


def _outside_workspace(path: str, workspace: Path) -> None:
    if _inside(path, workspace):
        raise UsageError(
            f"--python: {path} is inside the workspace, which the agent controls; "
            "choose an interpreter outside it"
        )


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


def _inside(path: str, folder: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip("/") + "/")


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
) -> tuple[int, bytes]:
    """Run without a shell, in a session of its own, so a timeout ends everything it started;
    whatever it leaves running is ended too, so nothing writes after the run is over. The exit
    code, and what came through the channel's pipe meanwhile."""
    if timeout_s <= 0:
        raise ObservationFailed("the observation ran out of time before the command started")
    with open(log, "wb") as output:
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=() if channel is None else channel.inherited,
            )
        except FileNotFoundError:
            raise ObservationFailed(f"command not found: {argv[0]}") from None
        except OSError as exc:
            raise ObservationFailed(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        try:
            if channel is None:
                return process.wait(timeout=timeout_s), b""
            channel.started()
            return _wait_reading(process, channel.reader, timeout_s)
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


@dataclass(frozen=True)
class Results:
    """What the runner reported of its tests: counts and ``tests`` (empty when nothing counts,
    and then why), and its failed and errored tests for people."""

    counts: dict[str, Any]
    failures: list[dict[str, str]]
    none_because: str = ""


class Channel:
    """How one pytest run reports to the observer (see :mod:`.pytest_reporter`): the plugin
    under a module name drawn for the run (so no file of the work tree is imported in its
    place, and no configuration can name it to switch it off), a pipe holding the key only the
    plugin reads, and the pipe its records come through."""

    def __init__(self, owned: Path) -> None:
        self.folder = owned / _PLUGIN_FOLDER
        self.module = f"claim_report_{token_hex(8)}"
        self._key = token_hex(32).encode()
        self._open: set[int] = set()
        self.inherited: tuple[int, int] = (-1, -1)
        self.reader = -1

    def __enter__(self) -> Channel:
        self.folder.mkdir()
        shutil.copyfile(_PLUGIN, self.folder / f"{self.module}.py")
        key_read, key_write = self._pipe()
        os.write(key_write, self._key)  # far below a pipe's buffer: nothing blocks
        self._close(key_write)
        self.reader, records_write = self._pipe()
        self.inherited = (key_read, records_write)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for fd in list(self._open):
            self._close(fd)

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

    def results(self, stream: bytes) -> Results:
        return read_records(stream, self._key)


def read_records(stream: bytes, key: bytes) -> Results:
    """The runner's records, when every one is bound to this run's key, in order, and the last
    ends its session; otherwise no counts, and why."""
    if len(stream) > MAX_REPORT_BYTES:
        return _no_counts(f"its report was over {MAX_REPORT_BYTES} bytes")
    if not stream:
        return _no_counts(
            "pytest reported nothing: it did not run with the plugin, or did not reach its "
            "session's end"
        )
    lines = stream.split(b"\n")
    nodes: dict[str, tuple[str, str]] = {}  # node id: worst outcome and its message
    for number, line in enumerate(lines[:-1]):
        try:
            record = _record(line, number, key)
            if record.get("end") is True:
                if number != len(lines) - 2 or lines[-1]:
                    return _no_counts(f"record {number + 2} follows the session's end")
                return _counted(nodes)
            node, outcome, message = _phase(record)
        except _Refused as refused:
            return _no_counts(f"record {number + 1} {refused}")
        if outcome is not None and (
            node not in nodes or _SEVERITY[outcome] > _SEVERITY[nodes[node][0]]
        ):
            nodes[node] = (outcome, message)
    return _no_counts(
        "pytest did not reach its session's end (the run exited, was killed or crashed first)"
    )


def _record(line: bytes, number: int, key: bytes) -> dict[str, Any]:
    mac, _, body = line.partition(b" ")
    if not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).hexdigest().encode()):
        raise _Refused("is not bound to this run: something else wrote to the runner's pipe")
    try:
        record = json.loads(body)
    except ValueError:
        raise _Refused("is not JSON") from None
    if type(record) is not dict or record.get("seq") != number:
        raise _Refused("is out of order")
    return record


class _Refused(Exception):
    """A record of the runner's pipe that cannot be counted."""


def _phase(record: dict[str, Any]) -> tuple[str, str | None, str]:
    """A test phase's node id, its outcome as pytest's junitxml would file it (None for a
    passed setup or teardown), and its message."""
    if set(record) != _RECORD_FIELDS or not all(
        type(record[key]) is str for key in ("node", "when", "outcome", "message")
    ):
        raise _Refused("is not a test phase")
    node, when, outcome = _text(record["node"]), record["when"], record["outcome"]
    if outcome == "skipped":
        found: str | None = SKIPPED
    elif outcome == "failed" and when == "call":
        found = SKIPPED if record["xfail"] is True else FAILED  # an xfail test that passed
    elif outcome == "failed":
        found = ERROR  # in setup, teardown or collection
    elif outcome == "passed":
        found = PASSED if when == "call" else None
    else:
        raise _Refused(f"has an unknown outcome {outcome!r}")
    return node, found, _text(record["message"])


def _counted(nodes: Mapping[str, tuple[str, str]]) -> Results:
    counts: Counter[str] = Counter(outcome for outcome, _ in nodes.values())
    tests: dict[str, str] = {}
    failures: list[dict[str, str]] = []
    for node, (outcome, message) in nodes.items():
        name = junit_name(node)
        if name not in tests or _SEVERITY[outcome] > _SEVERITY[tests[name]]:
            tests[name] = outcome
        if outcome in (FAILED, ERROR) and len(failures) < MAX_FAILURES:
            failures.append({"test": name, "outcome": outcome, "message": _first_line(message)})
    totals = {key: counts[outcome] for outcome, key in COUNT_KEYS.items()}
    return Results(totals | {"tests": tests}, failures)


def _no_counts(why: str) -> Results:
    return Results({}, [], why)


def _text(value: str) -> str:
    """JSON may carry a lone surrogate (from a file name that is not UTF-8); a claim may not."""
    return value.encode("utf-8", "replace").decode("utf-8")


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    """What changes whenever a file is written or replaced. Compared instead of the mtime with
    the run's start: file times come from a coarser clock and can lag a fresh write behind it."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _read_fresh_report(
    report: Path, before: tuple[int, int, int, int] | None, exit_code: int, within: Path
) -> bytes:
    after = _signature(report)
    if after is None or after == before:
        state = "missing" if after is None else "stale: the run did not write it"
        raise ObservationFailed(
            f"the JUnit report {report} is {state} (the command exited {exit_code})"
        )
    return _read_report(report, within)


def _read_report(path: Path, within: Path) -> bytes:
    # The command may have left something other than a file there: opening a FIFO must not
    # block, a device must not be read as a report, and a link must not make the observer read
    # a file the run could not (its processes are gone, so nothing can swap the path now).
    if not _inside(os.path.realpath(path.parent), within):
        raise ObservationFailed(f"the JUnit report {path} is outside the run directory")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
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


def junit_failures(data: bytes) -> list[dict[str, str]]:
    """Each failed or errored test (the first MAX_FAILURES) with the first line of its
    message: for the agent and people to read, never judged. Call after :func:`parse_junit`,
    which refuses a report that declares entities."""
    found = []
    for case in ET.fromstring(data).iter("testcase"):  # noqa: S314 - see parse_junit
        outcome = _outcome(case)
        element = case.find("failure" if outcome == FAILED else "error")
        if element is None or outcome not in (FAILED, ERROR):
            continue
        text = element.get("message") or element.text or ""
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        found.append({"test": name, "outcome": outcome, "message": _first_line(text)})
        if len(found) == MAX_FAILURES:
            break
    return found


def _first_line(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > MAX_FAILURE_CHARS:
        first = first[: MAX_FAILURE_CHARS - 3] + "..."
    return first


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
