"""Node and TypeScript: ``node --test``, vitest, jest and mocha, each asked for its own
machine-readable report in the observer's report folder, never through a ``package.json`` script.

The operator's ``node`` runs everything (the check's ``toolchain``: a program, or a folder holding
``bin/node``; else the observer's PATH), resolved outside the work tree. vitest, jest and mocha
come from the operator's dependency cache, installed by ``npm ci --ignore-scripts`` from the
``package.json`` and ``package-lock.json`` the run tree holds (the trusted ref's, when one is
pinned) and mounted read-only over the run's ``node_modules``: the agent's ``node_modules`` (and
its ``.bin`` links) is never run. The runner's own entry script is started with ``node``.

Report names (``require_tests``):

- ``node --test``: node's junit reporter, ``<classname>::<suite> > <test>`` (node 20 writes the
  classname ``test``: ``test::add``, ``test::calc > adds``). A test file that ran no test of its
  own and exited 0 appears as a test named by its path (``test::test/calc.test.js``), counted as
  skipped, never passed: its process may have ended before its tests ran. TypeScript test files
  under ``node --test`` are not supported (node 20 cannot load them).
- vitest: its junit reporter, ``<file>::<describe> > <test>`` (``test/calc.test.ts::calc > adds``).
- jest: its JSON report, ``<file>::<describe> > <test>``; a test file that failed to run is
  ``<file>::<file>``, an error.
- mocha: its xunit reporter, ``<suite titles>::<test>`` (``calc nested::adds``).

The code under test runs in the runner's processes, as the same user: like pytest's in-memory
patching, what those processes print or write can be forged by it (docs/threat-model.md). Every
node process of the run loads the observer's preload first (``node_preload.cjs``), which freezes
node:assert and node:test. Every runner carries the observer's canaries: ``node --test`` and
mocha in a file of their own (mocha's in its own process, the one the code under test runs in,
with the project's chai), jest and vitest in every test file (each runs in a context of its
own), added by a setup file of the observer's that also fixes their built-in matchers in place.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from ...errors import ObservationFailed, UsageError
from .base import (
    Canaries,
    Canary,
    Dependencies,
    Detected,
    Draw,
    Invocation,
    ReportSource,
    RunContext,
    Runner,
    Toolchain,
    inside,
    program_name,
)
from .results import (
    ERROR,
    FAILED,
    MAX_REPORT_BYTES,
    PASSED,
    SKIPPED,
    Results,
    junit_results,
    junit_root,
    tally,
)

NODE_MODULES = "node_modules"
LOCKFILES = ("package.json", "package-lock.json")
_QUIET = ("--no-audit", "--no-fund", "--loglevel=error", "--update-notifier=false")
NPM_CI = ("npm", "ci", "--ignore-scripts", *_QUIET)
# npm's own account of a failed command: ``npm error code E404`` and the lines after it (npm
# 6 wrote ``npm ERR!``), never the notices and log path it ends with.
NPM_ERROR_LINES = r"npm (error|ERR!) (?!A complete log of this run).*"
# pnpm and yarn 1 are installed by npm, at these versions, into the cache entry beside what
# they install: the operator's cache holds the tool that read the lockfile, no global one.
# pnpm 9 reads the lockfiles pnpm 8 to 10 write (6.x, 9.0).
_PNPM = "pnpm@9.15.9"
_YARN_CLASSIC = "yarn@1.22.22"
_TOOL_FOLDER = ".claim-tool"
# In a folder of its own, as a project there: npm's --prefix would move npm's own
# configuration (the operator's cafile, registry) with it.
_INSTALL_TOOL = (
    'set -e; mkdir {folder}; echo "{{}}" > {folder}/package.json; (cd {folder} && npm install '
    '--no-save --no-package-lock --ignore-scripts {quiet} "$1"); shift; exec node "$@"'
)
_NPX = frozenset({"npx", "pnpx"})
_NPX_OPTIONS = frozenset({"--no-install", "--no", "--yes", "-y", "--offline"})
_SCRIPT_RUNNERS = frozenset({"npm", "yarn", "pnpm", "bun"})
_SCRIPT_EXTENSIONS = r"(js|mjs|cjs|jsx|ts|mts|cts|tsx)"
# node's own patterns (-test, _test, test-), and jest-config's testMatch
# ``**/?(*.)+(spec|test).?([mc])[jt]s?(x)``: spec.js and calc.spectest.js are jest's tests too.
_TEST_FILE = re.compile(
    rf"(.+[._-](test|spec)+|test[._-].+|(test|spec)+|__tests__)\.{_SCRIPT_EXTENSIONS}|.+\.snap"
)
_PROTECTED_FOLDERS = frozenset({b"__tests__", b"__mocks__", b"__snapshots__", b"node_modules"})
_CONFIG = re.compile(
    r"package\.json|package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml"
    r"|pnpm-workspace\.yaml|\.npmrc|\.yarnrc(\.yml)?|\.pnpmfile\.cjs|\.node-version|\.nvmrc"
    r"|[tj]sconfig(\..+)?\.json|\.babelrc(\..+)?|babel\.config\..+|\.swcrc"
    r"|(vitest|vite|jest)\.(config|setup|workspace)\..+|vitest\.projects\..+|jest-preset\..+"
    r"|\.mocharc(\..+)?|\.c8rc(\..+)?|\.nycrc(\..+)?"
)
_ABSOLUTE_SCRIPT = re.compile(rf"/.+\.{_SCRIPT_EXTENSIONS}")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STACK_STARTS = ("at ", "+ expected", "\u276f", "Error [ERR_TEST_FAILURE]")
_SUMMARY_LINES = 3
# Runners colour their output for a terminal; the log is read by people, in a file.
_ENV = {"CI": "true", "NO_COLOR": "1", "FORCE_COLOR": "0"}
# Loaded by every node process of the run before any test file: it freezes the assertion and
# runner modules (node:assert, node:test), so the code under test cannot disarm them.
PRELOAD = Path(__file__).parent.parent / "node_preload.cjs"
# The report names of the tests to run a second time (a JSON list): each runner's own way to add
# them (the preload's for node --test, the canaries' for the others) reads it.
REPEAT = "CLAIM_REPEAT_TESTS"


# --- what every Node runner shares ----------------------------------------------------------


def is_node_protected(rel: bytes) -> bool:
    """Test files by the patterns node, vitest, jest and mocha collect; their configuration,
    the package files and lockfiles; and ``node_modules``, which is never the fix."""
    parts = rel.split(b"/")
    if any(part in _PROTECTED_FOLDERS for part in parts[:-1]):
        return True
    name = parts[-1].decode("utf-8", "replace")
    return _CONFIG.fullmatch(name) is not None or _TEST_FILE.fullmatch(name) is not None


def is_node_configuration(rel: bytes) -> bool:
    return _CONFIG.fullmatch(rel.rsplit(b"/", 1)[-1].decode("utf-8", "replace")) is not None


def runner_arguments(command: Sequence[str], names: Iterable[str]) -> list[str] | None:
    """The arguments after the runner's own name (``vitest``, ``npx vitest``, a path ending in
    it), or None when the command does not start that runner."""
    names = frozenset(names)
    rest = list(command)
    if rest and program_name(rest) in _NPX:
        rest = rest[1:]
        while rest and rest[0] in _NPX_OPTIONS:
            rest = rest[1:]
    if rest and program_name(rest) in names:
        return rest[1:]
    return None


def node_toolchain(chosen: str | None, workspace: Path) -> Toolchain:
    """The operator's node: the check's ``toolchain`` (a program, or a folder holding ``bin/node``
    or ``node``), else the first on the observer's PATH; resolved, outside the work tree."""
    if chosen is None:
        found = shutil.which("node")
        where = "node is not on the observer's PATH: install Node.js or set the check's toolchain"
    else:
        folder = Path(chosen)
        candidates = [folder / "bin" / "node", folder / "node"] if folder.is_dir() else [folder]
        found = next((str(c) for c in candidates if c.is_file()), None) or shutil.which(chosen)
        where = f"toolchain: no node program at {chosen}"
    if found is None:
        raise UsageError(where)
    if inside(found, workspace):
        raise UsageError(
            f"toolchain: {found} is inside the work tree, which the agent controls; "
            "choose a node outside it"
        )
    program = os.path.realpath(found)
    home = os.path.dirname(os.path.dirname(program))  # an install's root: bin/node in it
    readable = () if inside(program, Path("/usr")) else (home,)
    return Toolchain(readable, (os.path.dirname(program),), program=program,
                     probe=(program, "--version"))  # fmt: skip


def _node(context: RunContext) -> str:
    assert context.toolchain.program is not None  # node_toolchain always names it
    return context.toolchain.program


def _environment(context: RunContext) -> dict[str, str]:
    """The run's variables: plain output, and the observer's preload in NODE_OPTIONS, which
    every node process the runner starts inherits (node --test's process per file, jest's and
    vitest's workers); the operator's own options, passed on with env, come first. The tests
    to run a second time are named in ``REPEAT``, read by the preload and the canaries before
    any test file loads (the code under test may read them, and change them for the processes
    it starts: a test then reported once is not taken as passed)."""
    env = _ENV | ({REPEAT: json.dumps(list(context.repeat))} if context.repeat else {})
    if context.preload is None:
        return env
    quoted = context.preload.replace("\\", "\\\\").replace('"', '\\"')
    options = [context.env.get("NODE_OPTIONS", ""), f'--require "{quoted}"']
    return env | {"NODE_OPTIONS": " ".join(filter(None, options))}


def _refuse_options(runner: str, command: Sequence[str], options: Iterable[str]) -> None:
    for arg in command[1:]:
        for option in options:
            if arg == option or arg.startswith(option + "=") or arg.startswith(option + "."):
                raise UsageError(
                    f"remove {option} from the {runner} command: the observer asks {runner} "
                    "for its own report, in a folder only the run writes"
                )


def _no_report(runner: str, report: str | None) -> None:
    if report is not None:
        raise UsageError(f"--junit is for other commands: the observer reads {runner}'s report")


class _NodeRunner(Runner):
    """What the four share: node, the protected paths, the report folder."""

    ecosystem = "node"
    examples = (
        "package.json", "package-lock.json", "yarn.lock", ".npmrc", "tsconfig.json",
        "vitest.config.ts", "vite.config.js", "jest.config.js", ".mocharc.yml", "babel.config.js",
        "x.test.js", "x.spec.ts", "__tests__/x.js", "__mocks__/x.js", "x.test.js.snap",
        "node_modules/x/index.js",
    )  # fmt: skip
    report_name: ClassVar[str]
    preload = PRELOAD
    repeats_itself = True

    def protected(self, rel: bytes) -> bool:
        return is_node_protected(rel)

    def configuration(self, rel: bytes) -> bool:
        return is_node_configuration(rel)

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        return node_toolchain(chosen, workspace)

    def report(self, context: RunContext) -> str:
        return os.path.join(context.reports, self.report_name)


class _PackageRunner(_NodeRunner):
    """A runner installed from the lockfile: its entry script in the cache's node_modules."""

    programs: ClassVar[frozenset[str]]
    entry: ClassVar[str]  # the runner's script, relative to node_modules
    config_names: ClassVar[tuple[str, ...]]  # files whose presence marks a project of it
    detected_command: ClassVar[tuple[str, ...]]  # what claim init writes

    def recognises(self, command: Sequence[str]) -> bool:
        return runner_arguments(command, self.programs) is not None

    def dependencies(
        self, command: Sequence[str], read: Callable[[str], bytes | None]
    ) -> Dependencies | None:
        return lockfile_dependencies(read)

    def entry_script(self, context: RunContext) -> str:
        """The script the installed package names for its program in its package.json's
        ``bin`` (mocha 9's ``bin/mocha``, 10's ``bin/mocha.js``), else ``entry``."""
        folder = context.dependencies.get(NODE_MODULES)
        if folder is None:
            raise ObservationFailed(f"{self.name} is installed from the lockfile, and none was")
        package = self.entry.split("/", 1)[0]
        installed = context.installed.get(NODE_MODULES)
        script = _bin_script(Path(installed, package), self.name) if installed else None
        return os.path.join(folder, package, script) if script else os.path.join(folder, self.entry)

    def arguments(self, command: Sequence[str]) -> list[str]:
        found = runner_arguments(command, self.programs)
        assert found is not None  # only a command it recognises is given to it
        return found

    def detect(self, root: Path) -> Detected | None:
        package = _package(root)
        if package is None:
            return None
        listed = [
            name
            for key in ("devDependencies", "dependencies")
            if isinstance(package.get(key), dict)
            for name in package[key]
        ]
        config = next((n for n in self.config_names if any(root.glob(n))), None)
        if self.name not in listed and config is None:
            return None
        why = f"{self.name} in package.json" if self.name in listed else f"{config} found"
        return Detected(self.detected_command, why)


def lockfile_dependencies(read: Callable[[str], bytes | None]) -> Dependencies:
    """The install the project's lockfile asks for: ``npm ci`` from package-lock.json (or
    npm-shrinkwrap.json), pnpm's from pnpm-lock.yaml, yarn 1's from its yarn.lock; each
    refusing to change the lockfile and running no package's scripts."""
    mounts = {NODE_MODULES: NODE_MODULES}
    for lockfile in ("package-lock.json", "npm-shrinkwrap.json"):
        if read(lockfile) is not None:
            return Dependencies(("package.json", lockfile), NPM_CI, mounts,
                                error_lines=NPM_ERROR_LINES)  # fmt: skip
    if read("pnpm-lock.yaml") is not None:
        return Dependencies(("package.json", "pnpm-lock.yaml"), _PNPM_INSTALL, mounts,
                            error_lines=_PNPM_ERROR_LINES, shown=_named(_PNPM_INSTALL))  # fmt: skip
    yarn = read("yarn.lock")
    if yarn is not None and _YARN_BERRY in yarn:
        raise ObservationFailed(YARN_BERRY)
    if yarn is not None:
        return Dependencies(("package.json", "yarn.lock"), _YARN_INSTALL, mounts,
                            error_lines=_YARN_ERROR_LINES, shown=_named(_YARN_INSTALL))  # fmt: skip
    raise ObservationFailed(NO_LOCKFILE)


# Yarn 2 and later write this; their installs differ (Plug'n'Play, no node_modules by default).
_YARN_BERRY = b"\n__metadata:"
YARN_BERRY = (
    "yarn.lock is Yarn 2 or later's, which the observer does not install (it installs yarn 1's, "
    "pnpm's and npm's lockfiles): commit a package-lock.json beside it (npm install "
    "--package-lock-only writes it), which is installed first"
)
NO_LOCKFILE = (
    "no lockfile (package-lock.json, npm-shrinkwrap.json, pnpm-lock.yaml or yarn.lock) pins the "
    "packages the tests run with: commit one (npm install --package-lock-only writes "
    "package-lock.json)"
)


def _named(install: tuple[str, ...]) -> str:
    """A tool's install as a person reads it: ``pnpm@9.15.9 install ...``, not the script."""
    return " ".join((install[4], *install[6:]))


def _with_tool(tool: str, script: str, *args: str) -> tuple[str, ...]:
    """Install ``tool`` with npm into the entry's tool folder, then run its ``script``."""
    text = _INSTALL_TOOL.format(quiet=" ".join(_QUIET), folder=_TOOL_FOLDER)
    path = f"{_TOOL_FOLDER}/node_modules/{script}"
    return ("/bin/sh", "-c", text, "sh", tool, path, *args)


_PNPM_INSTALL = _with_tool(
    _PNPM,
    "pnpm/bin/pnpm.cjs",
    "install",
    "--frozen-lockfile",
    "--ignore-scripts",
    "--config.confirmModulesPurge=false",
)
_YARN_INSTALL = _with_tool(
    _YARN_CLASSIC,
    "yarn/bin/yarn.js",
    "install",
    "--frozen-lockfile",
    "--ignore-scripts",
    "--non-interactive",
    "--no-progress",
    "--cache-folder",
    f"{_TOOL_FOLDER}/yarn-cache",
)
_PNPM_ERROR_LINES = rf"{NPM_ERROR_LINES}|ERR_PNPM_\w+.*"
_YARN_ERROR_LINES = rf"{NPM_ERROR_LINES}|error .*"


def _bin_script(package: Path, program: str) -> str | None:
    """The package's script for ``program`` by its package.json (``bin``: a path, or a map of
    program names to paths), when it names one inside the package."""
    try:
        manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = manifest.get("bin") if isinstance(manifest, dict) else None
    script = found.get(program) if isinstance(found, dict) else found
    if not isinstance(script, str):
        return None
    normal = os.path.normpath(script)
    return None if normal.startswith("..") or os.path.isabs(normal) else normal


def _package(root: Path) -> dict[str, Any] | None:
    try:
        found = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


# A coverage tool in front of the runner (``c8 --100 node --test``), with its options.
_COVERAGE = re.compile(r"^(?:npx\s+)?(?:c8|nyc)(?:\s+-\S+)*\s+")
_NPM_RUN = re.compile(r"npm\s+(?:run|run-script)\s+([^\s;&|]+)\s*$")


def _runs_node_test(scripts: dict[str, Any], name: str, seen: set[str]) -> bool:
    """Whether the script runs ``node --test``, itself or through ``npm run`` of another
    (fastify's ``npm run test:unit && npm run test:typescript``, ``test:unit`` being
    ``c8 --100 node --test``); a missing or circular script runs nothing."""
    script = scripts.get(name)
    if name in seen or not isinstance(script, str):
        return False
    seen.add(name)
    for part in re.split(r"&&|\|\||;", script):
        step = _COVERAGE.sub("", part.strip(), count=1)
        called = _NPM_RUN.match(step)
        if called is not None and _runs_node_test(scripts, called.group(1), seen):
            return True
        if re.match(r"node\s+(.*\s)?--test\b", step):
            return True
    return False


# --- node --test ----------------------------------------------------------------------------


class NodeTest(_NodeRunner):
    name = "node-test"
    example_test = "test::add"
    report_name = "node-test.xml"

    def recognises(self, command: Sequence[str]) -> bool:
        return program_name(command) in ("node", "nodejs") and "--test" in _node_options(command)

    def detect(self, root: Path) -> Detected | None:
        package = _package(root)
        scripts = package.get("scripts") if package is not None else None
        if not isinstance(scripts, dict) or not _runs_node_test(scripts, "test", set()):
            return None
        return Detected(("node", "--test"), 'package.json\'s "test" script runs node --test')

    def check(self, command: Sequence[str], report: str | None) -> None:
        _no_report("node --test", report)
        _refuse_options("node --test", command, ("--test-reporter", "--test-reporter-destination"))

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        # Options go before the first test file: node reads everything after it as files.
        at = list(command).index("--test") + 1
        ours: tuple[str, ...] = (
            "--test-reporter=junit", f"--test-reporter-destination={self.report(context)}",
            "--test-reporter=spec", "--test-reporter-destination=stdout",
        )  # fmt: skip
        # A command naming its test files runs only those: the canaries' file is named too.
        # Else node's own search finds it (a *.test.mjs file in the run's folder).
        options = _node_options(command)
        names_files = len(command) > 1 + len(options)
        planted = tuple(context.canaries.files) if context.canaries and names_files else ()
        # The project's name filter runs only the tests it names: the canaries are named too
        # (node runs a test any of its patterns matches).
        if context.canaries and any(_option(arg) == _NAME_PATTERN for arg in options):
            names = (canary.name.partition("::")[2] for canary in context.canaries.tests)
            ours += (f"{_NAME_PATTERN}=^({'|'.join(map(re.escape, names))})$",)
        argv = (_node(context), *command[1:at], *ours, *command[at:], *planted)
        return Invocation(argv, _environment(context), ReportSource.FILE, self.report(context))

    def canaries(self, command: Sequence[str], files: Sequence[bytes], draw: Draw) -> Canaries:
        """One file of node:test tests asserting with node:assert: one that must pass, one
        that must fail, named and valued by words drawn for the run. node --test names a test
        by its title alone (``test::<title>``), wherever its file is. The one that must fail is
        a todo: reported failed, it leaves node's exit code 0 (a passing todo is reported
        skipped), so the exit code still tells a run whose own tests failed, whatever report
        the run was left with."""
        holds, fails = f"claim canary {draw()}", f"claim canary {draw()}"
        # --test-only runs the tests marked only, and no other: the canaries are.
        only = " only: true," if "--test-only" in _node_options(command) else ""
        text = _NODE_TEST_CANARIES.format(holds=holds, fails=fails, value=draw(), other=draw(),
                                          only=only)  # fmt: skip
        return Canaries(
            files={f"claim-canary-{draw()}.test.mjs": text.encode()},
            tests=(Canary(f"test::{holds}", passes=True), Canary(f"test::{fails}", passes=False)),
            failed_exit_code=0,
        )

    def results(self, report: bytes) -> Results:
        return tally(_node_cases(junit_root(report), []))


_NODE_TEST_CANARIES = """import {{ test }} from "node:test";
import assert from "node:assert";

test("{holds}", {{{only} }}, () => {{
  assert.strictEqual("{value}", "{value}");
  assert.deepStrictEqual({{ value: ["{value}"] }}, {{ value: ["{value}"] }});
}});

test("{fails}", {{{only} todo: true }}, () => {{
  assert.strictEqual("{value}", "{other}");
}});
"""


def _node_options(command: Sequence[str]) -> list[str]:
    """node's own options: those before the first argument that is neither one nor the value
    of the one before it (``--test-name-pattern add``)."""
    options: list[str] = []
    for arg in command[1:]:
        valued = bool(options) and options[-1] in _VALUED and "=" not in options[-1]
        if not arg.startswith("-") and not valued:
            break
        options.append(arg)
    return options


def _option(arg: str) -> str:
    return arg.partition("=")[0]


_NAME_PATTERN = "--test-name-pattern"
# node's options whose value may be the next argument (node --help).
_VALUED = frozenset({
    _NAME_PATTERN, "--test-skip-pattern", "--test-concurrency", "--test-timeout",
    "--test-shard", "--test-coverage-include", "--test-coverage-exclude", "--require", "-r",
    "--import", "--loader", "--experimental-loader", "--conditions", "-C", "--env-file",
    "--test-isolation", "--test-global-setup", "--input-type", "--stack-size",
})  # fmt: skip


def _node_cases(element: ET.Element, suites: list[str]) -> Iterator[tuple[str, str, str]]:
    for child in element:
        if child.tag == "testsuite":
            yield from _node_cases(child, [*suites, child.get("name", "")])
        elif child.tag == "testcase":
            name = child.get("name", "")
            outcome, message = _case(child)
            if not suites and _ABSOLUTE_SCRIPT.fullmatch(name):  # a file, not a test of it
                name = _relative(name)
                if outcome == PASSED:
                    # It declared no test and exited 0: it may have ended before its tests ran
                    # (process.exit in the code it loads). Never a pass.
                    outcome, message = SKIPPED, "the file ran no test"
            full = " > ".join([*suites, name])
            yield f"{child.get('classname', '')}::{full}", outcome, message


def _case(case: ET.Element) -> tuple[str, str]:
    for tag, outcome in (("failure", FAILED), ("error", ERROR), ("skipped", SKIPPED)):
        found = case.find(tag)
        if found is not None:
            return outcome, summary(found.get("message") or found.text or "")
    return PASSED, ""


def summary(message: str) -> str:
    """An assertion's message without its stack or diff, on one line: runners spread it over
    several (``Expected: 5`` / ``Received: -1``), and only the first line reaches the agent."""
    kept: list[str] = []
    for raw in _ANSI.sub("", message).splitlines():
        line = raw.strip()
        if line.startswith(_STACK_STARTS) or len(kept) == _SUMMARY_LINES:
            break
        if line:
            kept.append(line)
    return " ".join(kept)


def _relative(path: str) -> str:
    """A file the run named by its absolute path, relative to the run's work tree."""
    marker = re.search(r"/run/claim/work/|/claim-test-run-[^/]+/work/", path)
    return path[marker.end() :] if marker else path


# --- canaries in each test file (jest, vitest) ------------------------------------------------


def _each_file_canaries(
    draw: Draw, tests: str, extensions: tuple[str, str], configuration: Callable[[str], str]
) -> Canaries:
    """jest and vitest run each test file in a context of its own (its globals, its modules,
    its ``expect``): a canary in a file of its own would never meet the code under test. A
    setup file of the observer's (in the run's folder, under a drawn name) declares them in
    every test file, before the file loads the code, and a root hook of it moves them after
    the file's own tests; then it fixes the built-in matchers in place.
    ``configuration(setup)`` is the runner's configuration that adds it: the run starts with
    it (``Canaries.config``). One canary must pass, three must fail, each with its own matcher
    (toBe, toEqual, toStrictEqual)."""
    suite, holds, *fails = (f"claim canary {draw()}" for _ in range(5))
    names = dict(zip(("fails_be", "fails_equal", "fails_strict"), fails, strict=True))
    text = tests.format(suite=suite, holds=holds, value=draw(), other=draw(), fix=_FIX,
                        repeat=REPEAT, **names)  # fmt: skip
    word = draw()
    setup, config = (
        f"claim-canary-{word}.{kind}.{extension}"
        for kind, extension in zip(("setup", "config"), extensions, strict=True)
    )
    return Canaries(
        files={setup: text.encode(), config: configuration(setup).encode()},
        tests=(
            Canary(f"{suite} > {holds}", passes=True, in_each_file=True),
            *(Canary(f"{suite} > {name}", passes=False, reported=PASSED, in_each_file=True)
              for name in fails),
        ),
        failed_exit_code=0,
        config=config,
    )  # fmt: skip


# Makes a property of the framework's for good: its value can no longer be replaced.
_FIX = """function fix(owner, name) {
  // The whole descriptor: a context's global object (jest's) reads a missing value as undefined.
  const fixed = { ...Object.getOwnPropertyDescriptor(owner, name), configurable: false };
  Object.defineProperty(owner, name, "value" in fixed ? { ...fixed, writable: false } : fixed);
}
"""


def _without_config(args: Sequence[str]) -> tuple[list[str], str | None]:
    """jest's or vitest's arguments without the configuration they name (``--config`` or
    ``-c``, both runners' own), and that configuration."""
    kept: list[str] = []
    chosen = None
    rest = iter(args)
    for arg in rest:
        option, equals, value = arg.partition("=")
        if option in ("--config", "-c"):
            chosen = value if equals else next(rest, None)
        else:
            kept.append(arg)
    return kept, chosen


def _canaries_config(context: RunContext) -> tuple[str, ...]:
    """The observer's configuration, which adds the canaries to the project's, when planted."""
    if context.canaries is None or context.canaries.config is None:
        return ()
    return ("--config", os.path.join(context.cwd, context.canaries.config))


# --- vitest ---------------------------------------------------------------------------------


class Vitest(_PackageRunner):
    name = "vitest"
    example_test = "test/calc.test.ts::calc > adds"
    report_name = "vitest.xml"
    programs = frozenset({"vitest"})
    entry = "vitest/vitest.mjs"
    config_names = ("vitest.config.*", "vitest.workspace.*")
    detected_command = ("vitest", "run")

    def check(self, command: Sequence[str], report: str | None) -> None:
        _no_report("vitest", report)
        _refuse_options("vitest", command, ("--reporter", "--outputFile", "--watch", "-w"))

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        args = self.arguments(command)
        if args and args[0] in ("run", "watch", "dev"):
            args = args[1:]  # always one run, never watching
        ours = (
            "--reporter=junit", f"--outputFile.junit={self.report(context)}",
            "--reporter=default", "--no-cache",
        )  # fmt: skip
        args, _ = _without_config(args)
        argv = (_node(context), self.entry_script(context), "run", *args, *ours,
                *_canaries_config(context))  # fmt: skip
        return Invocation(argv, _environment(context), ReportSource.FILE, self.report(context))

    def canaries(self, command: Sequence[str], files: Sequence[bytes], draw: Draw) -> Canaries:
        """vitest's canaries, added to every test file (see ``_each_file_canaries``) through a
        configuration of the observer's: the project's own (the command's ``--config``, else
        the first file vitest looks for), imported, with the canaries' setup file last among
        its ``setupFiles``. The must-fail ones are ``test.fails``, which vitest reports passed
        when they fail: an honest run's exit code stays its own."""
        _, chosen = _without_config(self.arguments(command))
        found = chosen or next((n for n in _VITEST_CONFIGS if n.encode() in files), None)
        where = json.dumps(found if found is None or os.path.isabs(found) else f"./{found}")
        project = "{}" if found is None else f"require({where})"
        # vitest's own workspace file beside the configuration: its projects, inline.
        workspace = next((n for n in _VITEST_WORKSPACES if n.encode() in files), None)
        listed = "undefined" if workspace is None else f"require({json.dumps('./' + workspace)})"
        return _each_file_canaries(
            draw, _VITEST_CANARIES, ("mjs", "cjs"),
            lambda setup: _VITEST_CONFIG.format(project=project, setup=json.dumps(setup),
                                                workspace=listed),
        )  # fmt: skip

    def results(self, report: bytes) -> Results:
        return junit_results(report)


# vitest's own search, in its order (vitest's CONFIG_NAMES and CONFIG_EXTENSIONS).
_VITEST_CONFIGS = tuple(
    f"{name}{extension}"
    for name in ("vitest.config", "vite.config")
    for extension in (".ts", ".mts", ".cts", ".js", ".mjs", ".cjs")
)
# CommonJS: vite bundles an ES module configuration into a file beside the nearest
# node_modules, which the run cannot write (the observer's, read-only); one in CommonJS it
# loads from memory. The project's configuration, imported, is bundled with it.
_VITEST_CONFIG = """// The observer's configuration (completion-claim): the project's own,
// with the canaries' setup file last among its setupFiles.
const path = require("node:path");
const found = {project};
const project = found.default ?? found; // an ES module's default export, or module.exports

const setup = path.join(__dirname, {setup});
const listed = {workspace};

const withSetup = (test) => ({{
  ...test,
  setupFiles: [test.setupFiles ?? []].flat().concat(setup),
}});
// A project given inline carries the canaries too (unless it extends the root's, which does);
// one named by its path or a glob stays as it was (its files carry none: not verified).
const inProject = (each) =>
  typeof each === "object" && each !== null && !each.extends
    ? {{ ...each, test: withSetup(each.test ?? {{}}) }}
    : each;

function withCanaries(config) {{
  const test = withSetup(config.test ?? {{}});
  const workspace = listed && (listed.default ?? listed);
  if (Array.isArray(workspace) && test.workspace === undefined && test.projects === undefined) {{
    test.workspace = workspace;
  }}
  for (const key of ["projects", "workspace"]) {{
    if (Array.isArray(test[key])) test[key] = test[key].map(inProject);
  }}
  return {{ ...config, test }};
}}

module.exports = async (env) =>
  withCanaries(await (typeof project === "function" ? project(env) : project));
"""
_VITEST_WORKSPACES = tuple(
    f"vitest.workspace{extension}"
    for extension in (".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json")
)
_VITEST_CANARIES = """// The observer's canaries (completion-claim), added to every test file.
import {{ beforeAll, chai, describe, expect, test }} from "vitest";
import {{ getFn, setFn }} from "vitest/suite";

const check = (value) => (globalThis.expect ?? expect)(value);
const [value, other] = ["{value}", "{other}"];
const wrapped = (word) => ({{ value: [word] }});

describe("{suite}", () => {{
  test("{holds}", () => {{
    check(value).toBe(value);
    check(wrapped(value)).toEqual(wrapped(value));
    check(wrapped(value)).toStrictEqual(wrapped(value));
  }});
  test.fails("{fails_be}", () => check(value).toBe(other));
  test.fails("{fails_equal}", () => check(wrapped(value)).toEqual(wrapped(other)));
  test.fails("{fails_strict}", () => check(wrapped(value)).toStrictEqual(wrapped(other)));
}});

// The tests to run a second time (read before the test file loads), each added again to its
// describe block after the others, the last first, and the file collected again so that the
// reporters know them: a result that depends on how often or in what order the code was called
// fails one of its two runs.
const repeat = JSON.parse(process.env.{repeat} || "[]").map((name) => name.split(/::(.*)/s));
function again(file, suite, titles) {{
  const named = (task, [path, title]) =>
    title === [...titles, task.name].join(" > ") &&
    (file.name === path || file.filepath.endsWith(`/${{path}}`));
  const wanted = suite.tasks.filter(
    (task) =>
      task.type === "test" &&
      task.mode !== "skip" &&
      task.mode !== "todo" &&
      repeat.some((name) => named(task, name)),
  );
  for (const task of wanted.reverse()) {{
    const copy = {{ ...task, id: `${{task.id}}_again`, result: undefined, annotations: [] }};
    Object.defineProperty(copy, "context", {{ value: task.context, enumerable: false }});
    setFn(copy, getFn(task));
    suite.tasks.push(copy);
  }}
  for (const task of suite.tasks) {{
    if (task.type === "suite") again(file, task, [...titles, task.name]);
  }}
}}

// Last: after the file's own tests, whatever they did when called.
beforeAll(async (file) => {{
  // The project's .only and --testNamePattern (-t) choose among its own tests, not the
  // canaries, which vitest has filed as skipped then.
  const canaries = file.tasks.find((task) => task.name === "{suite}");
  const chosen = canaries !== undefined && canaries.mode !== "run";
  if (chosen) for (const task of [canaries, ...canaries.tasks]) task.mode = "run";
  if (repeat.length) again(file, file, []);
  if (repeat.length || chosen) await globalThis.__vitest_worker__?.rpc?.onCollected?.([file]);
  const ours = file.tasks.findIndex((task) => task.name === "{suite}");
  if (ours >= 0) file.tasks.push(...file.tasks.splice(ours, 1));
}});

// vitest's matchers are methods of chai's Assertion, and each calls its assert: those the
// framework and the project's setup files defined can no longer be replaced (a new matcher
// still can be added).
{fix}const proto = chai.Assertion.prototype;
for (const name of Object.getOwnPropertyNames(proto)) {{
  if (name === "assert" || name.startsWith("to")) fix(proto, name);
}}
"""


# --- jest -----------------------------------------------------------------------------------


class Jest(_PackageRunner):
    name = "jest"
    example_test = "test/calc.test.js::calc > adds"
    report_name = "jest.json"
    programs = frozenset({"jest"})
    entry = "jest/bin/jest.js"
    config_names = ("jest.config.*",)
    detected_command = ("jest",)

    def check(self, command: Sequence[str], report: str | None) -> None:
        _no_report("jest", report)
        _refuse_options("jest", command, ("--json", "--outputFile", "--watch", "--watchAll"))

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        if context.canaries is not None:
            _require_version(context, "jest", _JEST_CANARIES_SINCE, _JEST_TOO_OLD)
        ours = ("--ci", "--json", f"--outputFile={self.report(context)}", "--no-watchman")
        args, _ = _without_config(self.arguments(command))
        argv = (_node(context), self.entry_script(context), *args, *ours,
                *_canaries_config(context))  # fmt: skip
        return Invocation(argv, _environment(context), ReportSource.FILE, self.report(context))

    def canaries(self, command: Sequence[str], files: Sequence[bytes], draw: Draw) -> Canaries:
        """jest's canaries, added to every test file (see ``_each_file_canaries``) through a
        configuration of the observer's: the project's own, read by jest-config as jest would
        have read it (the command's ``--config``, else its search from the run's folder), with
        the canaries' setup file last among its ``setupFilesAfterEnv`` (in each project given
        inline), and a first one of the observer's before the project's, which keeps jest's own
        equality matchers for the canaries to assert with where the project's setup files
        replaced them (``expect.extend``). The must-fail ones are ``test.failing`` (jest 28.1
        and later), which jest reports passed when they fail: an honest run's exit code stays
        its own."""
        _, chosen = _without_config(self.arguments(command))
        project = "undefined" if chosen is None else json.dumps(chosen)
        first = f"claim-canary-{draw()}.first.cjs"
        canaries = _each_file_canaries(
            draw, _JEST_CANARIES, ("cjs", "cjs"),
            lambda setup: _JEST_CONFIG.format(project=project, setup=json.dumps(setup),
                                              first=json.dumps(first)),
        )  # fmt: skip
        return replace(canaries, files={first: _JEST_FIRST.encode(), **canaries.files})

    def results(self, report: bytes) -> Results:
        return tally(_jest_cases(report))


# jest-config's readInitialOptions (the observer's configuration reads the project's with it)
# came in 29.2, test.failing (the must-fail canaries) in 28.1.
_JEST_CANARIES_SINCE = (29, 2)
_JEST_TOO_OLD = (
    "the observer's canaries need jest 29.2 or later (jest-config's readInitialOptions, "
    "test.failing), without which no report of the run can be told from a forged one: "
    "upgrade jest in package.json and its lockfile"
)


def _require_version(context: RunContext, package: str, since: tuple[int, ...], why: str) -> None:
    """Stop, saying ``why``, when the package the lockfile installed is older than ``since``."""
    installed = context.installed.get(NODE_MODULES)
    if installed is None:
        return
    try:
        manifest = json.loads(Path(installed, package, "package.json").read_text("utf-8"))
    except (OSError, ValueError):
        return  # not installed there: the run says so itself
    version = manifest.get("version") if isinstance(manifest, dict) else None
    numbers = re.match(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
    if numbers is not None and tuple(map(int, numbers.groups())) < since:
        raise ObservationFailed(f"{package} {version}: {why}")


_JEST_CONFIG = """// The observer's configuration (completion-claim): the project's own, as
// jest would have read it, with the canaries' setup file last among its setupFilesAfterEnv.
"use strict";
const path = require("node:path");
const jestConfig = require.resolve("jest-config", {{ paths: [require.resolve("jest")] }});
const {{ readInitialOptions }} = require(jestConfig);

const [first, setup] = [path.join(__dirname, {first}), path.join(__dirname, {setup})];
const withCanaries = (config) => ({{
  ...config,
  setupFilesAfterEnv: [first, ...(config.setupFilesAfterEnv ?? []), setup],
}});

// A project named by its folder or configuration file, read as jest reads it; a glob stays as
// it was (its projects carry no canaries, and the run is not verified).
async function project(named, rootDir) {{
  if (typeof named === "object") return withCanaries(named);
  const where = path.resolve(rootDir, named.replaceAll("<rootDir>", rootDir));
  if (/[*?[\\]{{}}!]/.test(where)) return named;
  try {{
    return withCanaries((await readInitialOptions(where)).config);
  }} catch {{
    return named; // as jest would have it: its own error
  }}
}}

module.exports = async () => {{
  const {{ config }} = await readInitialOptions({project});
  const rootDir = config.rootDir ?? process.cwd();
  const named = config.projects;
  const projects = named && (await Promise.all(named.map((each) => project(each, rootDir))));
  return projects ? {{ ...withCanaries(config), projects }} : withCanaries(config);
}};
"""
_JEST_CANARIES = """// The observer's canaries (completion-claim), added to every test file.
"use strict";
const globals = require("@jest/globals");

const [value, other] = ["{value}", "{other}"];
const wrapped = (word) => ({{ value: [word] }});

// Each matcher as the tests have it, unless a setup file of the project's replaced it (an
// equality of its own, which need not fail the canaries' values): then jest's own, kept by the
// observer's first setup file.
const own = globalThis[Symbol.for("completion-claim.jest-matchers")] ?? {{}};
const matchers = globalThis[Symbol.for("$$jest-matchers-object")]?.matchers ?? {{}};
const replaced = new Set(Object.keys(own).filter((name) => own[name] !== matchers[name]));
const jests = {{ isNot: false, promise: "", customTesters: [], expand: false }};
const check = (received) =>
  new Proxy((typeof expect === "function" ? expect : globals.expect)(received), {{
    get: (shared, name) =>
      !replaced.has(name)
        ? shared[name]
        : (expected) => {{
            const result = own[name].call(jests, received, expected);
            if (!result.pass) throw new Error(result.message());
          }},
  }});

globals.describe("{suite}", () => {{
  globals.test("{holds}", () => {{
    check(value).toBe(value);
    check(wrapped(value)).toEqual(wrapped(value));
    check(wrapped(value)).toStrictEqual(wrapped(value));
  }});
  globals.test.failing("{fails_be}", () => check(value).toBe(other));
  globals.test.failing("{fails_equal}", () => check(wrapped(value)).toEqual(wrapped(other)));
  globals.test.failing("{fails_strict}", () => check(wrapped(value)).toStrictEqual(wrapped(other)));
}});

// The tests to run a second time (read before the test file loads), each added again to its
// describe block after the others, the last first: a result that depends on how often or in
// what order the code was called fails one of its two runs.
const repeat = JSON.parse(process.env.{repeat} || "[]").map((name) => name.split(/::(.*)/s));
const testPath = (typeof expect === "function" ? expect : globals.expect).getState().testPath;
const named = (titles, [file, title]) =>
  title === titles.join(" > ") && (testPath === file || String(testPath).endsWith(`/${{file}}`));
function again(block, titles) {{
  const wanted = block.children.filter(
    (child) => child.type === "test" && repeat.some((name) => named([...titles, child.name], name)),
  );
  for (const test of wanted.reverse()) {{
    // Not yet run: a copy with lists of its own (errors, retry reasons) is a test as declared.
    const copy = Object.fromEntries(
      Object.entries(test).map(([key, value]) => [key, Array.isArray(value) ? [] : value]),
    );
    block.children.push(copy);
  }}
  for (const child of block.children) {{
    if (child.type === "describeBlock") again(child, [...titles, child.name]);
  }}
}}

// Last: after the file's own tests, whatever they did when called (jest-circus keeps its
// state on the global object, under a symbol of its own).
globals.beforeAll(() => {{
  const key = Object.getOwnPropertySymbols(globalThis).find(
    (symbol) => symbol.description === "JEST_STATE_SYMBOL",
  );
  if (key !== undefined && repeat.length) again(globalThis[key].rootDescribeBlock, []);
  const siblings = key === undefined ? [] : globalThis[key].rootDescribeBlock.children;
  const ours = siblings.findIndex((child) => child.name === "{suite}");
  if (ours < 0) return;
  siblings.push(...siblings.splice(ours, 1));
  // The project's test.only and --testNamePattern choose among its own tests, not the canaries.
  const state = globalThis[key];
  if (state.hasFocusedTests) for (const canary of siblings.at(-1).children) canary.mode = "only";
  const pattern = state.testNamePattern;
  const either = (found) => new RegExp(`(?:${{found.source}})|^{suite} `, found.flags);
  if (pattern) state.testNamePattern = either(pattern);
}});

// The matchers jest and the project's setup files defined can no longer be replaced (a new
// one still can be added), nor the matchers' object or the global expect.
{fix}const state = globalThis[Symbol.for("$$jest-matchers-object")];
if (state !== undefined) {{
  for (const name of Object.keys(state.matchers)) fix(state.matchers, name);
  fix(state, "matchers");
}}
if (Object.hasOwn(globalThis, "expect")) fix(globalThis, "expect");
"""


_JEST_FIRST = """// The observer's first setup file (completion-claim): jest's own equality
// matchers, before any setup file of the project's can replace them, for the canaries.
"use strict";
const matchers = globalThis[Symbol.for("$$jest-matchers-object")]?.matchers ?? {};
const own = {};
for (const name of ["toBe", "toEqual", "toStrictEqual"]) {
  if (typeof matchers[name] === "function") own[name] = matchers[name];
}
Object.defineProperty(globalThis, Symbol.for("completion-claim.jest-matchers"), {
  value: Object.freeze(own),
});
"""
_JEST_OUTCOMES = {
    "passed": PASSED,
    "failed": FAILED,
    "pending": SKIPPED,
    "skipped": SKIPPED,
    "todo": SKIPPED,
    "disabled": SKIPPED,
    "focused": PASSED,
}


def _jest_cases(report: bytes) -> Iterator[tuple[str, str, str]]:
    if len(report) > MAX_REPORT_BYTES:
        raise ObservationFailed(f"jest's report is over {MAX_REPORT_BYTES} bytes")
    try:
        document = json.loads(report)
    except ValueError:
        raise ObservationFailed(
            "jest's report is not JSON: the run ended before writing it"
        ) from None
    files = document.get("testResults") if isinstance(document, dict) else None
    if not isinstance(files, list):
        raise ObservationFailed("jest's report has no testResults list")
    for file in files:
        name = _relative(_text(file, "name"))
        tests = file.get("assertionResults") if isinstance(file, dict) else None
        if not isinstance(tests, list):
            raise ObservationFailed(f"jest's report: {name} has no assertionResults list")
        if not tests:  # the file did not run: a syntax error, a failing hook, no test at all
            yield f"{name}::{name}", ERROR, summary(_text(file, "message")) or "it ran no test"
        for test in tests:
            titles = test.get("ancestorTitles") if isinstance(test, dict) else None
            if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
                raise ObservationFailed(f"jest's report: a test of {name} has no ancestorTitles")
            status = _text(test, "status")
            if status not in _JEST_OUTCOMES:
                raise ObservationFailed(f"jest's report: unknown test status {status!r}")
            messages = test.get("failureMessages")
            message = messages[0] if isinstance(messages, list) and messages else ""
            full = " > ".join([*titles, _text(test, "title")])
            yield f"{name}::{full}", _JEST_OUTCOMES[status], summary(str(message))


def _text(mapping: object, key: str) -> str:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, str) else ""


# --- mocha ----------------------------------------------------------------------------------


# What makes a test script more than one command and its words (the shell's own syntax).
_SHELL_SYNTAX = re.compile(r"[;&|<>$`()\\]")


class Mocha(_PackageRunner):
    name = "mocha"
    example_test = "test/calc.test.js::calc > adds"
    report_name = "mocha.xml"
    programs = frozenset({"mocha", "_mocha"})
    entry = "mocha/bin/mocha.js"
    config_names = (".mocharc.*",)
    detected_command = ("mocha",)

    def detect(self, root: Path) -> Detected | None:
        """mocha, with what the project's test script gives it (``mocha tests/*.js``): without
        a spec, mocha looks in ``./test`` alone, and a project whose tests lie elsewhere would
        run none. A script that does more than run mocha, or gives it an option the observer
        refuses, leaves the bare command."""
        detected = super().detect(root)
        package = _package(root)
        scripts = package.get("scripts") if package is not None else None
        script = scripts.get("test") if isinstance(scripts, dict) else None
        if detected is None or not isinstance(script, str) or _SHELL_SYNTAX.search(script):
            return detected
        try:
            words = shlex.split(script)
        except ValueError:  # an unclosed quote
            return detected
        if words[:1] == ["npx"]:
            words = words[1:]
        if words[:1] != ["mocha"] or len(words) == 1:
            return detected
        try:
            self.check(words, None)
        except UsageError:
            return detected
        return Detected(tuple(words), f'package.json\'s "test" script runs {" ".join(words)}')

    def check(self, command: Sequence[str], report: str | None) -> None:
        _no_report("mocha", report)
        options = ("--reporter", "-R", "--reporter-option", "--reporter-options", "-O", "--watch")
        _refuse_options("mocha", command, (*options, "-w"))

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        ours = ("--reporter", "xunit", "--reporter-option", f"output={self.report(context)}")
        # --file adds the canaries to whatever the command and the configuration name (a spec
        # on the command line would replace mocha's default one); it runs them in mocha's own
        # process, the one the test files and the code under test share, never in parallel,
        # and never bailing: bail would end the run at a must-fail one.
        planted: list[str] = []
        if context.canaries is not None:
            planted += ("--no-parallel", "--no-bail")
            for rel in context.canaries.files:
                planted += ("--file", rel)
        argv = (_node(context), self.entry_script(context), *self.arguments(command), *ours,
                *planted)  # fmt: skip
        return Invocation(argv, _environment(context), ReportSource.FILE, self.report(context))

    def canaries(self, command: Sequence[str], files: Sequence[bytes], draw: Draw) -> Canaries:
        """A suite of mocha tests in a file named by a drawn word, and titled by that name: mocha
        10 and later name a test by its file's path, mocha 9 by its suite titles alone, and a
        canary is named by its file's name either way (the run's folder is not known here). One
        must pass, and three must fail, asserting with node:assert, with chai's assert-style
        equal and with its expect-style equal (every matcher of chai's calls the Assertion's
        assert). chai is the project's own, imported from the run's folder when its lockfile
        installed one (else node:assert stands in): a package nothing can freeze for good (its
        plugins overwrite its methods), which the code under test shares with the tests. The
        suite runs after the project's tests (moved last by a root hook), so code that disarms
        an assertion when first called is caught too."""
        holds, *fails = (f"claim canary {draw()}" for _ in range(4))
        names = dict(zip(("fails", "fails_assert", "fails_expect"), fails, strict=True))
        name = f"claim-canary-{draw()}.cjs"
        text = _MOCHA_CANARIES.format(suite=name, holds=holds, value=draw(), other=draw(),
                                      repeat=REPEAT, **names)  # fmt: skip
        return Canaries(
            files={name: text.encode()},
            tests=(Canary(f"{name}::{name} > {holds}", passes=True),
                   *(Canary(f"{name}::{name} > {fail}", passes=False) for fail in fails)),
            failed_exit_code=len(fails),  # mocha's: its number of failures
        )  # fmt: skip

    def results(self, report: bytes) -> Results:
        return tally(_mocha_cases(junit_root(report)))


_MOCHA_CANARIES = """// The observer's canaries (completion-claim).
const assert = require("node:assert");
const {{ before, describe, it }} = require("mocha");

// Imported when the canaries run, after every test file loaded: a test file's require of an
// ES module chai while this import loads it could fail.
const project = () =>
  import("chai").then(
    (found) => (found.default && found.default.assert ? found.default : found),
    () => null,
  );
const [value, other] = ["{value}", "{other}"];

const suite = describe("{suite}", () => {{
  it("{holds}", async () => {{
    const chai = await project();
    assert.strictEqual(value, value);
    chai?.assert.equal(value, value);
    chai?.expect(value).to.equal(value);
  }});
  it("{fails}", () => {{
    assert.strictEqual(value, other);
  }});
  it("{fails_assert}", async () => {{
    const chai = await project();
    (chai ? chai.assert.equal : assert.strictEqual)(value, other);
  }});
  it("{fails_expect}", async () => {{
    const chai = await project();
    if (chai) chai.expect(value).to.equal(other);
    else assert.strictEqual(value, other);
  }});
}});

// The tests to run a second time (read before any test file loads), each added again to its
// suite after the others, the last first: a result that depends on how often or in what order
// the code was called fails one of its two runs.
const repeat = JSON.parse(process.env.{repeat} || "[]").map((name) => name.split(/::(.*)/s));
const named = (test, [file, title]) => {{
  const suites = test.parent.fullTitle();
  if (file === suites && title === test.title) return true; // mocha 9's report names no file
  const full = [suites, test.title].filter(Boolean).join(" > ");
  const path = typeof test.file === "string" ? test.file : "";
  return title === full && (path === file || path.endsWith(`/${{file}}`));
}};
function again(each) {{
  const wanted = each.tests.filter((test) => repeat.some((name) => named(test, name)));
  for (const test of wanted.reverse()) each.addTest(test.clone());
  each.suites.forEach(again);
}}

// The command's --grep (--fgrep, --invert) chooses among the project's tests: mocha's runner
// runs the canaries' suite whatever it says.
const {{ Runner }} = require("mocha");
const runSuite = Runner.prototype.runSuite;
Runner.prototype.runSuite = function (each, done) {{
  if (each !== suite || !(this._grep instanceof RegExp)) return runSuite.call(this, each, done);
  const [grep, invert] = [this._grep, this._invert];
  [this._grep, this._invert] = [/(?:)/, false];
  return runSuite.call(this, each, (...args) => {{
    [this._grep, this._invert] = [grep, invert];
    done(...args);
  }});
}};

// The project's exclusive tests (it.only, describe.only) choose among its own tests: once a
// test file asks for them (mocha loads every file before it runs one), the canaries' suite is
// exclusive too.
suite.parent.on("post-require", () => {{
  const root = suite.parent;
  const asked = root.suites.some((each) => each !== suite && each.hasOnly()) || root.hasOnly();
  if (asked && !(root._onlySuites ?? []).includes(suite)) root.appendOnlySuite(suite);
}});

// Last: after the project's tests, whatever they did to the assertions.
before(() => {{
  again(suite.parent);
  const siblings = suite.parent.suites;
  siblings.push(...siblings.splice(siblings.indexOf(suite), 1));
}});
"""
_CANARY_FILE = re.compile(r"(.*/)?(claim-canary-[0-9a-f]+\.cjs)")


def _mocha_cases(root: ET.Element) -> Iterator[tuple[str, str, str]]:
    """mocha's xunit: ``classname`` holds the suite titles, ``file`` the test file."""
    for case in root.iter("testcase"):
        outcome, message = _case(case)
        file, suites = _relative(case.get("file", "")), case.get("classname", "")
        canary = _CANARY_FILE.fullmatch(file or suites)  # mocha 9 names no file: its title
        file = canary.group(2) if canary else file
        title = " > ".join(filter(None, [suites, case.get("name", "")]))
        yield f"{file}::{title}" if file else f"{suites}::{case.get('name', '')}", outcome, message


# --- package.json scripts -------------------------------------------------------------------


class PackageScript(_NodeRunner):
    """``npm test``, ``yarn test``, ``pnpm run x``: refused, never run. A script is the agent's
    to edit (``"test": "exit 0"``), and what it runs is the runner's own command to write."""

    name = "package-script"

    def recognises(self, command: Sequence[str]) -> bool:
        return program_name(command) in _SCRIPT_RUNNERS

    def detect(self, root: Path) -> Detected | None:
        return None

    def check(self, command: Sequence[str], report: str | None) -> None:
        raise UsageError(
            f"{' '.join(command[:3])}: a package.json script is the agent's to edit, and is never "
            "run; write the test runner's own command (node --test, vitest run, jest, mocha)"
        )

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        raise UsageError(f"{command[0]}: package.json scripts are never run")
