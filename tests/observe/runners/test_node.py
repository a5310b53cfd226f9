"""The Node runners without a run: which commands they take, what they detect and protect, and
what they read from reports captured from real runs (reports/README.md says how)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from secrets import token_hex

import pytest

from completion_claim.errors import ObservationFailed, UsageError
from completion_claim.observe.runners import RUNNERS, is_runner_protected, runner_for
from completion_claim.observe.runners.base import RunContext, Runner, Toolchain
from completion_claim.observe.runners.node import (
    Jest,
    Mocha,
    NodeTest,
    Vitest,
    node_toolchain,
    summary,
)
from tests.fixtures.node_projects import node_project

REPORTS = Path(__file__).parent / "reports"


def report(name: str) -> bytes:
    return (REPORTS / name).read_bytes()


def context(**dependencies: str) -> RunContext:
    return RunContext(
        toolchain=Toolchain(program="/usr/bin/node"), channel=None, env={},
        dependencies=dependencies, work="/run/claim/work", cwd="/run/claim/work",
        reports="/run/claim/report",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        (["node", "--test"], "node-test"),
        (["/opt/node/bin/node", "--test", "test/"], "node-test"),
        (["node", "--experimental-vm-modules", "--test"], "node-test"),
        (["vitest", "run"], "vitest"),
        (["npx", "vitest", "run"], "vitest"),
        (["npx", "--no-install", "vitest"], "vitest"),
        (["node_modules/.bin/vitest", "run"], "vitest"),
        (["jest"], "jest"),
        (["npx", "jest", "--runInBand"], "jest"),
        (["mocha"], "mocha"),
        (["npx", "mocha", "test/**/*.js"], "mocha"),
        (["npm", "test"], "package-script"),
        (["yarn", "test"], "package-script"),
        (["pnpm", "run", "test"], "package-script"),
        (["node", "test/run.js"], "pytest"),  # a script: judged by its exit code
        (["python", "-m", "pytest"], "pytest"),
    ],
)
def test_each_command_goes_to_its_runner(command: list[str], runner: str) -> None:
    assert runner_for(command).name == runner


def test_a_package_script_is_refused_naming_what_to_write() -> None:
    with pytest.raises(UsageError) as refused:
        runner_for(["npm", "test"]).check(["npm", "test"], None)

    assert "package.json script is the agent's to edit" in str(refused.value)
    assert "node --test, vitest run, jest, mocha" in str(refused.value)


@pytest.mark.parametrize(
    "command",
    [
        ["node", "--test", "--test-reporter=tap"],
        ["node", "--test", "--test-reporter-destination=out.xml"],
        ["vitest", "run", "--reporter=json"],
        ["vitest", "run", "--outputFile.junit=x.xml"],
        ["jest", "--json"],
        ["jest", "--outputFile=x.json"],
        ["mocha", "--reporter", "spec"],
        ["mocha", "-R", "spec"],
    ],
)
def test_a_command_naming_its_own_report_is_refused(command: list[str]) -> None:
    with pytest.raises(UsageError, match=r"the observer asks .* for its own report"):
        runner_for(command).check(command, None)


def test_a_junit_file_is_refused_for_a_runner_whose_report_the_observer_asks_for() -> None:
    with pytest.raises(UsageError, match="--junit is for other commands"):
        NodeTest().check(["node", "--test"], "report.xml")


def test_the_issue_scenario_and_each_package_runner_are_detected(tmp_path: Path) -> None:
    found = {}
    for runner in ("node-test", "vitest", "jest", "mocha"):
        root = node_project(tmp_path / runner, runner)
        found[runner] = [(r.name, d.command) for r in RUNNERS if (d := r.detect(root))]

    assert found == {
        "node-test": [("node-test", ("node", "--test"))],
        "vitest": [("vitest", ("vitest", "run"))],
        "jest": [("jest", ("jest",))],
        "mocha": [("mocha", ("mocha",))],
    }


@pytest.mark.parametrize(
    ("script", "command"),
    [
        ("mocha tests/*.js", ("mocha", "tests/*.js")),
        ("npx mocha --recursive 'spec/**/*.js'", ("mocha", "--recursive", "spec/**/*.js")),
        ("mocha", ("mocha",)),
        ("mocha tests && eslint .", ("mocha",)),
        ("mocha --reporter dot tests", ("mocha",)),
        ("nyc mocha tests", ("mocha",)),
    ],
)  # fmt: skip
def test_claim_init_gives_mocha_what_the_test_script_gives_it(
    tmp_path: Path, script: str, command: tuple[str, ...]
) -> None:
    """complex.js's script is ``mocha tests/*.js``: mocha alone looks in ./test and runs no
    test (found by make eval). A script that is more than mocha's words, or asks for an option
    the observer refuses, leaves the bare command."""
    root = node_project(tmp_path / "repo", "mocha")
    package = json.loads((root / "package.json").read_text())
    (root / "package.json").write_text(json.dumps(package | {"scripts": {"test": script}}))

    detected = Mocha().detect(root)

    assert detected is not None
    assert detected.command == command


@pytest.mark.parametrize(
    "scripts",
    [
        {"test": "npm run test:unit && npm run test:typescript",
         "test:unit": "c8 --100 node --test"},
        {"test": "c8 node --test test/", "lint": "eslint"},
        {"test": "npm run unit", "unit": "nyc --reporter=text node --test"},
    ],
)  # fmt: skip
def test_claim_init_finds_node_test_behind_npm_run_and_a_coverage_tool(
    tmp_path: Path, scripts: dict[str, str]
) -> None:
    """fast-content-type-parse (make eval) says ``npm run test:unit`` and that script says
    ``c8 --100 node --test``: claim init found nothing and the newcomer's gate ran no test."""
    root = node_project(tmp_path / "repo", "node-test")
    package = json.loads((root / "package.json").read_text())
    (root / "package.json").write_text(json.dumps(package | {"scripts": scripts}))

    detected = NodeTest().detect(root)

    assert detected is not None
    assert detected.command == ("node", "--test")


def test_a_script_naming_another_that_is_missing_or_circular_detects_nothing(
    tmp_path: Path,
) -> None:
    root = node_project(tmp_path / "repo", "node-test")
    package = json.loads((root / "package.json").read_text())
    scripts = {"test": "npm run a", "a": "npm run b && npm run test"}
    (root / "package.json").write_text(json.dumps(package | {"scripts": scripts}))

    assert NodeTest().detect(root) is None


def test_a_folder_without_package_json_is_no_node_project(tmp_path: Path) -> None:
    (tmp_path / "vitest.config.ts").write_text("export default {}\n")

    assert [r.name for r in RUNNERS if r.detect(tmp_path)] == []


@pytest.mark.parametrize(
    "rel",
    [
        "package.json", "package-lock.json", "web/yarn.lock", "pnpm-lock.yaml", ".npmrc",
        "tsconfig.json", "tsconfig.build.json", "vitest.config.ts", "vite.config.mjs",
        "jest.config.js", "jest.setup.ts", ".mocharc.yml", ".mocharc.json", "babel.config.js",
        "src/calc.test.ts", "src/calc.spec.js", "lib/calc_test.mjs", "test-calc.js", "src/spec.js",
        "src/calc.spectest.ts",
        "src/__tests__/calc.js", "src/__mocks__/fs.js", "src/__snapshots__/calc.test.js.snap",
        "node_modules/.bin/vitest", "node_modules/vitest/vitest.mjs",
    ],
)  # fmt: skip
def test_node_tests_configuration_and_installed_packages_are_protected(rel: str) -> None:
    assert is_runner_protected(rel.encode())


@pytest.mark.parametrize("rel", ["calc.js", "src/calc.ts", "src/contest.js", "README.md"])
def test_the_code_is_not_protected(rel: str) -> None:
    assert not is_runner_protected(rel.encode())


def test_node_test_asks_for_junit_before_the_test_files() -> None:
    invocation = NodeTest().invocation(["node", "--test", "test/a.test.js"], context())

    assert invocation.argv == (
        "/usr/bin/node", "--test",
        "--test-reporter=junit", "--test-reporter-destination=/run/claim/report/node-test.xml",
        "--test-reporter=spec", "--test-reporter-destination=stdout",
        "test/a.test.js",
    )  # fmt: skip
    assert invocation.report == "/run/claim/report/node-test.xml"


def test_every_node_runner_loads_the_observers_preload_after_the_operators_options() -> None:
    preload = "/run/claim/plugin/node_preload.cjs"
    given = RunContext(
        toolchain=Toolchain(program="/usr/bin/node"), channel=None,
        env={"NODE_OPTIONS": "--max-old-space-size=4096"},
        dependencies={"node_modules": "/run/claim/work/node_modules"}, work="/run/claim/work",
        cwd="/run/claim/work", reports="/run/claim/report", preload=preload,
    )  # fmt: skip

    commands = {NodeTest(): ["node", "--test"], Vitest(): ["vitest", "run"], Jest(): ["jest"],
                Mocha(): ["mocha"]}  # fmt: skip
    for runner, command in commands.items():
        env = runner.invocation(command, given).env
        assert env["NODE_OPTIONS"] == f'--max-old-space-size=4096 --require "{preload}"'
        assert runner.preload is not None
        assert runner.preload.is_file()


def drawn() -> Callable[[], str]:
    return lambda: token_hex(4)


@pytest.mark.parametrize("named", [(), ("test/",), ("test/calc.test.js",)])
def test_node_test_canaries_run_beside_the_tests_whatever_the_command_names(
    tmp_path: Path, named: tuple[str, ...]
) -> None:
    """Run by hand (no observer): the canary file planted in the run's folder, node --test as
    the invocation builds it, the report read as the observer reads it."""
    repo = node_project(tmp_path / "repo", "node-test", buggy=False)
    command = ["node", "--test", *named]
    canaries = NodeTest().canaries(command, [], drawn())
    for rel, text in canaries.files.items():
        (repo / rel).write_bytes(text)
    given = RunContext(
        toolchain=Toolchain(program=shutil.which("node")), channel=None, env={},
        dependencies={}, work=str(repo), cwd=str(repo), reports=str(tmp_path),
        canaries=canaries,
    )  # fmt: skip
    invocation = NodeTest().invocation(command, given)

    done = subprocess.run(invocation.argv, cwd=repo, capture_output=True, check=False)

    assert done.returncode == canaries.failed_exit_code
    assert invocation.report is not None
    tests = NodeTest().results(Path(invocation.report).read_bytes()).counts["tests"]
    assert {c.name: tests[c.name] for c in canaries.tests} == {
        c.name: "passed" if c.passes else "failed" for c in canaries.tests
    }
    assert (tests["test::add"], tests["test::add zero"]) == ("passed", "passed")
    assert len({c.name for c in canaries.tests} | set(canaries.files)) == 3  # drawn for the run


def test_mocha_adds_its_canaries_to_what_the_command_and_configuration_name() -> None:
    canaries = Mocha().canaries(["mocha", "test/"], [], drawn())
    (name,) = canaries.files
    given = RunContext(
        toolchain=Toolchain(program="/usr/bin/node"), channel=None, env={},
        dependencies={"node_modules": "/run/claim/work/node_modules"}, work="/run/claim/work",
        cwd="/run/claim/work", reports="/run/claim/report", canaries=canaries,
    )  # fmt: skip

    argv = Mocha().invocation(["mocha", "test/"], given).argv

    assert argv[2] == "test/"
    assert argv[-4:] == ("--no-parallel", "--no-bail", "--file", name)
    assert [c.passes for c in canaries.tests] == [True, False, False, False]
    assert all(c.name.startswith(f"{name}::{name} > claim canary ") for c in canaries.tests)


@pytest.mark.parametrize(
    ("runner", "command", "found", "imported"),
    [
        (Jest(), ["jest", "-c", "jest.ci.js", "--runInBand"], [], 'Options("jest.ci.js")'),
        (Jest(), ["jest", "--config=jest.ci.js"], [], 'Options("jest.ci.js")'),
        (Jest(), ["jest"], [b"jest.config.js"], "readInitialOptions(undefined)"),
        (Vitest(), ["vitest", "run", "--config", "ci.config.ts"], [b"vite.config.ts"],
         'require("./ci.config.ts")'),
        (Vitest(), ["vitest"], [b"vite.config.ts", b"vitest.config.mts"],
         'require("./vitest.config.mts")'),
        (Vitest(), ["vitest"], [b"src/vitest.config.ts"], "const found = {};"),
    ],
)  # fmt: skip
def test_jest_and_vitest_start_with_the_observers_configuration_reading_the_projects(
    runner: Runner, command: list[str], found: list[bytes], imported: str
) -> None:
    """The command's own configuration option gives way to the observer's, which reads the
    configuration the runner would have read (the one named, else the first it looks for)
    and adds the canaries' setup file, planted beside it."""
    canaries = runner.canaries(command, found, drawn())
    assert canaries is not None
    assert canaries.config is not None
    modules = "/run/claim/work/node_modules"
    given = replace(context(node_modules=modules), canaries=canaries)

    argv = runner.invocation(command, given).argv

    assert argv[-2:] == ("--config", f"/run/claim/work/{canaries.config}")
    assert not {"-c", "jest.ci.js", "ci.config.ts"} & set(argv)
    assert not [arg for arg in argv[:-2] if arg.startswith("--config")]
    assert "--runInBand" in argv or command[-1] != "--runInBand"
    configuration = canaries.files[canaries.config].decode()
    assert imported in configuration
    # jest's: a first setup file too, which keeps jest's own matchers for the canaries.
    for setup in set(canaries.files) - {canaries.config}:
        assert f'"{setup}"' in configuration
    assert [c.passes for c in canaries.tests] == [True, False, False, False]
    assert all(c.in_each_file and c.reported in (None, "passed") for c in canaries.tests)


def test_package_runners_start_their_own_script_from_the_installed_lockfile() -> None:
    modules = "/run/claim/work/node_modules"
    vitest = Vitest().invocation(["npx", "vitest", "run", "test/"], context(node_modules=modules))
    jest = Jest().invocation(["jest", "--runInBand"], context(node_modules=modules))
    mocha = Mocha().invocation(["mocha"], context(node_modules=modules))

    assert vitest.argv[:4] == ("/usr/bin/node", f"{modules}/vitest/vitest.mjs", "run", "test/")
    assert "--outputFile.junit=/run/claim/report/vitest.xml" in vitest.argv
    assert jest.argv[:3] == ("/usr/bin/node", f"{modules}/jest/bin/jest.js", "--runInBand")
    assert "--outputFile=/run/claim/report/jest.json" in jest.argv
    assert mocha.argv[:2] == ("/usr/bin/node", f"{modules}/mocha/bin/mocha.js")
    assert mocha.argv[-2:] == ("--reporter-option", "output=/run/claim/report/mocha.xml")
    for runner in (Vitest(), Jest(), Mocha()):
        spec = runner.dependencies(
            [runner.name], lambda name: b"{}" if name == "package-lock.json" else None
        )
        assert spec is not None
        assert spec.lockfiles == ("package.json", "package-lock.json")
        assert spec.install[:3] == ("npm", "ci", "--ignore-scripts")
        assert dict(spec.mounts) == {"node_modules": "node_modules"}


def test_a_package_runner_without_its_installed_packages_is_not_run() -> None:
    with pytest.raises(ObservationFailed, match="installed from the lockfile"):
        Vitest().invocation(["vitest", "run"], context())


def test_the_toolchain_is_the_operators_node_outside_the_work_tree(tmp_path: Path) -> None:
    found = node_toolchain(None, tmp_path)
    planted = tmp_path / "bin" / "node"
    planted.parent.mkdir()
    planted.write_text("#!/bin/sh\nexit 0\n")

    assert found.program is not None
    assert found.probe == (found.program, "--version")
    with pytest.raises(UsageError, match="inside the work tree"):
        node_toolchain(str(tmp_path), tmp_path)
    with pytest.raises(UsageError, match="no node program"):
        node_toolchain(str(tmp_path / "nowhere"), tmp_path / "other")


def test_node_test_names_tests_by_suite_and_never_passes_a_file_that_ran_none() -> None:
    results = NodeTest().results(report("node-test.xml"))

    assert results.counts["tests"] == {
        "test::test/broken.test.js": "failed",
        "test::add": "failed",
        "test::add zero": "passed",
        "test::calc > is a function": "passed",
        "test::calc > later": "skipped",
        # process.exit(0) before any test: the file "passed" for node, skipped here.
        "test::test/exits.test.js": "skipped",
    }
    assert (results.counts["passed"], results.counts["failed"]) == (2, 2)
    assert results.failures[1] == {
        "test": "test::add",
        "outcome": "failed",
        "message": "Expected values to be strictly equal:-1 !== 5",
    }


def test_vitest_names_tests_by_file_and_describe() -> None:
    results = Vitest().results(report("vitest.xml"))

    assert results.counts["tests"] == {
        "test/broken.test.js::test/broken.test.js": "failed",
        "test/calc.test.js::add": "failed",
        "test/calc.test.js::calc > adds zero": "passed",
        "test/calc.test.js::calc > nested > later": "skipped",
    }
    assert results.failures[1]["message"] == "expected -1 to be 5 // Object.is equality"


def test_jest_names_tests_by_file_and_describe_and_a_file_that_did_not_run_is_an_error() -> None:
    results = Jest().results(report("jest.json"))

    assert results.counts["tests"] == {
        "test/calc.test.js::add": "failed",
        "test/calc.test.js::calc > adds zero": "passed",
        "test/calc.test.js::calc > nested > later": "skipped",
        "test/broken.test.js::test/broken.test.js": "error",
    }
    assert results.failures[0]["message"] == (
        "Error: expect(received).toBe(expected) // Object.is equality Expected: 5 Received: -1"
    )
    assert results.failures[1]["message"].startswith("● Test suite failed to run")


def test_mocha_names_tests_by_file_and_suite() -> None:
    results = Mocha().results(report("mocha.xml"))

    assert results.counts["tests"] == {
        "test/calc.test.js::add": "failed",
        "test/calc.test.js::calc > adds zero": "passed",
        "test/calc.test.js::calc nested > later": "skipped",
    }
    assert results.failures[0]["message"] == "Expected values to be strictly equal: -1 !== 5"


@pytest.mark.parametrize(
    ("runner", "name"),
    [(NodeTest(), "node-test.xml"), (Vitest(), "vitest.xml"), (Mocha(), "mocha.xml"),
     (Jest(), "jest.json")],
)  # fmt: skip
def test_a_report_cut_short_is_no_result(runner: NodeTest, name: str) -> None:
    whole = report(name)

    for cut in (b"", whole[: len(whole) // 2]):
        with pytest.raises(ObservationFailed, match=r"not XML|not JSON"):
            runner.results(cut)


def test_a_jest_report_of_another_shape_is_refused() -> None:
    shapes: list[object] = [[], {"testResults": {}}, {"testResults": [{"name": "a"}]}]
    for document in shapes:
        with pytest.raises(ObservationFailed, match="jest's report"):
            Jest().results(json.dumps(document).encode())
    unknown = {"testResults": [{"name": "a", "assertionResults": [
        {"ancestorTitles": [], "title": "t", "status": "greenish"}]}]}  # fmt: skip
    with pytest.raises(ObservationFailed, match="unknown test status"):
        Jest().results(json.dumps(unknown).encode())


def test_a_report_with_no_test_counts_zero_for_min_tests() -> None:
    empty = NodeTest().results(b'<?xml version="1.0"?><testsuites></testsuites>')

    assert (empty.counts["passed"], empty.counts["tests"]) == (0, {})


def test_a_failure_summary_keeps_the_message_and_drops_stack_and_colour() -> None:
    text = "\x1b[31mexpected 1\x1b[0m\n\nReceived: 2\n    at Object.<anonymous> (a.js:1:1)\n"

    assert summary(text) == "expected 1 Received: 2"
