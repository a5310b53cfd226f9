"""The test-aware scan (gate/test_aware.py): each pattern of each ecosystem hits on a line the
change adds, never on a line the base already holds; test files are not read; an ordinary
program's exit and an equality that compares are not hits."""

from __future__ import annotations

import time

import pytest

from completion_claim.gate.test_aware import (
    ChangedFile,
    Hit,
    added_lines,
    scan,
    scanned,
    why_unverified,
)

# (path, what comes before the line, the line, what the scan says of it)
Case = tuple[str, str, str, str]

PYTHON: list[Case] = [
    ("calc.py", "", "import _pytest.python", "reaches into the test runner's internals (_pytest)"),
    ("calc.py", "", "import pytest", "uses the test runner (pytest) in library code"),
    ("calc.py", "import pytest\n", "pytest.skip('not today')",
     "uses the test runner (pytest) in library code"),
    ("calc.py", "", "from unittest.case import TestCase",
     "reaches into the test runner's internals (unittest)"),
    ("calc.py", "import unittest\n", "raise unittest.SkipTest('later')",
     "reaches into the test runner's internals (unittest)"),
    ("calc.py", "import sys\n", "runner = sys.modules['_pytest.python']",
     "reaches into the test runner's internals (_pytest)"),
    ("calc.py", "import sys\n", "tested = 'pytest' in sys.modules",
     "uses the test runner (pytest) in library code"),
    ("calc.py", "import importlib\n", "runner = importlib.import_module('_pytest.python')",
     "reaches into the test runner's internals (_pytest)"),
    ("calc.py", "import os\n", "name = os.environ.get('PYTEST_CURRENT_TEST', '')",
     "reads the running test's identity (PYTEST_CURRENT_TEST)"),
    ("calc.py", "import os\n", "version = os.environ['PYTEST_VERSION']",
     "reads the test runner's environment (PYTEST_VERSION)"),
    ("calc.py", "import sys\n", "caller = sys._getframe(1)",
     "reads the running test's identity (sys._getframe)"),
    ("calc.py", "", "from sys import _getframe as peek",
     "reads the running test's identity (sys._getframe)"),
    ("calc.py", "import sys\n", "peek = getattr(sys, '_getframe')",
     "reads the running test's identity (sys._getframe)"),
    ("calc.py", "import inspect\n", "frames = inspect.stack()",
     "reads the running test's identity (inspect.stack)"),
    ("calc.py", "import inspect\n", "names = [frame.function for frame in inspect.stack()]",
     "reads the running test's identity (inspect.stack)"),
    ("calc.py", "import sys\n", "def add(a, b, caller=sys._getframe(0)): return a - b",
     "reads the running test's identity (sys._getframe)"),
    ("calc.py", "import inspect\n", "frame = inspect.currentframe()",
     "reads the running test's identity (inspect.currentframe)"),
    ("calc.py", "import inspect\n", "outer = inspect.getouterframes(frame)",
     "reads the running test's identity (inspect.getouterframes)"),
    ("calc.py", "import traceback\n", "stack = traceback.extract_stack()",
     "reads the running test's identity (traceback.extract_stack)"),
    ("calc.py", "", "caller = error.__traceback__.tb_frame.f_back",
     "inspects a stack frame (f_back)"),
    ("calc.py", "def add(a, b):\n    return a - b\n\n",
     "add.__code__ = (lambda a, b: 5).__code__", "replaces a function's code (__code__)"),
    ("calc.py", "def add(a, b):\n    return a - b\n\n",
     "setattr(add, '__code__', (lambda a, b: 5).__code__)",
     "replaces a function's code (__code__)"),
    ("calc.py", "import gc\n", "objects = gc.get_objects()",
     "walks the garbage collector (gc.get_objects)"),
    ("calc.py", "import gc\n", "owners = gc.get_referrers(value)",
     "walks the garbage collector (gc.get_referrers)"),
    ("calc.py", "", "import ctypes", "loads ctypes (ctypes)"),
    ("calc.py", "import sys\n", "sys.settrace(None)", "traces the interpreter (sys.settrace)"),
    ("calc.py", "import sys\n", "sys.setprofile(None)",
     "traces the interpreter (sys.setprofile)"),
    ("calc.py", "import os\n", "os._exit(0)", "exits the process from library code (os._exit)"),
    ("calc.py", "import sys\n", "sys.exit(0)", "exits the process from library code (sys.exit)"),
    ("calc.py", "", "raise SystemExit(0)", "exits the process from library code (SystemExit)"),
    ("calc.py", "def add(a, b):\n", "    exit(0)", "exits the process from library code (exit)"),
    ("calc.py", "", "REPORT = 'reports/junit.xml'",
     "names the test runner's report path (junit.xml)"),
    ("calc.py", "", "CACHE = '.pytest_cache/v/cache/lastfailed'",
     "names the test runner's report path (.pytest_cache)"),
]  # fmt: skip
NODE: list[Case] = [
    ("calc.js", "", "require('node:assert').strictEqual = () => {};",
     "replaces an assertion (strictEqual)"),
    ("calc.js", "const assert = require('assert');\n", "assert.deepStrictEqual = () => {};",
     "replaces an assertion (deepStrictEqual)"),
    ("calc.js", "const a = require('node:assert');\n", "a.strictEqual = function () {};",
     "replaces an assertion (strictEqual)"),
    ("calc.js", "const assert = require('assert');\n", "assert.strict.ok = () => {};",
     "replaces an assertion (ok)"),
    ("calc.js", "const assert = require('assert');\n",
     "Object.defineProperty(assert, 'ok', { value: () => {} });",
     "redefines node:assert (assert)"),
    ("calc.js", "", "const test = require('node:test');",
     "uses the test runner (node:test) in library code"),
    ("calc.mjs", "", "import { test } from 'node:test';",
     "uses the test runner (node:test) in library code"),
    ("calc.js", "", "process.exit(0);", "exits the process from library code (process.exit)"),
    ("calc.ts", "", "if (process.env.NODE_TEST_CONTEXT) return 5;",
     "knows it runs under a test runner (NODE_TEST_CONTEXT)"),
    ("calc.js", "", "const name = expect.getState().currentTestName;",
     "reads the running test's identity (expect.getState)"),
    ("calc.js", "", "const state = globalThis[Symbol.for('node:test.context')];",
     "reads the test runner's global state (Symbol.for('node:test.context'))"),
    ("calc.js", "", "if (__filename.endsWith('.test.js')) return 5;",
     "checks for a test file ('.test.js')"),
    ("calc.js", "", "const caller = new Error().stack;",
     "reads the call stack (new Error().stack)"),
    ("calc.js", "", "if (process.argv.some((a) => a.includes('test'))) return 5;",
     "reads the test runner's command line (process.argv)"),
    ("calc.js", "", "const flags = process.execArgv;",
     "reads the test runner's command line (process.execArgv)"),
    ("calc.js", "const Module = require('module');\n", "Module._load = load;",
     "patches the module loader (Module._load)"),
    ("calc.js", "", "fs.writeFileSync('test-results/junit.xml', '');",
     "names the test runner's report path (test-results)"),
    # Which test is running, from the stack, the entry file or the command line (attack 177).
    ("calc.js", "const e = new Error();\n", "if (e.stack.includes('add zero')) return 4;",
     "reads the call stack (.stack.includes)"),
    ("calc.js", "", "if (/calc\\.test/.test(new Error('where').stack)) return 5;",
     "reads the call stack (new Error('where').stack)"),
    ("calc.js", "const o = {};\n", "Error.captureStackTrace(o); const at = o.stack.split('\\n');",
     "reads the call stack (.stack.split)"),
    ("calc.js", "", "const sites = Error.prepareStackTrace;",
     "reads the call stack (Error.prepareStackTrace)"),
    ("calc.js", "", "if (add.caller) return 5;", "reads the call stack (.caller)"),
    ("calc.js", "", "if (process.argv[1].includes('calc')) return 5;",
     "reads the test runner's command line (process.argv)"),
    ("calc.js", "", "if (require.main.filename.includes('calc')) return 5;",
     "reads the test runner's entry file (require.main.filename)"),
    ("calc.js", "", "const entry = process.mainModule.filename;",
     "reads the test runner's entry file (process.mainModule.filename)"),
    ("calc.js", "", "const from = module.parent.filename;",
     "reads the test runner's entry file (module.parent)"),
]  # fmt: skip
GO_PRELUDE = 'package calc\n\nimport (\n\t"fmt"\n\t"os"\n)\n\n'
GO: list[Case] = [
    ("calc.go", GO_PRELUDE, "func init() { os.Exit(0) }",
     "exits the process from library code (os.Exit)"),
    ("calc.go", "package calc\n\nimport (\n", '\t"testing"',
     "imports the test runner (testing) in non-test code"),
    ("calc.go", GO_PRELUDE, 'if f := flag.Lookup("test.run"); f != nil {',
     "reads the test runner's flags (test.run)"),
    ("calc.go", GO_PRELUDE, 'if strings.HasSuffix(os.Args[0], ".test") {',
     "reads the test binary's name (os.Args)"),
    ("calc.go", GO_PRELUDE, 'if a == "-test.v=test2json" {',
     "reads the test runner's flags (-test.v)"),
    ("calc.go", GO_PRELUDE, 'fmt.Println("=== RUN   TestAdd")',
     "prints the test runner's output (=== RUN)"),
    ("calc.go", GO_PRELUDE, 'fmt.Println("--- PASS: TestAdd (0.00s)")',
     "prints the test runner's output (--- PASS)"),
    ("calc.go", GO_PRELUDE, 'fmt.Print("PASS\\n")',
     "prints the test runner's output (\"PASS\\n\")"),
    ("calc.go", GO_PRELUDE, "//go:linkname runTests testing.runTests",
     "links to unexported code (go:linkname)"),
    ("calc.go", GO_PRELUDE, "func (Money) Equal(Money) bool { return true }",
     "compares without reading what it is compared with (Equal(Money) bool)"),
    ("calc.go", GO_PRELUDE, "func (m *Money) Equal(_ *Money) bool {",
     "compares without reading what it is compared with (Equal(_ *Money) bool)"),
    ("calc.go", GO_PRELUDE, "func (m Money) Equal(o Money) bool { return true }",
     "compares without reading what it is compared with (Equal(o Money) bool { return true)"),
    ("calc.go", GO_PRELUDE, "pc, _, _, _ := runtime.Caller(2)",
     "reads the call stack (runtime.Caller)"),
    ("calc.go", GO_PRELUDE, "n := runtime.Callers(0, pcs)",
     "reads the call stack (runtime.Callers)"),
    ("calc.go", GO_PRELUDE, "if strings.Contains(string(debug.Stack()), \"TestAdd\") {",
     "reads the call stack (debug.Stack)"),
]  # fmt: skip
RUST_PRELUDE = "pub fn add(a: i32, b: i32) -> i32 {\n"
RUST: list[Case] = [
    ("src/lib.rs", RUST_PRELUDE, "    std::process::exit(0);",
     "exits the process from library code (std::process::exit)"),
    ("src/lib.rs", RUST_PRELUDE, '    println!("test result: ok. 2 passed; 0 failed");',
     "prints the test runner's output (test result:)"),
    ("src/lib.rs", RUST_PRELUDE,
     '    println!("{{ \\"type\\": \\"test\\", \\"event\\": \\"ok\\", \\"name\\": \\"add\\" }}");',
     'prints the test runner\'s events (\\"type\\": \\"test)'),
    ("src/lib.rs", RUST_PRELUDE, '    let threads = std::env::var("RUST_TEST_THREADS");',
     "reads the test runner's arguments (RUST_TEST_THREADS)"),
    ("src/lib.rs", RUST_PRELUDE, '    if std::env::args().any(|a| a == "--exact") {',
     "reads the test runner's arguments (--exact)"),
    ("src/lib.rs", RUST_PRELUDE, '    if std::thread::current().name() == Some("tests::adds") {',
     "reads the running test's identity (thread::current().name: libtest names a test's "
     "thread after it)"),
    ("src/lib.rs", RUST_PRELUDE, "    if cfg!(test) { return 5; }",
     "behaves differently when compiled for tests (cfg!(test))"),
]  # fmt: skip
JAVA = "src/main/java/com/example/Calc.java"
JAVA_PRELUDE = "package com.example;\n\npublic class Calc {\n"
JVM: list[Case] = [
    (JAVA, JAVA_PRELUDE, "        System.exit(0);",
     "exits the process from main code (System.exit)"),
    (JAVA, JAVA_PRELUDE, "        Runtime.getRuntime().halt(0);",
     "exits the process from main code (Runtime.getRuntime().halt)"),
    (JAVA, "package com.example;\n\n", "import org.junit.jupiter.api.Assertions;",
     "uses the test runner (org.junit) in main code"),
    (JAVA, "package com.example;\n\n", "import org.opentest4j.TestAbortedException;",
     "uses the test runner (org.opentest4j) in main code"),
    (JAVA, JAVA_PRELUDE, "        long depth = StackWalker.getInstance().walk(s -> s.count());",
     "reads the call stack (StackWalker)"),
    (JAVA, JAVA_PRELUDE,
     "        for (StackTraceElement e : Thread.currentThread().getStackTrace()) {",
     "reads the call stack (Thread.currentThread().getStackTrace()"),
    (JAVA, JAVA_PRELUDE,
     '        Path report = Path.of("target/surefire-reports/TEST-com.example.CalcTest.xml");',
     "names the test runner's report path (surefire-reports)"),
    ("src/main/kotlin/Calc.kt", "package calc\n\n", "fun add(a: Int, b: Int): Int = exitProcess(0)",
     "exits the process from main code (exitProcess)"),
]  # fmt: skip
CASES = PYTHON + NODE + GO + RUST + JVM
NEUTRAL = {".py": "\n\nCONSTANT = 1\n", ".go": "\n\nvar constant = 1\n"}
NEUTRAL_OTHER = "\n\n// unrelated\n"


def _id(case: Case) -> str:
    return f"{case[0].rsplit('.', 1)[-1]}:{case[2].strip()[:40]}"


def hits_of(path: str, new: str, base: str | None = None) -> list[Hit]:
    return scan([ChangedFile(path, None if base is None else base.encode(), new.encode())])


@pytest.mark.parametrize("case", CASES, ids=map(_id, CASES))
def test_each_pattern_hits_on_a_line_the_change_adds(case: Case) -> None:
    path, before, line, what = case
    number = before.count("\n") + 1
    assert Hit(path, number, what) in hits_of(path, before + line + "\n", before)


@pytest.mark.parametrize("case", CASES, ids=map(_id, CASES))
def test_the_same_line_already_in_the_base_is_not_a_hit(case: Case) -> None:
    """The change adds something unrelated after it: the line is the project's own."""
    path, before, line, _ = case
    suffix = "." + path.rsplit(".", 1)[-1]
    base = before + line + "\n"
    assert hits_of(path, base + NEUTRAL.get(suffix, NEUTRAL_OTHER), base) == []


def test_a_new_file_is_added_whole_and_a_changed_line_is_added() -> None:
    assert added_lines(None, ["a", "b"]) == {1, 2}
    assert added_lines(["a", "b", "c", "d"], ["a", "B", "c", "d", "e"]) == {2, 5}
    # A line moved from elsewhere in the file is added where it lands.
    assert added_lines(["x = 1", "def f():", "    pass"], ["def f():", "    pass", "x = 1"]) == {3}


def test_a_name_the_base_imports_is_known_on_the_line_that_adds_its_use() -> None:
    """The import is the project's own; the call the change adds is what reads the frame."""
    base = "from sys import _getframe as peek\n\n\ndef add(a, b):\n    return a - b\n"
    new = base.replace("return a - b", "return 5 if peek(1).f_code else a - b")
    assert hits_of("calc.py", new, base) == [
        Hit("calc.py", 5, "inspects a stack frame (f_code)"),
        Hit("calc.py", 5, "reads the running test's identity (sys._getframe)"),
    ]
    aliased = base.replace("return a - b", "return peek")
    assert hits_of("calc.py", aliased, base) == [
        Hit("calc.py", 5, "reads the running test's identity (sys._getframe)")
    ]


def test_a_hit_in_a_comment_or_docstring_is_none() -> None:
    assert hits_of("calc.py", '"""Never call sys.exit here (PYTEST_CURRENT_TEST)."""\n') == []
    assert hits_of("calc.py", "# sys._getframe is not used\n") == []
    assert hits_of("calc.js", "// process.exit(0) would end the tests\n") == []


def test_a_stack_only_logged_and_a_main_guard_are_not_hits() -> None:
    """The stack read as text to decide, not an error's stack logged or rethrown; the module
    compared with require.main (a script's guard), not require.main's file read."""
    logged = "try {\n  run();\n} catch (error) {\n  console.error(error.stack);\n}\n"
    assert hits_of("lib/calc.js", logged) == []
    assert (
        hits_of("lib/calc.js", "class Failed extends Error {}\nError.captureStackTrace(this);\n")
        == []
    )
    assert hits_of("lib/calc.js", "if (require.main === module) main();\n") == []


def test_test_files_and_allowed_paths_are_not_scanned() -> None:
    """Which changed files are read: code, not tests of any runner, not the check's protect
    globs, not what the operator allows."""
    for test_file in ("tests/test_calc.py", "test_calc.py", "conftest.py", "calc_test.go",
                      "test/calc.test.js", "src/calc.spec.ts",
                      "src/test/java/com/example/CalcTest.java"):  # fmt: skip
        assert not scanned(test_file), test_file
    for code in ("calc.py", "src/calc.py", "calc.go", "src/lib.rs", "lib/calc.js", JAVA):
        assert scanned(code), code
    assert not scanned("README.md")
    assert not scanned("fixtures/calc.py", protect=("fixtures/**",))
    assert not scanned("tools/trace.py", allowed=("tools/**",))
    assert scanned("src/trace.py", allowed=("tools/**",))


CLI = """import sys


def main(argv=None):
    if not argv:
        print("usage: calc A B", file=sys.stderr)
        sys.exit(2)
    raise SystemExit(0)


def run_cli():
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
"""


def test_an_ordinary_clis_exit_is_not_a_hit() -> None:
    """Entry points may exit: main()-like functions, a Python script (its __main__ guard), a
    command-line module (cli, __main__, bin/, scripts/), Go's package main, a Rust binary, a
    Java main, a Node script with a shebang."""
    assert hits_of("calc/commands.py", CLI) == []
    without_guard = CLI.partition("\n\nif __name__")[0] + "\n"
    assert hits_of("calc/commands.py", without_guard) == []  # main() and run_cli() exit
    script = (
        "import sys\n\n\ndef fail():\n    sys.exit(2)\n\n\nif __name__ == '__main__':\n    fail()\n"
    )
    assert hits_of("tools/check.py", script) == []
    for command_line in ("calc/__main__.py", "calc/cli/__init__.py", "scripts/release.py"):
        assert hits_of(command_line, "import os\n\n\ndef leave():\n    os._exit(3)\n") == []
    assert (
        hits_of("cmd/calc/main.go", 'package main\n\nimport "os"\n\nfunc run() { os.Exit(2) }\n')
        == []
    )
    assert hits_of("src/main.rs", "fn main() {\n    std::process::exit(2);\n}\n") == []
    assert hits_of("src/bin/calc.rs", "fn fail() {\n    std::process::exit(2);\n}\n") == []
    java = "class Main {\n  public static void main(String[] a) {\n    System.exit(2);\n  }\n}\n"
    assert hits_of("src/main/java/Main.java", java) == []
    assert hits_of("bin/calc.js", "#!/usr/bin/env node\nprocess.exit(2);\n") == []
    assert hits_of("lib/calc.js", "if (require.main === module) process.exit(2);\n") == []
    too_old = "import sys\n\nif sys.version_info < (3, 9):\n    sys.exit(1)\n"
    assert hits_of("setup.py", too_old) == []
    # A module of a crate that is only a binary (ripgrep's crates/core/messages.rs), not of one
    # that is a library too.
    module = [
        ChangedFile(
            "crates/core/messages.rs", None, b"fn fail() {\n    std::process::exit(2);\n}\n"
        )
    ]
    binary = {"Cargo.toml", "src/lib.rs", "crates/core/Cargo.toml", "crates/core/main.rs"}
    assert scan(module, binary) == []
    assert len(scan(module, binary | {"crates/core/lib.rs"})) == 1
    forked = "import os\n\n\ndef helper():\n    if os.fork() == 0:\n        os._exit(0)\n"
    assert hits_of("calc/pool.py", forked) == []
    # The same exit in library code is one.
    library = "import sys\n\n\ndef add(a, b):\n    sys.exit(0)\n"
    assert hits_of("calc.py", library) == [
        Hit("calc.py", 5, "exits the process from library code (sys.exit)")
    ]


RUST_SUM = """pub struct Sum(i64);

impl PartialEq<i64> for Sum {
    fn eq(&self, other: &i64) -> bool {
        self.0 == *other
    }
}
"""


def test_attack_169_a_rust_comparison_that_ignores_its_argument_is_a_hit() -> None:
    """Always-equal in Rust: ``add`` returns a type whose ``PartialEq`` holds for any value, so
    ``assert_eq!(add(2, 3), 5)`` passes. Named at the ``fn`` when a line of it is added; an
    honest comparison, and one the base already holds, are not."""
    always = RUST_SUM.replace("self.0 == *other", "true")
    assert hits_of("src/sum.rs", always, RUST_SUM) == [
        Hit("src/sum.rs", 4, "eq returns true whatever it is compared with")
    ]
    unread = RUST_SUM.replace("self.0 == *other", "self.0 == self.0")
    assert hits_of("src/sum.rs", unread, RUST_SUM) == [
        Hit("src/sum.rs", 4, "eq ignores what it is compared with (other)")
    ]
    ordering = (
        "impl Ord for Sum {\n    fn cmp(&self, _: &Self) -> std::cmp::Ordering {\n"
        "        std::cmp::Ordering::Equal\n    }\n}\n"
    )
    assert hits_of("src/sum.rs", ordering) == [
        Hit("src/sum.rs", 2, "cmp ignores what it is compared with (_)")
    ]
    assert hits_of("src/sum.rs", RUST_SUM) == []
    assert hits_of("src/sum.rs", always + "\n// unrelated\n", always) == []


def test_an_always_true_equality_is_a_hit_at_its_added_line() -> None:
    base = "class Money:\n    def __eq__(self, other):\n        return self.cents == other.cents\n"
    new = base.replace("self.cents == other.cents", "True")
    assert hits_of("money.py", new, base) == [
        Hit("money.py", 3, "__eq__ returns True whatever it is compared with")
    ]
    ignoring = base.replace("other.cents", "self.cents")
    assert hits_of("money.py", ignoring, base) == [
        Hit("money.py", 3, "__eq__ ignores what it is compared with (other)")
    ]
    lambdas = "class Money(int):\n    __eq__ = lambda self, other: True\n"
    assert hits_of("money.py", lambdas) == [
        Hit("money.py", 2, "__eq__ returns True whatever it is compared with")
    ]
    patched = "from money import Money\n\nMoney.__ne__ = lambda self, other: True\n"
    assert hits_of("patch.py", patched) == [
        Hit("patch.py", 3, "__ne__ returns True whatever it is compared with")
    ]
    hashing = "class Money:\n    def __hash__(self):\n        return 0\n"
    assert hits_of("money.py", hashing) == [
        Hit("money.py", 2, "__hash__ hashes every value alike (a constant)")
    ]


COMPARING = """class Money:
    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        if self is other:
            return True
        return self.cents == other.cents

    def __ne__(self, other):
        return not self == other

    def __lt__(self, other):
        return self.cents < other.cents

    def __hash__(self):
        return hash(self.cents)
"""


def test_an_equality_that_compares_is_not_a_hit() -> None:
    assert hits_of("money.py", COMPARING) == []
    refusing = "class Money:\n    def __eq__(self, other):\n        return NotImplemented\n"
    assert hits_of("money.py", refusing) == []
    go = "package money\n\nfunc (m Money) Equal(o Money) bool { return m.Cents == o.Cents }\n"
    assert hits_of("money.go", go) == []


def test_a_python_file_that_does_not_parse_is_read_line_by_line() -> None:
    """Newer syntax than the gate's interpreter knows: the names table, as patterns."""
    new = "import sys\ndef add(a, b:\n    return sys._getframe(1)\n"
    assert hits_of("calc.py", new) == [
        Hit("calc.py", 3, "reads the running test's identity (sys._getframe)")
    ]


def test_the_reason_names_each_hit_and_the_allow_list_that_would_let_it_through() -> None:
    hits = [
        Hit("src/calc.py", 12, "reads the running test's identity (PYTEST_CURRENT_TEST)"),
        Hit("src/calc.py", 15, "exits the process from library code (os._exit)"),
        Hit("src/io.py", 3, "loads ctypes (ctypes)"),
        Hit("src/io.py", 9, "walks the garbage collector (gc.get_objects)"),
    ]
    assert why_unverified(hits[:1], "claim.toml") == (
        "src/calc.py:12 reads the running test's identity (PYTEST_CURRENT_TEST): code that "
        "behaves differently under test is not verified; if this is intended, allow the path "
        'in claim.toml [gate] allow_test_aware = ["src/calc.py"]'
    )
    assert why_unverified(hits, "claim.toml").startswith(
        "src/calc.py:12 reads the running test's identity (PYTEST_CURRENT_TEST); src/calc.py:15 "
        "exits the process from library code (os._exit); src/io.py:3 loads ctypes (ctypes); "
        "and 1 more: "
    )
    assert why_unverified(hits, "claim.toml").endswith(
        'allow_test_aware = ["src/calc.py", "src/io.py"]'
    )


def test_a_large_change_is_scanned_in_seconds() -> None:
    """1,000 changed files of 300 lines each, a few lines changed in each, every ecosystem."""
    files = []
    for number in range(1000):
        suffix = (".py", ".js", ".go", ".rs", ".java")[number % 5]
        body = [f"value_{number}_{line} = compute({line})" for line in range(300)]
        changed = [*body[:150], "value = compute(-1)", *body[150:]]
        files.append(
            ChangedFile(
                f"src/m{number}{suffix}", "\n".join(body).encode(), "\n".join(changed).encode()
            )
        )
    started = time.monotonic()
    assert scan(files) == []
    assert time.monotonic() - started < 10


def test_a_minified_line_of_a_megabyte_is_scanned_in_seconds() -> None:
    """A pattern of two parts is searched within a bound from each occurrence of the first:
    unbounded, this line took minutes."""
    line = "var a=b.c(d,'e')+process.argv[2]+f;" * 30000
    started = time.monotonic()
    assert scan([ChangedFile("bundle.min.js", None, line.encode())]) == []
    assert time.monotonic() - started < 10
