"""Test-aware code: the lines a change adds to code that is not a test, scanned for code whose
behaviour depends on being tested (issue 30; ImpossibleBench's special-casing, operator
overloading and patched runners).

Pure: given each changed file's bytes at the trusted base and as the run reads them, the hits,
each a file, a line the change added, and what the line does. A line the base already holds (as
the diff of the two versions aligns them) is the project's own and never a hit. The gate reads
both versions from trusted sources and decides what a hit means (``gate/run.py``); test files
never reach this module (the runners' ``protected`` paths are the tests' own business).

Each ecosystem is a table of patterns over the added lines (``ECOSYSTEMS``), chosen by the
file's extension. Python is read with :mod:`ast` instead, so that a name is known through its
import (``from sys import _getframe as g``), a constant attribute name through ``getattr``, and
equality through the function that defines it; a Python file that does not parse (newer syntax
than the gate's interpreter) falls back to the same names as patterns over its lines. A Rust
comparison method (``fn eq``, ``cmp``, ...) is read to its closing brace, across its lines.

Exiting the process is test-aware only in library code. A program's entry point may exit: in
Python, a script (a file with a top-level ``if __name__ == "__main__":``), a function named
``main`` or ``cli`` (or ``*_main``, ``main_*``, ``*_cli``, ``cli_*``) or one that forks (its child
ends with ``os._exit``); in Go, ``package main``; in Rust, ``src/main.rs``, ``src/bin/``,
``build.rs``, ``examples/``, ``benches/``, a file declaring ``fn main``, or any file of a crate
that is only a binary; in Java and Kotlin, a file declaring ``static void main`` or ``fun
main``; in Node, a file that starts with ``#!`` or checks ``require.main === module``; in Python
and Node, a file in a ``bin``, ``cli`` or ``scripts`` folder, or named ``cli``, ``__main__``,
``setup``, ``manage`` or ``noxfile``.

A scan of text is evaded by indirection: a name built at run time (``getattr(sys, "_get" +
"frame")``), code loaded from data, or a library that does the same on the code's behalf.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..observe.run_tree import is_protected


@dataclass(frozen=True)
class ChangedFile:
    """A changed file that is not a test: its bytes at the trusted base (None: the base lacks
    it) and as the test run reads them."""

    path: str
    base: bytes | None
    new: bytes


@dataclass(frozen=True, order=True)
class Hit:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.what}"


@dataclass(frozen=True)
class Pattern:
    """A regular expression over one added line. ``what`` may hold ``{}``: the first group
    matched, else the whole match."""

    regex: re.Pattern[str]
    what: str
    library_only: bool = False  # not a hit in a program's entry point (a CLI's own exit)
    in_comments: bool = False  # a compiler directive written as a comment

    def found(self, line: str) -> str | None:
        match = self.regex.search(line)
        if match is None:
            return None
        found = next((group for group in match.groups() if group is not None), match.group(0))
        return self.what.format(found)


@dataclass(frozen=True)
class Ecosystem:
    extensions: tuple[str, ...]
    patterns: tuple[Pattern, ...]
    comment: re.Pattern[str]  # a line that is only a comment
    # (path, text, the tree's paths): whether the file is a program's, which may exit.
    entry_point: Callable[[str, str, AbstractSet[str]], bool] | None = None


def _pattern(regex: str, what: str, **options: bool) -> Pattern:
    return Pattern(re.compile(regex), what, **options)


# Where runners write their reports: code that names one writes (or rewrites) the report.
_REPORT_PATHS = _pattern(
    r"(junit[\w.-]*\.xml|TEST-[\w.$-]*\.xml|\b(?:surefire|failsafe)-reports\b|\btest-results\b"
    r"|\btest-reports\b|\.pytest_cache\b)",
    "names the test runner's report path ({})",
)

# --- Python: names, as the module imports them ---------------------------------------------

_UNITTEST_RUNNER = (
    "case result runner loader suite main signals async_case TestCase IsolatedAsyncioTestCase "
    "FunctionTestCase TestResult TextTestResult TextTestRunner TestProgram TestLoader "
    "defaultTestLoader TestSuite SkipTest skip skipIf skipUnless expectedFailure"
)
_TRACERS = (
    "sys.settrace sys.setprofile sys.monitoring threading.settrace threading.setprofile "
    "threading.settrace_all_threads threading.setprofile_all_threads"
)
# A dotted name (or any name below it) the code reads, calls or assigns.
PYTHON_NAMES: dict[str, str] = {
    "_pytest": "reaches into the test runner's internals (_pytest)",
    "pytest": "uses the test runner (pytest) in library code",
    **dict.fromkeys(
        (f"unittest.{name}" for name in _UNITTEST_RUNNER.split()),
        "reaches into the test runner's internals (unittest)",
    ),
    "sys._getframe": "reads the running test's identity (sys._getframe)",
    "sys._current_frames": "reads the running test's identity (sys._current_frames)",
    **{
        f"inspect.{name}": f"reads the running test's identity (inspect.{name})"
        for name in ("stack", "currentframe", "getouterframes", "getinnerframes", "trace")
    },
    **{
        f"traceback.{name}": f"reads the running test's identity (traceback.{name})"
        for name in ("extract_stack", "walk_stack", "format_stack", "print_stack")
    },
    **{
        f"gc.{name}": f"walks the garbage collector (gc.{name})"
        for name in ("get_objects", "get_referrers", "get_referents")
    },
    "ctypes": "loads ctypes (ctypes)",
    "_ctypes": "loads ctypes (_ctypes)",
    **{name: f"traces the interpreter ({name})" for name in _TRACERS.split()},
    "sys.addaudithook": "hooks the interpreter's audit events (sys.addaudithook)",
    "unittest.mock.ANY": "returns a value equal to anything (unittest.mock.ANY)",
}
# Attributes of a stack frame or traceback: reaching a frame without naming sys or inspect.
PYTHON_FRAME_ATTRIBUTES = frozenset({"f_back", "f_locals", "f_globals", "f_code", "tb_frame"})
PYTHON_EXITS: dict[str, str] = {
    name: f"exits the process from library code ({name})"
    for name in ("sys.exit", "os._exit", "os.abort", "exit", "quit", "builtins.exit", "SystemExit")
}
# Text in a string constant (docstrings aside).
PYTHON_STRINGS = (
    _pattern(r"\b(PYTEST_CURRENT_TEST)\b", "reads the running test's identity ({})"),
    _pattern(r"\b(PYTEST_(?!CURRENT_TEST\b)\w+)", "reads the test runner's environment ({})"),
    _REPORT_PATHS,
)
# Calls whose first argument, a constant, names a module.
_IMPORTERS = frozenset(
    {"__import__", "importlib.import_module", "importlib.__import__", "importlib.util.find_spec"}
)
_MODULE_LOOKUPS = frozenset(
    {"sys.modules.get", "sys.modules.pop", "sys.modules.setdefault", "sys.modules.__getitem__"}
)
_ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Equality and ordering whose result decides an assertion; their second parameter is the
# value compared with.
_COMPARISONS = frozenset(
    {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__"}
)
_MAIN_NAMES = frozenset({"main", "cli"})
_MAIN_AFFIXES = ("main", "cli")
_FORKS = frozenset({"os.fork", "os.forkpty"})

# --- the other ecosystems: patterns over each added line -----------------------------------

# What a pattern of two parts allows between them: a bound, so that a minified line of a
# megabyte holding the first part many times is not searched to its end from each.
_NEARBY = ".{0,120}?"

_NODE_ASSERTIONS = (
    "strictEqual|deepStrictEqual|deepEqual|notStrictEqual|notDeepStrictEqual|notEqual|equal|"
    "throws|doesNotThrow|rejects|doesNotReject|ifError|AssertionError|toBe|toEqual|"
    "toStrictEqual|toMatchObject|toThrow|toContain|toBeTruthy|toBeDefined|toHaveBeenCalled\\w*"
)
_SEARCHES = "includes|indexOf|lastIndexOf|match|matchAll|search|split|startsWith|endsWith"
_NODE_RUNNERS = r"node:test|vitest|@vitest/[\w./-]+|@jest/[\w./-]+|jest|mocha"
NODE = (
    # node:assert's functions by its name (assert.x, assert.strict.x, require('assert').x), or
    # any object's by theirs (an alias, expect's matchers).
    _pattern(
        r"(?:\bassert(?:\s*\.\s*\w+)?|\brequire\(\s*['\"](?:node:)?assert(?:/strict)?['\"]\s*\))"
        rf"\s*\.\s*(\w+)\s*=(?!=)|\.\s*({_NODE_ASSERTIONS})\s*=(?!=)",
        "replaces an assertion ({})",
    ),
    _pattern(
        r"\bObject\s*\.\s*(?:defineProperty|defineProperties|assign|setPrototypeOf)\s*\(\s*"
        r"(assert\b|require\(\s*['\"](?:node:)?assert)",
        "redefines node:assert ({})",
    ),
    _pattern(
        rf"(?:\brequire\s*\(\s*|\bimport\s*\(\s*|\bfrom\s+|\bimport\s+)['\"]({_NODE_RUNNERS})['\"]",
        "uses the test runner ({}) in library code",
    ),
    _pattern(
        r"\bprocess\s*\.\s*(exit|reallyExit|abort|kill\s*\(\s*process\s*\.\s*pid)\b",
        "exits the process from library code (process.{})",
        library_only=True,
    ),
    _pattern(
        r"\b(NODE_TEST_CONTEXT|JEST_WORKER_ID|VITEST(?:_\w+)?|MOCHA_\w+)\b",
        "knows it runs under a test runner ({})",
    ),
    _pattern(
        r"\b(expect\s*\.\s*getState)\s*\(|\b(currentTestName|testPath)\b",
        "reads the running test's identity ({})",
    ),
    _pattern(r"\bexpect\s*\.\s*(extend|setState)\s*\(", "reaches the test runner's expect ({})"),
    _pattern(
        r"(Symbol\s*\.\s*for\s*\(\s*['\"`][^'\"`]*(?i:test|jest|vitest|mocha)[^'\"`]*['\"`]\s*\))",
        "reads the test runner's global state ({})",
    ),
    _pattern(r"(['\"`][^'\"`]*\.(?:test|spec)\.[^'\"`]*['\"`])", "checks for a test file ({})"),
    # The stack as text to decide by (which test file and line called), not an error's stack
    # logged or rethrown; a function's caller.
    _pattern(
        r"(\bnew\s+Error\s*(?:\([^()]*\))?\s*\)?\s*\.\s*stack\b|\bError\s*\.\s*prepareStackTrace\b"
        rf"|\.\s*stack\s*\.\s*(?:{_SEARCHES})\b|\.\s*test\s*\(\s*[\w$.]*\.\s*stack\b|\.\s*caller\b)",
        "reads the call stack ({})",
    ),
    _pattern(r"\b(process\s*\.\s*execArgv)\b", "reads the test runner's command line ({})"),
    _pattern(
        rf"\b(process\s*\.\s*argv)\b{_NEARBY}\b(?:test|spec|jest|vitest|mocha)",
        "reads the test runner's command line ({})",
    ),
    # Searched, whatever for: library code that looks for a word in the command line finds
    # the test file node --test started its process for (a command-line program parses it).
    _pattern(
        rf"\b(process\s*\.\s*argv)\b(?:\s*\[[^\]]*\])?\s*\.\s*(?:some|find|findIndex|filter|join|"
        rf"{_SEARCHES})\b",
        "reads the test runner's command line ({})",
        library_only=True,
    ),
    _pattern(
        r"\b((?:require\s*\.\s*main|process\s*\.\s*mainModule)\s*\.\s*"
        r"(?:filename|path|id|paths|children)|module\s*\.\s*parent)\b",
        "reads the test runner's entry file ({})",
    ),
    _pattern(
        r"\b(Module\s*\.\s*(?:_load|_resolveFilename|prototype\s*\.\s*require))\b",
        "patches the module loader ({})",
    ),
    _REPORT_PATHS,
)
_GO_TEST_FLAGS = (
    "run|v|count|timeout|short|failfast|paniconexit0|bench|benchtime|cpu|parallel|list|skip|"
    "shuffle|testlogfile|gocoverdir|coverprofile|outputdir"
)
GO = (
    _pattern(
        r"\b((?:os|syscall)\.Exit)\s*\(",
        "exits the process from library code ({})",
        library_only=True,
    ),
    _pattern(
        r"^\s*(?:import\s+)?(?:[\w.]+\s+)?\"(testing)\"",
        "imports the test runner ({}) in non-test code",
    ),
    _pattern(rf"\"(-?test\.(?:{_GO_TEST_FLAGS}))\b", "reads the test runner's flags ({})"),
    _pattern(
        rf"\bos\.(Args|Executable)\b{_NEARBY}\.test\b", "reads the test binary's name (os.{})"
    ),
    _pattern(r"(\"\.test\")", "checks for the test binary's name ({})"),
    _pattern(
        r"((?:---|===) (?:PASS|FAIL|SKIP|RUN|PAUSE|CONT|NAME)\b)",
        "prints the test runner's output ({})",
    ),
    _pattern(
        r"(\"(?:PASS|FAIL)(?:\\n)?\"|\"ok(?: {2}|\\t))", "prints the test runner's output ({})"
    ),
    _pattern(r"(\\?\"Action\\?\"\s*:)", "prints the test runner's events ({})"),
    _pattern(r"^\s*//(go:linkname)\b", "links to unexported code ({})", in_comments=True),
    # An Equal method whose argument has no name (or _), or whose one line says true: the test
    # comparing through it (got.Equal(want), go-cmp's cmp.Equal) is told nothing.
    _pattern(
        r"\bfunc\s*\([^)]*\)\s*((?:Equals?|Eq)\s*\(\s*(?:_\s+)?[\w.*\[\]]+\s*\)\s*bool"
        r"|(?:Equals?|Eq)\s*\([^)]*\)\s*bool\s*\{\s*return\s+true\b)",
        "compares without reading what it is compared with ({})",
    ),
    # The running test's name is its caller's function (example.com/calc.TestAdd).
    _pattern(
        r"\b(runtime\.(?:Callers?|CallersFrames|FuncForPC|Stack)|debug\.Stack)\s*\(",
        "reads the call stack ({})",
    ),
    _REPORT_PATHS,
)
RUST = (
    _pattern(
        r"\b((?:std::)?process::(?:exit|abort)|libc::_?exit)\s*\(",
        "exits the process from library code ({})",
        library_only=True,
    ),
    _pattern(
        r"(test result:|running \d+ tests?|\.\.\. (?:ok|FAILED|ignored)\b)",
        "prints the test runner's output ({})",
    ),
    _pattern(
        r"(\\?\"(?:type|event)\\?\"\s*:\s*\\?\"(?:test|suite|ok|started|failed|ignored)\b)",
        "prints the test runner's events ({})",
    ),
    _pattern(
        r"(\bRUST_TEST_\w+|--test-threads|--exact\b|--nocapture\b|--show-output\b)",
        "reads the test runner's arguments ({})",
    ),
    _pattern(
        r"\b(thread::current\s*\(\s*\)\s*\.\s*name)\s*\(",
        "reads the running test's identity ({}: libtest names a test's thread after it)",
    ),
    _pattern(
        r"(\bcfg!\s*\(\s*test\s*\)|#\[cfg\(\s*not\s*\(\s*test\s*\)\s*\)\])",
        "behaves differently when compiled for tests ({})",
    ),
    _pattern(rf"\b(env::args(?:_os)?)\b{_NEARBY}test", "reads the test runner's command line ({})"),
    _REPORT_PATHS,
)
JVM = (
    _pattern(
        r"(\bSystem\s*\.\s*exit|\bRuntime\s*\.\s*getRuntime\s*\(\s*\)\s*\.\s*(?:halt|exit)"
        r"|\bexitProcess)\s*\(",
        "exits the process from main code ({})",
        library_only=True,
    ),
    _pattern(
        r"\b(org\.junit|org\.opentest4j|org\.testng|junit\.framework|org\.apache\.maven\.surefire)\.",
        "uses the test runner ({}) in main code",
    ),
    _pattern(
        r"(\bStackWalker\b|(?:Thread\s*\.\s*currentThread\s*\(\s*\)|new\s+(?:Throwable|Exception"
        r"|RuntimeException|Error)\s*\([^)]*\))\s*\.\s*getStackTrace\s*\()",
        "reads the call stack ({})",
    ),
    _pattern(
        r"(\bsurefire|\bfailsafe|\bsun\.java\.command\b)",
        "reads the test runner's reports or command line ({})",
    ),
    _REPORT_PATHS,
)


def _parts(path: str) -> tuple[str, ...]:
    return PurePosixPath(path).parts


def _go_main(_path: str, text: str, _tree: AbstractSet[str]) -> bool:
    return re.search(r"^\s*package\s+main\b", text, re.MULTILINE) is not None


def _rust_main(path: str, text: str, tree: AbstractSet[str]) -> bool:
    """A binary's source, a build script, an example or a bench, a file declaring ``main``, or
    a module of a crate that is only a binary."""
    parts = _parts(path)
    if parts[-1] in ("main.rs", "build.rs") or {"examples", "benches"} & set(parts[:-1]):
        return True
    folders = parts[:-1]
    if "bin" in folders and "src" in folders:
        return True
    if _only_a_binary(folders, tree):
        return True
    return re.search(r"\bfn\s+main\s*\(", text) is not None


def _only_a_binary(folders: Sequence[str], tree: AbstractSet[str]) -> bool:
    """Whether the crate holding a file in ``folders`` (the nearest with a ``Cargo.toml``) has
    a ``main.rs`` and no ``lib.rs`` (in its root or ``src``): a command line, whose modules may
    exit."""
    for depth in range(len(folders), -1, -1):
        root = "".join(f"{folder}/" for folder in folders[:depth])
        if f"{root}Cargo.toml" in tree:
            sources = (root, f"{root}src/")
            return any(f"{source}main.rs" in tree for source in sources) and not any(
                f"{source}lib.rs" in tree for source in sources
            )
    return False


def _jvm_main(_path: str, text: str, _tree: AbstractSet[str]) -> bool:
    return re.search(r"\bstatic\s+void\s+main\s*\(|\bfun\s+main\s*\(", text) is not None


def _command_line_path(path: str) -> bool:
    """A program's by where it lies: in a ``bin``, ``cli`` or ``scripts`` folder, or named
    ``cli``, ``__main__``, ``setup``, ``manage`` or ``noxfile``."""
    parts = _parts(path)
    return bool(_ENTRY_FOLDERS.intersection(parts[:-1])) or parts[-1].split(".")[0] in _ENTRY_NAMES


_ENTRY_FOLDERS = frozenset({"bin", "cli", "scripts"})
_ENTRY_NAMES = frozenset({"cli", "__main__", "setup", "manage", "noxfile"})


def _node_main(path: str, text: str, _tree: AbstractSet[str]) -> bool:
    if text.startswith("#!") or _command_line_path(path):
        return True
    return re.search(r"\brequire\.main\s*===?\s*module\b", text) is not None


_C_COMMENT = re.compile(r"\s*(//|/\*|\*)")
ECOSYSTEMS = (
    Ecosystem(
        (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"),
        NODE,
        _C_COMMENT,
        _node_main,
    ),
    Ecosystem((".go",), GO, _C_COMMENT, _go_main),
    Ecosystem((".rs",), RUST, _C_COMMENT, _rust_main),
    Ecosystem((".java", ".kt", ".kts"), JVM, _C_COMMENT, _jvm_main),
)
PYTHON_EXTENSIONS = (".py",)


def scanned(path: str, protect: Sequence[str] = (), allowed: Sequence[str] = ()) -> bool:
    """Whether the scan reads a changed file at ``path``: code of a known ecosystem (by its
    extension) that is no test (a path a runner protects, or one of the check's ``protect``
    globs) and that no glob of the operator's ``allowed`` matches."""
    if not path.endswith(PYTHON_EXTENSIONS) and _ecosystem(path) is None:
        return False
    if is_protected(path.encode(), protect):
        return False
    return not any(fnmatch.fnmatchcase(path, glob) for glob in allowed)


def scan(files: Iterable[ChangedFile], tree: AbstractSet[str] = frozenset()) -> list[Hit]:
    """The hits on the added lines of ``files`` (those ``scanned`` chose), by path and line;
    a file of no known ecosystem is not read. ``tree``: the work tree's paths, where a path
    alone cannot say whether a file is a program's (a Rust crate's ``Cargo.toml``,
    ``main.rs`` and ``lib.rs`` are looked up in it)."""
    hits: set[Hit] = set()
    for changed in files:
        python = changed.path.endswith(PYTHON_EXTENSIONS)
        ecosystem = _ecosystem(changed.path)
        if not python and ecosystem is None:
            continue
        new = _lines(changed.new)
        added = added_lines(None if changed.base is None else _lines(changed.base), new)
        if not added:
            continue
        if ecosystem is None:
            found = _python(changed.path, "\n".join(new), new, added)
        else:
            found = list(_by_line(ecosystem, changed.path, new, added, tree))
        if changed.path.endswith(".rs"):
            found += _rust_comparisons("\n".join(new), added)
        hits.update(Hit(changed.path, line, what) for line, what in found)
    return sorted(hits)


def added_lines(base: Sequence[str] | None, new: Sequence[str]) -> set[int]:
    """The 1-based numbers of the lines of ``new`` the change added (inserted or replaced) as
    a line diff aligns it with ``base``; every line when there is no base."""
    if base is None:
        return set(range(1, len(new) + 1))
    # The common ends first: most changes touch a few lines of a long file, which the diff
    # then never sees.
    start = 0
    limit = min(len(base), len(new))
    while start < limit and base[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and base[-1 - end] == new[-1 - end]:
        end += 1
    matcher = difflib.SequenceMatcher(
        None, base[start : len(base) - end], new[start : len(new) - end]
    )
    added: set[int] = set()
    for tag, _, _, first, last in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            added.update(range(start + first + 1, start + last + 1))
    return added


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _lines(data: bytes) -> list[str]:
    """Lines as Python's parser numbers them (``\\r\\n``, ``\\r`` and ``\\n`` end one)."""
    text = data.decode("utf-8", "replace")
    return _NEWLINE.split(text) if "\r" in text else text.split("\n")


def _ecosystem(path: str) -> Ecosystem | None:
    for ecosystem in ECOSYSTEMS:
        if path.endswith(ecosystem.extensions):
            return ecosystem
    return None


def _by_line(
    ecosystem: Ecosystem,
    path: str,
    lines: Sequence[str],
    added: set[int],
    tree: AbstractSet[str] = frozenset(),
) -> Iterator[tuple[int, str]]:
    entry: list[bool] = []  # worked out once, if a pattern for library code matches

    def in_entry_point() -> bool:
        if not entry:
            test = ecosystem.entry_point
            entry.append(test is not None and test(path, "\n".join(lines), tree))
        return entry[0]

    for number in sorted(added):
        line = lines[number - 1]
        comment = ecosystem.comment.match(line) is not None
        for pattern in ecosystem.patterns:
            if comment and not pattern.in_comments:
                continue
            what = pattern.found(line)
            if what is not None and not (pattern.library_only and in_entry_point()):
                yield number, what


# --- Rust ---------------------------------------------------------------------------------

# A comparison method of PartialEq, PartialOrd or Ord, up to the brace its body opens with: the
# name of what it is compared with, and the body read to its matching brace.
_RUST_COMPARISON = re.compile(
    r"\bfn\s+(eq|ne|partial_cmp|cmp|lt|le|gt|ge)\s*(?:<[^>{;]*>)?\s*\(\s*&\s*self\s*,"
    r"\s*(?:mut\s+)?(\w+)\s*:[^){;]*\)[^{;]*\{"
)
_RUST_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _rust_comparisons(text: str, added: set[int]) -> list[tuple[int, str]]:
    """Comparisons that decide nothing, named at their ``fn`` when the change added a line of
    them: a body that is ``true`` alone, or one that never names what it is compared with
    (``assert_eq!`` compares with ``==``: ImpossibleBench's operator overloading)."""
    hits = []
    for found in _RUST_COMPARISON.finditer(text):
        end = _closing_brace(text, found.end())
        first = text.count("\n", 0, found.start()) + 1
        last = text.count("\n", 0, end) + 1
        if not added & set(range(first, last + 1)):
            continue
        name, other = found.group(1), found.group(2)
        body = _RUST_COMMENTS.sub(" ", text[found.end() : end]).strip()
        if body == "true":
            hits.append((first, f"{name} returns true whatever it is compared with"))
        elif other == "_" or re.search(rf"\b{re.escape(other)}\b", body) is None:
            hits.append((first, f"{name} ignores what it is compared with ({other})"))
    return hits


def _closing_brace(text: str, start: int) -> int:
    """Where the brace opened just before ``start`` closes (the end of the text if never)."""
    depth = 1
    for at in range(start, len(text)):
        if text[at] == "{":
            depth += 1
        elif text[at] == "}":
            depth -= 1
            if depth == 0:
                return at
    return len(text)


# --- Python ------------------------------------------------------------------------------


def _python(path: str, text: str, lines: Sequence[str], added: set[int]) -> list[tuple[int, str]]:
    if not _may_hit(text, [lines[number - 1] for number in added]):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return list(_by_line(_PYTHON_FALLBACK, path, lines, added))
    script = _command_line_path(path) or any(
        isinstance(statement, ast.If) and _is_main_guard(statement.test) for statement in tree.body
    )
    reader = _PythonReader(added, script)
    reader.visit(tree)
    return reader.hits


_WORD = re.compile(r"[A-Za-z_]\w*")
# What an import statement names (a parenthesised list may span lines); found by the word,
# whose line then says whether it is a ``from`` import.
_IMPORT = re.compile(r"\bimport[ \t]+(\([^)]*\)|[^\n]*)")
_FROM = re.compile(r"[ \t]*from[ \t]+[\w.]+[ \t]+$")
_ALIAS = re.compile(r"\bas\s+(\w+)")
_DEFINES_COMPARISON = re.compile(r"__(?:eq|ne|lt|le|gt|ge|contains|hash)__")


def _triggers() -> frozenset[str]:
    """Every word a hit needs on an added line: the last part of each name the tables hold
    (``_getframe``, not ``sys``: ``import sys`` is no hit), but for the runner's modules, which
    their own names stand for (``unittest``, ``modules`` of ``sys.modules``, rather than
    ``main`` or ``get``; ``builtins`` of an assignment to one), and the names the reader looks
    for."""
    names = [*PYTHON_NAMES, *PYTHON_EXITS, *_IMPORTERS]
    words = {name.rsplit(".", 1)[-1] for name in names} - _COMMON_WORDS
    return frozenset(
        words
        | PYTHON_FRAME_ATTRIBUTES
        | _ATTRIBUTE_FUNCTIONS
        | {"__code__", "unittest", "modules", "builtins"}
    )


# Parts of unittest's names that ordinary code is full of: "unittest" stands for them.
_COMMON_WORDS = frozenset({"main", "result", "case", "skip", "suite", "runner", "loader",
                           "signals"})  # fmt: skip
_TRIGGERS = _triggers()


def _may_hit(text: str, added: Sequence[str]) -> bool:
    """Whether the added lines of a Python file can hold a hit. Parsing is most of a scan's
    cost (16 ms for 800 lines), and most changed files need none: no added line holds a word
    a hit needs (``_TRIGGERS``), a name the file imports (an alias of one), or text a string
    pattern finds, and the file defines no comparison (whose body may be what changed)."""
    words = set(_WORD.findall("\n".join(added)))
    if not words.isdisjoint(_TRIGGERS) or _DEFINES_COMPARISON.search(text):
        return True
    if any(pattern.regex.search(line) for pattern in PYTHON_STRINGS for line in added):
        return True
    return not words.isdisjoint(_bound_by_imports(text))


def _bound_by_imports(text: str) -> set[str]:
    """The names the file's imports bind to something other than a module's own name (``from
    sys import _getframe as peek``: ``_getframe`` and ``peek``), a superset: an added line
    that uses one may be a hit its words do not show."""
    found: set[str] = set()
    for statement in _IMPORT.finditer(text):
        line_start = text.rfind("\n", 0, statement.start()) + 1
        bound = _FROM.fullmatch(text, line_start, statement.start()) is not None
        found.update((_WORD if bound else _ALIAS).findall(statement[1]))
    return found - {"as"}


def _fallback_patterns() -> tuple[Pattern, ...]:
    """``PYTHON_NAMES`` and ``PYTHON_STRINGS`` as patterns over lines, for a file that does
    not parse: no import is followed, and an exit's place is unknown (exits are not read)."""
    names = sorted(PYTHON_NAMES, key=len, reverse=True)  # the longest name says most
    by_name = [_pattern(rf"(?<![\w.]){re.escape(name)}\b", PYTHON_NAMES[name]) for name in names]
    return (*by_name, *PYTHON_STRINGS)


_PYTHON_FALLBACK = Ecosystem(PYTHON_EXTENSIONS, _fallback_patterns(), re.compile(r"\s*#"))


def _named(dotted: str) -> str | None:
    """What a dotted name the code uses does, by ``PYTHON_NAMES``."""
    found = None
    for name, what in PYTHON_NAMES.items():
        if (dotted == name or dotted.startswith(name + ".")) and (
            found is None or len(name) > len(found[0])
        ):
            found = (name, what)
    return None if found is None else found[1]


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``, either way round."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _is_main_name(name: str) -> bool:
    return name in _MAIN_NAMES or any(
        name.startswith(f"{affix}_") or name.endswith(f"_{affix}") for affix in _MAIN_AFFIXES
    )


def _own_nodes(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node of ``body`` outside the functions, lambdas and classes it defines."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
            ):
                stack.append(child)


def _statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``body`` and of the blocks in it (imports are statements: the
    expressions, most of a module's nodes, are not walked)."""
    for statement in body:
        yield statement
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            for inner in getattr(statement, block, ()):
                yield from _statements(inner.body if not isinstance(inner, ast.stmt) else [inner])


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _says_nothing(node: ast.expr | None) -> bool:
    """A result that decides no assertion: None, NotImplemented (Python then compares by
    identity), False."""
    if node is None:
        return True
    if isinstance(node, ast.Name) and node.id == "NotImplemented":
        return True
    return isinstance(node, ast.Constant) and (node.value is None or node.value is False)


def _comparison_problem(
    name: str,
    parameters: ast.arguments,
    body: Sequence[ast.AST],
    results: Sequence[ast.expr | None],
) -> str | None:
    """Why a comparison (``name``, e.g. ``__eq__``) decides nothing, or None: it returns True
    whatever it is compared with, or never reads the value it is compared with."""
    if results and all(_is_true(result) for result in results):
        return f"{name} returns True whatever it is compared with"
    positional = [*parameters.posonlyargs, *parameters.args]
    if len(positional) < 2:
        return None  # not the usual method: nothing to say of it
    other = positional[1].arg
    if not _reads(body, other) and not all(_says_nothing(result) for result in results):
        return f"{name} ignores what it is compared with ({other})"
    return None


def _reads(body: Sequence[ast.AST], name: str) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id == name
        for statement in body
        for node in ast.walk(statement)
    )


def _hash_problem(
    parameters: ast.arguments, body: Sequence[ast.AST], results: Sequence[ast.expr | None]
) -> str | None:
    positional = [*parameters.posonlyargs, *parameters.args]
    if not positional or not results:
        return None
    if not _reads(body, positional[0].arg) and all(
        isinstance(result, ast.Constant) for result in results
    ):
        return "__hash__ hashes every value alike (a constant)"
    return None


class _PythonReader(ast.NodeVisitor):
    """One module's hits: each node's names resolved through the module's imports."""

    def __init__(self, added: set[int], script: bool) -> None:
        self.added = sorted(added)
        self.hits: list[tuple[int, str]] = []
        self.aliases: dict[str, str] = {}
        self.entry = 1 if script else 0  # >0: inside a program's entry point

    # --- where ------------------------------------------------------------------------

    def _added_line(self, node: ast.AST) -> int | None:
        """The first line of ``node`` the change added, if any."""
        first = getattr(node, "lineno", None)
        if first is None:
            return None
        at = bisect.bisect_left(self.added, first)
        if at == len(self.added) or self.added[at] > (getattr(node, "end_lineno", None) or first):
            return None
        return self.added[at]

    def visit(self, node: ast.AST) -> None:
        """Only what holds an added line: the rest is the project's own (a module of 800
        lines with one changed is read as the few nodes around that line)."""
        # A node with no place (a comprehension, a function's arguments) is inside one that has.
        if not hasattr(node, "lineno") or self._added_line(node) is not None:
            super().visit(node)

    def _hit(self, node: ast.AST, what: str | None) -> None:
        if what is None:
            return
        line = self._added_line(node)
        if line is not None:
            self.hits.append((line, what))

    # --- names ------------------------------------------------------------------------

    def visit_Module(self, node: ast.Module) -> None:
        for found in _statements(node.body):
            if isinstance(found, ast.Import):
                for alias in found.names:
                    if alias.asname is not None:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(found, ast.ImportFrom) and found.level == 0 and found.module:
                for alias in found.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{found.module}.{alias.name}"
        self.generic_visit(node)

    def dotted(self, node: ast.expr) -> str | None:
        """``node`` as the dotted name its imports make it (``g`` after ``from sys import
        _getframe as g``: ``sys._getframe``); None for anything else."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            value = self.dotted(node.value)
            return None if value is None else f"{value}.{node.attr}"
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._hit(node, _named(alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._hit(node, _named(node.module))
            for alias in node.names:
                self._hit(node, _named(f"{node.module}.{alias.name}"))

    def visit_Name(self, node: ast.Name) -> None:
        dotted = self.aliases.get(node.id)
        if dotted is not None:
            self._hit(node, _named(dotted))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in PYTHON_FRAME_ATTRIBUTES:
            self._hit(node, f"inspects a stack frame ({node.attr})")
        if isinstance(node.ctx, ast.Store | ast.Del) and node.attr == "__code__":
            self._hit(node, "replaces a function's code (__code__)")
        dotted = self.dotted(node)
        if dotted is None:
            self.generic_visit(node)
            return
        # The whole chain names one thing (os.path.join is not os): its parts are not read on
        # their own.
        self._hit(node, _named(dotted))
        if isinstance(node.ctx, ast.Store) and dotted.startswith("builtins."):
            self._hit(node, f"replaces a builtin ({dotted})")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            for pattern in PYTHON_STRINGS:
                self._hit(node, pattern.found(node.value))

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring or a bare string: says, does nothing
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = self.dotted(node.func) or (node.func.id if isinstance(node.func, ast.Name) else None)
        first = node.args[0] if node.args else None
        constant = (
            first.value
            if isinstance(first, ast.Constant) and isinstance(first.value, str)
            else None
        )
        if func in _IMPORTERS or func in _MODULE_LOOKUPS:
            if constant is not None:
                self._hit(node, _named(constant))
        elif func in _ATTRIBUTE_FUNCTIONS and len(node.args) >= 2:
            self._attribute_call(node, func)
        if func in PYTHON_EXITS and not self.entry:
            self._hit(node, PYTHON_EXITS[func])
        self.generic_visit(node)

    def _attribute_call(self, node: ast.Call, func: str) -> None:
        """``getattr(sys, "_getframe")`` reads as ``sys._getframe``."""
        name = node.args[1]
        if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
            return
        if name.value in PYTHON_FRAME_ATTRIBUTES:
            self._hit(node, f"inspects a stack frame ({name.value})")
        if func == "setattr" and name.value == "__code__":
            self._hit(node, "replaces a function's code (__code__)")
        owner = self.dotted(node.args[0])
        if owner is not None:
            self._hit(node, _named(f"{owner}.{name.value}"))
        if func == "setattr" and name.value in _COMPARISONS and len(node.args) == 3:
            self._function_value(node.args[2], name.value)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        if (
            self.dotted(node.value) == "sys.modules"
            and isinstance(key, ast.Constant)
            and isinstance(key.value, str)
        ):
            self._hit(node, _named(key.value))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        """``"pytest" in sys.modules``."""
        if (
            isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            and any(self.dotted(c) == "sys.modules" for c in node.comparators)
        ):
            self._hit(node, _named(node.left.value))
        self.generic_visit(node)

    # --- exits --------------------------------------------------------------------------

    def visit_Raise(self, node: ast.Raise) -> None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(raised, ast.Name) and raised.id == "SystemExit" and not self.entry:
            self._hit(node, PYTHON_EXITS["SystemExit"])
        self.generic_visit(node)

    # --- definitions --------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in _COMPARISONS or node.name == "__hash__":
            returns = [r.value for r in _own_nodes(node.body) if isinstance(r, ast.Return)]
            if node.name == "__hash__":
                self._hit(node, _hash_problem(node.args, node.body, returns))
            else:
                self._hit(node, _comparison_problem(node.name, node.args, node.body, returns))
        # A process of its own: an entry point, and a forked child, which ends with os._exit.
        main = _is_main_name(node.name) or any(
            isinstance(call, ast.Call) and self.dotted(call.func) in _FORKS
            for call in _own_nodes(node.body)
        )
        self.entry += main
        self.generic_visit(node)
        self.entry -= main

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        """``__eq__ = lambda self, other: True`` in a class, or ``Money.__eq__ = ...``."""
        for target in node.targets:
            name = target.id if isinstance(target, ast.Name) else None
            if isinstance(target, ast.Attribute):
                name = target.attr
            if name in _COMPARISONS:
                self._function_value(node.value, name)
        self.generic_visit(node)

    def _function_value(self, value: ast.expr, name: str) -> None:
        if isinstance(value, ast.Lambda):
            self._hit(value, _comparison_problem(name, value.args, [value.body], [value.body]))


MAX_REASON_HITS = 3


def why_unverified(hits: Sequence[Hit], config_name: str) -> str:
    """Why a run with ``hits`` is not verified, and how the operator allows what is meant."""
    shown = "; ".join(map(str, hits[:MAX_REASON_HITS]))
    if len(hits) > MAX_REASON_HITS:
        shown += f"; and {len(hits) - MAX_REASON_HITS} more"
    paths = ", ".join(json.dumps(path) for path in dict.fromkeys(hit.path for hit in hits))
    return (
        f"{shown}: code that behaves differently under test is not verified; if this is "
        f"intended, allow the path in {config_name} [gate] allow_test_aware = [{paths}]"
    )
