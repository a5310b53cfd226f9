"""Go: ``go test ./...``, read from ``go test -json``'s event stream on standard output.

The go command the operator chose (the check's ``toolchain``: a GOROOT, its ``bin``, or a ``go``
program; else ``go`` on the observer's PATH) runs as itself, its GOROOT mounted read-only, with
``GOTOOLCHAIN=local`` (a ``toolchain`` line of go.mod never makes it fetch or start another Go),
``GOFLAGS=-mod=mod`` (a ``vendor`` folder of the work tree is never read), ``GOWORK=off`` (nor a
``go.work``), ``GOENV=off``, ``GOPROXY=off`` and a build cache of the run's own. Modules come from
the operator's cache, filled by ``go mod download`` from the go.mod and go.sum the trusted ref
holds, mounted read-only as GOMODCACHE; the same install builds common standard packages into a
build cache (from a module of the observer's, no code of the work tree), which each run copies as
its own to start from.

Report names: a test is ``<package import path>::<test name>``, a subtest with its slash path
(``example.com/calc::TestAdd``, ``example.com/calc::TestTable/zero``). A package that failed
without a failed test counts as one errored test: ``<package>::[build failed]`` when it did not
build, ``<package>::[package failed]`` otherwise (a panic outside a test, TestMain, a timeout).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ..sandbox import SYSTEM_PATH
from .base import (
    PROXY_SETTINGS,
    Canaries,
    Canary,
    Dependencies,
    Detected,
    Draw,
    FileVersion,
    Invocation,
    ReportSource,
    RunContext,
    Runner,
    Toolchain,
    chosen_program,
    file_version,
    inside,
    observer_settings,
    program_name,
)
from .binaries import EVERY_BINARY, in_every_binary
from .results import (
    ERROR,
    FAILED,
    MAX_REPORT_BYTES,
    PASSED,
    SEVERITY,
    SKIPPED,
    Results,
    no_counts,
    tally,
)

MODULE_CACHE = "gomodcache"  # the cache entry's folder, mounted as GOMODCACHE
BUILD_SEED = "gocache"  # the cache entry's build cache of the standard library, copied per run
# Built once per cache entry, with no code of the work tree: the standard packages a test binary
# and most code need, compiled as the runs compile them, so a run starts from them.
_SEED_PACKAGES = (
    "bufio", "bytes", "context", "encoding/json", "errors", "fmt", "io", "math", "os",
    "path/filepath", "reflect", "regexp", "sort", "strconv", "strings", "sync", "time",
    "unicode",
)  # fmt: skip
_SEED_SCRIPT = (
    "set -e\n"
    f"mkdir -p {MODULE_CACHE}\n"
    "go mod download\n"
    "mkdir seed\n"
    "cd seed\n"
    "cat > go.mod <<'END'\nmodule claim.invalid/seed\n\ngo 1.16\nEND\n"
    "cat > seed.go <<'END'\npackage seed\n\nimport (\n"
    + "".join(f'\t_ "{package}"\n' for package in _SEED_PACKAGES)
    + ")\nEND\n"
    "cat > seed_test.go <<'END'\npackage seed\n\nimport \"testing\"\n\n"
    "func TestSeed(t *testing.T) {}\nEND\n"
    "go test . > /dev/null\n"
    "cd ..\n"
    "rm -r seed\n"
)
# The run's build cache (GOCACHE) starts as a copy of the seed: writable, and the run's own.
_FROM_SEED = 'cp -R "$0" "$GOCACHE" && exec "$@"'
BUILD_FAILED = "[build failed]"
PACKAGE_FAILED = "[package failed]"
_QUERY_TIMEOUT_S = 30.0
_CONFIG_NAMES = frozenset({b"go.mod", b"go.sum", b"go.work", b"go.work.sum"})
# Flags that would take the tests' inputs from files the observer does not restore (another
# go.mod, a file overlay, the vendor folder) or run no tests at all.
_REFUSED = {
    "-modfile": "reads another go.mod than the protected one",
    "-overlay": "replaces source files by others",
    "-mod": "chooses where modules come from: the observer sets -mod=mod",
    "-c": "compiles the tests without running them",
    "-o": "compiles the tests without running them",
    "-exec": "runs the test binaries through another program, whose output would be the report",
    "-toolexec": "runs the compiler through another program",
}
# Go before 1.24 prints a package that did not build as a line of text among the events.
_TEXT_FAILURE = re.compile(rb"FAIL\t(\S+) \[(build|setup) failed\]")
_FRAMING = re.compile(r"\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP):)\s")
# The observer's canaries, one file in each package folder that has tests, so that each test
# binary runs them: its package clause is its folder's, which only a file of the folder says, so
# a step in the sandbox (before any test binary starts) copies it from a test file beside it.
# Each test binary starts through a step that first removes the file from its folder (built by
# then): the code under test finds no source telling which canary must fail, nor do the names.
_CANARY_FILE = "claim_canary_{word}_test.go"
_CANARY_TEST = re.compile(r"TestClaimCanary[0-9a-f]+")
_CANARY_PACKAGE = "package claim_canary_package"  # replaced by the folder's package clause
_CANARY_SOURCE = '{package}\n\nimport {testing} "testing"\n'
_CANARY_TEST_SOURCE = """
func {name}(t *{testing}.T) {{
\tgot, want := "{value}", "{expected}"
\tif got != want {{
\t\tt.{report}("got %q, want %q", got, want)
\t}}
}}
"""
_UNSOURCED = '-exec=/bin/sh -c \'rm -f {file}; exec "$0" "$@"\''  # quoted as go splits it
# Arguments: the canary files, "--", then the command. sed reads the first package clause of a
# test file beside each canary (any test file of a folder builds into the same test binary).
_PLANT = (
    'while [ "$1" != -- ]; do\n'
    '  canary=$1; shift; dir=${canary%/*}; [ "$dir" = "$canary" ] && dir=.; name=\n'
    '  for sibling in "$dir"/*_test.go; do\n'
    "    case ${sibling##*/} in claim_canary_*) continue ;; esac\n"
    "    name=$(sed -n '/^package[[:space:]]/{"
    's/^package[[:space:]]*\\([A-Za-z_][A-Za-z0-9_]*\\).*/\\1/p;q;}\' "$sibling")\n'
    '    [ -n "$name" ] && break\n'
    "  done\n"
    f'  sed -i "s/^{_CANARY_PACKAGE}\\$/package $name/" "$canary"\n'
    "done\n"
    'shift; exec "$@"\n'
)
# The tests to repeat (the start's failing ones) run again after the whole run, by a go test of
# their names alone, uncached, twice in one test binary, shuffled (another order than the first
# run's): code that answers by how often or in what order it was called fails one of the runs.
# A line of the observer's, on go's own standard output (never a test's: test2json wraps every
# line of theirs), parts the two streams and names the tests repeated. Arguments: those names,
# the second go test as one quoted line, then the first.
_REPEAT_MARK = b"claim: again, in another order:"
_TWICE = (
    'names=$1; again=$2; shift 2; "$@"; first=$?\n'
    f'printf "%s %s\\n" "{_REPEAT_MARK.decode()}" "$names"\n'
    'eval "$again"; second=$?\n'
    '[ "$first" -ne 0 ] && exit "$first"; exit "$second"\n'
)
# go test's flags the second run sets itself: which tests, how often, in what order, and the
# canaries' step (their file is gone by then).
_REPEAT_OWN = ("-run", "-count", "-shuffle", "-failfast", "-exec")
# Folders go test never builds a package from.
_IGNORED_FOLDER = re.compile(rb"(?:^|/)(?:testdata|vendor|[._][^/]*)/")
_OPERATOR_MODULE_SETTINGS = (
    "GOPROXY",
    "GOSUMDB",
    "GONOSUMDB",
    "GOPRIVATE",
    "GONOPROXY",
    "GOINSECURE",
)


def is_go_test(command: Sequence[str]) -> bool:
    return program_name(command) == "go" and len(command) > 1 and command[1] == "test"


class GoTest(Runner):
    name = "go"
    repeats_itself = True
    example_test = "example.com/calc::TestAdd"
    ecosystem = "go"
    examples = ("calc_test.go", "testdata/golden.txt", "go.mod", "go.sum", "go.work")

    def recognises(self, command: Sequence[str]) -> bool:
        return is_go_test(command)

    def detect(self, root: Path) -> Detected | None:
        if not (root / "go.mod").is_file():
            return None
        go = shutil.which("go")
        found = None if go is not None else _installed_go()
        return Detected(("go", "test", "./..."), "go.mod: a Go module", found)

    def protected(self, rel: bytes) -> bool:
        """Test files, test data, and the module files that choose what code the tests build
        with."""
        parts = rel.split(b"/")
        return (
            parts[-1].endswith(b"_test.go")
            or parts[-1] in _CONFIG_NAMES
            or b"testdata" in parts[:-1]
        )

    def configuration(self, rel: bytes) -> bool:
        return rel.rsplit(b"/", 1)[-1] in _CONFIG_NAMES

    def check(self, command: Sequence[str], report: str | None) -> None:
        if report is not None:
            raise UsageError(
                "junit is for other commands: go test reports to the observer through -json"
            )
        for arg in _test_flags(command):
            flag = arg.split("=", 1)[0].replace("--", "-", 1)
            if flag in _REFUSED:
                raise UsageError(f"remove {flag} from the go test command: it {_REFUSED[flag]}")

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        go = _chosen_go(command, chosen, workspace)
        goroot = _goroot(go)
        if inside(goroot, workspace):
            raise UsageError(
                f"toolchain: {goroot} is inside the workspace, which the agent controls"
            )
        program = os.path.join(goroot, "bin", "go")
        env = {
            "GOROOT": goroot,
            "GOTOOLCHAIN": "local",
            "GOFLAGS": "-mod=mod",
            "GOWORK": "off",
            "GOENV": "off",
            "GOTELEMETRY": "off",
        }
        readable = () if inside(goroot, "/usr") else (goroot,)
        return Toolchain(
            readable, (os.path.join(goroot, "bin"),), env, program, (program, "version")
        )

    def dependencies(
        self, command: Sequence[str], read: Callable[[str], bytes | None]
    ) -> Dependencies:
        """The modules go.mod and go.sum pin (the folder made first: a module with no
        requirement downloads nothing), and a build cache seeded with the standard library."""
        settings = observer_settings((*_OPERATOR_MODULE_SETTINGS, *PROXY_SETTINGS))
        return Dependencies(
            lockfiles=("go.mod", "go.sum"),
            optional=("go.sum",),
            install=("/bin/sh", "-c", _SEED_SCRIPT),
            mounts={MODULE_CACHE: None, BUILD_SEED: None},
            install_env=settings
            | {
                "GOMODCACHE": f"{{entry}}/{MODULE_CACHE}",
                "GOCACHE": f"{{entry}}/{BUILD_SEED}",
                # Left writable, as a cache entry is: the observer seals it itself.
                "GOFLAGS": "-mod=mod -modcacherw",
            },
        )

    def canaries(
        self, command: Sequence[str], files: Sequence[bytes], draw: Draw
    ) -> Canaries | None:
        """A must-pass and a must-fail test in each package folder that has tests (whichever
        of them the command tests, each test binary runs them)."""
        folders = dict.fromkeys(
            rel.rpartition(b"/")[0] for rel in files
            if rel.endswith(b"_test.go") and not _IGNORED_FOLDER.search(rel)
        )  # fmt: skip
        if not folders:
            return None
        word, value, other = draw(), draw(), draw()
        testing = f"claimtesting{word}"
        tests = (Canary(f"TestClaimCanary{draw()}", passes=True),
                 Canary(f"TestClaimCanary{draw()}", passes=False))  # fmt: skip
        source = _CANARY_SOURCE.format(package=_CANARY_PACKAGE, testing=testing) + "".join(
            _CANARY_TEST_SOURCE.format(
                name=test.name, testing=testing, value=value,
                expected=value if test.passes else other,
                report="Errorf" if test.passes else "Fatalf",
            )
            for test in sorted(tests, key=lambda test: test.name)  # an order of no meaning
        )  # fmt: skip
        name = _CANARY_FILE.format(word=word)
        return Canaries(
            files={f"{os.fsdecode(folder + b'/') if folder else ''}{name}": source.encode()
                   for folder in folders},
            tests=tuple(Canary(f"{EVERY_BINARY}::{test.name}", test.passes) for test in tests),
            failed_exit_code=1,
        )  # fmt: skip

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        assert context.toolchain.program is not None  # a Go toolchain is its go program
        rest = [arg for arg in command[2:] if arg not in ("-json", "--json")]
        if context.canaries is not None:
            rest = _running_canaries(rest, [c.name.rpartition("::")[2]
                                            for c in context.canaries.tests])  # fmt: skip
        # The run's own scratch folder and build cache, never shared between runs: in its home
        # (the sandbox's /tmp, or the observer's folder for a run without one, never the
        # machine's /tmp, where another user could leave a build cache of their making).
        home = context.env["HOME"]
        env = {"GOPROXY": "off", "GOSUMDB": "off", "GOPATH": f"{home}/go",
               "GOCACHE": f"{home}/go-build"}  # fmt: skip
        if MODULE_CACHE in context.dependencies:
            env["GOMODCACHE"] = context.dependencies[MODULE_CACHE]
        argv: tuple[str, ...] = (context.toolchain.program, "test", "-json", *rest)
        if context.canaries is not None:
            file = os.path.basename(next(iter(context.canaries.files)))
            argv = (*argv[:3], _UNSOURCED.format(file=file), *argv[3:])
        names = _repeated_names(context.repeat)
        if names:
            again = (context.toolchain.program, "test", "-json", "-count=2", "-shuffle=on",
                     f"-run=^(?:{'|'.join(map(re.escape, names))})$",
                     *_without_own(command[2:]))  # fmt: skip
            argv = ("/bin/sh", "-c", _TWICE, "sh", " ".join(names), shlex.join(again), *argv)
        if BUILD_SEED in context.dependencies:
            argv = ("/bin/sh", "-c", _FROM_SEED, context.dependencies[BUILD_SEED], *argv)
        if context.canaries is not None:
            argv = ("/bin/sh", "-c", _PLANT, "sh", *context.canaries.files, "--", *argv)
        return Invocation(argv, env, ReportSource.STDOUT)

    def results(self, report: bytes) -> Results:
        return read_events(report)


def _running_canaries(args: Sequence[str], canaries: Sequence[str]) -> list[str]:
    """go test's arguments with the canaries run whatever they choose: a ``-run`` pattern also
    matches them (at its first level, before any ``/``), and ``-failfast`` is dropped, which
    would stop a package's tests at the must-fail canary."""
    ours = f"^(?:{'|'.join(canaries)})$|"
    kept: list[str] = []
    flags = True
    for arg in args:
        flag, equals, value = arg.partition("=")
        flag = flag.replace("--", "-", 1)
        if arg in ("-args", "--args"):
            flags = False
        elif flags and flag == "-failfast":
            continue
        elif flags and flag == "-run" and equals:
            kept.append(f"-run={ours}{value}")
            continue
        elif kept and flags and kept[-1].replace("--", "-", 1) == "-run":
            kept.append(ours + arg)
            continue
        kept.append(arg)
    return kept


def _repeated_names(repeat: Sequence[str]) -> list[str]:
    """The top-level tests (a subtest runs within its parent) of the tests to repeat; none for a
    package's own failure, which names no test."""
    tops = (name.partition("::")[2].partition("/")[0] for name in repeat)
    return sorted({top for top in tops if re.fullmatch(r"[A-Za-z_]\w*", top)})


def _without_own(args: Sequence[str]) -> list[str]:
    """go test's arguments without the flags the second run sets itself (their values too)."""
    kept: list[str] = []
    skip_value, flags = False, True
    for arg in args:
        if skip_value:
            skip_value = False
            continue
        if arg in ("-args", "--args"):
            flags = False
        flag, equals, _ = arg.replace("--", "-", 1).partition("=")
        if flags and flag in _REPEAT_OWN:
            skip_value = not equals and flag not in ("-failfast",)
            continue
        kept.append(arg)
    return kept


def _test_flags(command: Sequence[str]) -> Iterator[str]:
    """The go command's own flags (those before ``-args``)."""
    for arg in command[2:]:
        if arg in ("-args", "--args"):
            return
        if arg.startswith("-"):
            yield arg


def _chosen_go(command: Sequence[str], chosen: str | None, workspace: Path) -> str:
    return os.path.realpath(
        chosen_program("go", command, chosen, workspace, "set toolchain = the Go folder")
    )


_goroots: dict[tuple[str, FileVersion], str] = {}


def _goroot(go: str) -> str:
    """The real GOROOT of the ``go`` program, asked of it (Debian's /usr/bin/go is a link into
    /usr/lib/go-X), outside any module and with no configuration file read. A gate asks twice
    per stop (loading its configuration, then running the check): the answer of a program that
    is still the same file, unchanged, is the process's from the first time."""
    key = (os.path.realpath(go), file_version(go))
    found = _goroots.get(key)
    if found is None:
        found = _goroots[key] = _ask_goroot(go)
    return found


def _ask_goroot(go: str) -> str:
    env = {"PATH": SYSTEM_PATH, "GOTOOLCHAIN": "local", "GOENV": "off", "HOME": "/nonexistent"}
    try:
        done = subprocess.run(
            [go, "env", "GOROOT"], cwd="/", env=env, capture_output=True,
            timeout=_QUERY_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"toolchain: cannot run {go}: {exc}") from None
    goroot = done.stdout.decode(errors="replace").strip()
    if done.returncode != 0 or not os.path.isfile(os.path.join(goroot, "bin", "go")):
        raise UsageError(f"toolchain: {go} is not a working go command")
    return os.path.realpath(goroot)


def _installed_go() -> str | None:
    """For ``claim init`` when go is not on the PATH: the usual places of an installed Go."""
    home = Path.home()
    places = [Path("/usr/local/go"), *sorted((home / "sdk").glob("go*"), reverse=True), home / "go"]
    return next((str(p) for p in places if (p / "bin" / "go").is_file()), None)


# --- the event stream ---------------------------------------------------------------------------


@dataclass
class _Package:
    """What the stream said of one package: its tests' outcomes and output, how it ended."""

    ended: str | None = None
    build_failed: bool = False
    said_pass: bool = False  # the test binary's own last word, before go test's "ok"
    started: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)  # "" is the package's own


def read_events(report: bytes) -> Results:
    """Per-test results when every package the stream names reached its end (and, when the
    run repeated tests, every package of the second run too, which ran each of them again);
    otherwise no counts, and why."""
    if len(report) > MAX_REPORT_BYTES:
        return no_counts(f"its report was over {MAX_REPORT_BYTES} bytes")
    first, mark, again = _parted(report)
    packages = _packages(first)
    if isinstance(packages, Results):
        return packages
    if mark is None:
        return tally(_outcomes(packages))
    repeated = _packages(again)
    if isinstance(repeated, Results):
        return no_counts(f"the second run of the repeated tests: {repeated.none_because}")
    first_run = list(_outcomes(packages))
    ran = {name for name, _, _ in first_run}
    # The second run carries no canaries: it can make a test's outcome worse, never add one.
    worse = [outcome for outcome in _outcomes(repeated, canaried=False) if outcome[0] in ran]
    return tally([*first_run, *worse, *_not_repeated(packages, repeated, mark)])


def _parted(report: bytes) -> tuple[bytes, set[str] | None, bytes]:
    """The first run's stream, the tests repeated (None when none was), the second run's."""
    found = re.search(rb"(?m)^" + re.escape(_REPEAT_MARK) + rb"([^\n]*)\n?", report)
    if found is None:
        return report, None, b""
    names = set(found.group(1).decode(errors="replace").split())
    return report[: found.start()], names, report[found.end() :]


def _not_repeated(
    packages: Mapping[str, _Package], repeated: Mapping[str, _Package], names: set[str]
) -> Iterator[tuple[str, str, str]]:
    """An error for each repeated test the first run ran and the second did not."""
    for name, package in packages.items():
        again = repeated.get(name)
        for test in package.started:
            if test in names and (again is None or test not in again.outcomes):
                yield f"{name}::{test}", ERROR, "it did not run a second time"


def _packages(report: bytes) -> dict[str, _Package] | Results:
    """What one go test -json stream said of each package, or no counts and why."""
    packages: dict[str, _Package] = {}
    build_output: dict[str, list[str]] = {}
    for number, line in enumerate(report.splitlines(), 1):
        text_failure = _TEXT_FAILURE.fullmatch(line.rstrip(b"\r"))
        if text_failure is not None:
            package = packages.setdefault(
                text_failure.group(1).decode(errors="replace"), _Package()
            )
            package.ended, package.build_failed = FAILED, True
            continue
        if not line.startswith(b"{"):
            continue  # what go itself prints besides the events (never the tests' output)
        try:
            event = json.loads(line)
        except ValueError:
            return no_counts(f"line {number} of go test -json is not an event")
        why = _take(event, packages, build_output)
        if why:
            return no_counts(f"line {number} of go test -json {why}")
    if not packages:
        return no_counts("go test -json reported no package")
    unfinished = [name for name, package in packages.items() if package.ended is None]
    if unfinished:
        return no_counts(
            f"go test did not finish package {unfinished[0]} (the run was killed, or a test "
            "ended the process)"
        )
    # A test binary that exits 0 before its tests ran (os.Exit in an init function) leaves go
    # test saying "ok" for a package whose tests never said PASS.
    unsaid = [name for name, package in packages.items()
              if package.ended == PASSED and not package.said_pass]  # fmt: skip
    if unsaid:
        return no_counts(
            f"package {unsaid[0]} passed without its test binary saying PASS (it exited before "
            "its tests ran)"
        )
    return packages


def _take(
    event: Any, packages: dict[str, _Package], build_output: dict[str, list[str]]
) -> str | None:
    """Record one event; why it cannot be counted, if it cannot."""
    if type(event) is not dict or type(event.get("Action")) is not str:
        return "is not an event"
    action = event["Action"]
    if action in ("build-output", "build-fail"):  # Go 1.24 and later: a build's own events
        path = event.get("ImportPath")
        if type(path) is not str:
            return "names no package built"
        output = event.get("Output")
        if type(output) is str and not output.startswith("# "):  # the package's name
            build_output.setdefault(path, []).append(output)
        return None
    name, test, output = event.get("Package"), event.get("Test"), event.get("Output")
    if type(name) is not str or type(test) not in (str, type(None)):
        return "names no package"
    package = packages.setdefault(name, _Package())
    if package.ended is not None:
        return f"follows the end of package {name}"
    test = test or ""
    if action == "output" and type(output) is str:
        package.output.setdefault(test, []).append(output)
        package.said_pass |= output == "PASS\n"
    elif action == "run" and test:
        package.started.append(test)
    elif action in ("pass", "fail", "skip"):
        outcome = {"pass": PASSED, "fail": FAILED, "skip": SKIPPED}[action]
        if test:  # a test run more than once (-count) keeps its worst outcome
            if SEVERITY[outcome] >= SEVERITY[package.outcomes.get(test, PASSED)]:
                package.outcomes[test] = outcome
        else:
            package.ended = outcome
            package.build_failed = type(event.get("FailedBuild")) is str
            if package.build_failed:
                package.output[""] = build_output.get(event["FailedBuild"], [])
    return None


def _outcomes(
    packages: Mapping[str, _Package], *, canaried: bool = True
) -> Iterator[tuple[str, str, str]]:
    """Each test's outcome; the canaries' from every test binary of a run that had them."""
    canaries: list[tuple[str, dict[str, str]]] = []  # per test binary that ran
    for name, package in packages.items():
        failing = False
        # A test binary that failed before any test started (it did not build, or panicked in
        # an init function) ran none of its tests, the canaries neither: its failure is its own.
        if canaried and (package.ended == PASSED or (package.ended == FAILED and package.started)):
            canaries.append((name, {}))
        for test in dict.fromkeys([*package.started, *package.outcomes]):
            outcome = package.outcomes.get(test, ERROR)  # started, and never ended
            failing |= outcome in (FAILED, ERROR)
            if _CANARY_TEST.fullmatch(test) and canaries and canaries[-1][0] == name:
                canaries[-1][1][test] = outcome
                continue
            message = _message(package, test, outcome)
            yield f"{name}::{test}", outcome, message
        if package.ended == FAILED and not failing:
            own = _message(package, "", ERROR)
            if package.build_failed:
                yield f"{name}::{BUILD_FAILED}", ERROR, own or "the package did not build"
            else:
                yield f"{name}::{PACKAGE_FAILED}", ERROR, own or "the package failed"
    yield from in_every_binary(canaries)


def _message(package: _Package, test: str, outcome: str) -> str:
    """What the test printed, less go test's own framing lines; for a parent test with nothing
    of its own, its first failed subtest's."""
    if outcome not in (FAILED, ERROR):
        return ""
    lines = [
        line.strip()
        for line in package.output.get(test, [])
        if line.strip() and not _FRAMING.match(line)
        and not line.startswith(("FAIL\t", "ok  \t")) and line.strip() not in ("FAIL", "PASS")
    ]  # fmt: skip
    if lines:
        return "\n".join(lines)
    if test:
        children = [
            t for t, o in package.outcomes.items() if t.startswith(test + "/") and o == FAILED
        ]
        if children:
            return _message(package, children[0], FAILED) or f"{children[0]} failed"
        if outcome == ERROR:
            return "it started and never ended"
    return ""
