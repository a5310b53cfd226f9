"""The Go runner: what it recognises, detects and protects, how it runs go test, and what it
reads from go test -json (reports captured from real runs, see reports/README.md)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from completion_claim.cli import run
from completion_claim.errors import UsageError
from completion_claim.observe.runners import runner_for
from completion_claim.observe.runners.base import Canaries, ReportSource, RunContext
from completion_claim.observe.runners.binaries import EVERY_BINARY
from completion_claim.observe.runners.go import GoTest, read_events
from completion_claim.observe.runners.results import Results
from tests.fixtures.projects import write_files
from tests.gate.test_go_gate import (
    CALC,
    CALC_TEST,
    CALC_WRONG,
    FORGED_FRAMING,
    GO_MOD,
    OTHER_TEST,
    READS_THE_CANARIES,
    go_project,
    narrowed,
)

REPORTS = Path(__file__).parent / "reports"
GO = GoTest()
needs_go = pytest.mark.needs_tool("go")


def report(name: str) -> bytes:
    return (REPORTS / name).read_bytes()


def test_the_goroot_is_asked_once_until_the_go_program_changes(tmp_path: Path) -> None:
    """A gate resolves the toolchain twice per stop (its configuration, then the run): the
    second time starts no go program, unless the program is another file by then."""
    goroot, asked = tmp_path / "go", tmp_path / "asked"
    script = f'#!/bin/sh\necho "$*" >> {asked}\necho {goroot}\n'
    write_files(goroot, {"bin/go": script})
    program = goroot / "bin" / "go"
    program.chmod(0o755)
    for _ in range(2):
        toolchain = runner_for(["go", "test"]).toolchain(
            ["go", "test"], str(program), tmp_path / "work"
        )
        assert toolchain.env["GOROOT"] == str(goroot)
    assert asked.read_text().splitlines() == ["env GOROOT"]

    program.write_text(script + "# a new release\n")
    runner_for(["go", "test"]).toolchain(["go", "test"], str(program), tmp_path / "work")
    assert asked.read_text().splitlines() == ["env GOROOT", "env GOROOT"]


def test_go_test_is_recognised_as_go_and_nothing_else_is() -> None:
    assert runner_for(["go", "test", "./..."]).name == "go"
    assert runner_for(["/usr/local/go/bin/go", "test", "-run", "TestAdd", "./..."]).name == "go"
    assert runner_for(["go", "vet", "./..."]).name != "go"
    assert runner_for(["gotest"]).name != "go"


def test_a_module_is_detected_by_its_go_mod(tmp_path: Path) -> None:
    assert GO.detect(tmp_path) is None
    (tmp_path / "go.mod").write_text("module example.com/calc\n\ngo 1.19\n")
    detected = GO.detect(tmp_path)
    assert detected is not None
    assert detected.command == ("go", "test", "./...")


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("calc_test.go", True),
        ("internal/x/x_test.go", True),
        ("go.mod", True),
        ("sub/go.sum", True),
        ("go.work", True),
        ("testdata/golden.txt", True),
        ("pkg/testdata/in/a.json", True),
        ("calc.go", False),
        ("testing.go", False),
        ("testdata.go", False),
    ],
)
def test_test_files_test_data_and_module_files_are_protected(path: str, protected: bool) -> None:
    assert GO.protected(path.encode()) is protected


def test_the_module_files_are_recorded_as_configuration() -> None:
    assert GO.configuration(b"go.mod")
    assert GO.configuration(b"a/go.sum")
    assert not GO.configuration(b"calc_test.go")


@pytest.mark.parametrize(
    "command",
    [
        ["go", "test", "-modfile=other.mod", "./..."],
        ["go", "test", "-mod=vendor", "./..."],
        ["go", "test", "-overlay", "o.json", "./..."],
        ["go", "test", "-c", "./..."],
        ["go", "test", "-exec", "./fake", "./..."],
    ],
)
def test_flags_that_choose_other_inputs_or_run_nothing_are_refused(command: list[str]) -> None:
    with pytest.raises(UsageError, match="remove -"):
        GO.check(command, None)


def test_flags_after_args_are_the_test_binarys_and_a_junit_report_is_refused() -> None:
    GO.check(["go", "test", "./...", "-args", "-c"], None)
    with pytest.raises(UsageError, match="-json"):
        GO.check(["go", "test", "./..."], "report.xml")


@needs_go
def test_the_operators_go_runs_from_its_real_goroot_offline(tmp_path: Path) -> None:
    toolchain = GO.toolchain(["go", "test", "./..."], None, tmp_path)
    assert toolchain.program is not None
    assert toolchain.program.endswith("/bin/go")
    goroot = toolchain.env["GOROOT"]
    assert Path(goroot, "bin", "go").is_file()
    assert not Path(goroot).is_symlink()
    assert toolchain.env["GOTOOLCHAIN"] == "local"
    assert toolchain.env["GOFLAGS"] == "-mod=mod"
    assert toolchain.env["GOWORK"] == "off"
    deps = {"gomodcache": "/run/claim/deps/gomodcache", "gocache": "/run/claim/deps/gocache"}
    context = RunContext(toolchain, None, {"HOME": "/tmp"}, deps,
                         "/run/claim/work", "/run/claim/work", "/run/claim/report")  # fmt: skip
    invocation = GO.invocation(["go", "test", "-json", "-count=1", "./..."], context)
    # The run's build cache starts as a copy of the operator's seed, then go test runs.
    assert invocation.argv[:2] == ("/bin/sh", "-c")
    assert invocation.argv[3:] == (
        "/run/claim/deps/gocache", toolchain.program, "test", "-json", "-count=1", "./...",
    )  # fmt: skip
    assert invocation.source is ReportSource.STDOUT
    # The run's scratch folder and build cache are in its home (the sandbox's /tmp).
    assert invocation.env == {
        "GOPROXY": "off", "GOSUMDB": "off", "GOMODCACHE": "/run/claim/deps/gomodcache",
        "GOPATH": "/tmp/go", "GOCACHE": "/tmp/go-build",
    }  # fmt: skip


def test_a_go_program_in_the_workspace_is_refused_before_it_runs(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "go"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\ntouch ran\n")
    fake.chmod(0o755)
    with pytest.raises(UsageError, match="inside the workspace"):
        GO.toolchain(["go", "test", "./..."], str(tmp_path / "bin"), tmp_path)
    assert not (tmp_path / "ran").exists()


def test_modules_are_downloaded_from_go_mod_and_go_sum_into_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOPROXY", "https://goproxy.example.invalid")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.invalid:3128")
    spec = GO.dependencies(["go", "test", "./..."], lambda _: None)
    # The operator's module and proxy settings reach the install, never the tests.
    assert spec.install_env["GOPROXY"] == "https://goproxy.example.invalid"
    assert spec.install_env["HTTPS_PROXY"] == "http://proxy.example.invalid:3128"
    assert spec.lockfiles == ("go.mod", "go.sum")
    assert spec.optional == ("go.sum",)  # a module with no requirement has none
    assert "go mod download" in spec.install[-1]
    assert spec.install_env["GOMODCACHE"] == "{entry}/gomodcache"
    assert spec.install_env["GOCACHE"] == "{entry}/gocache"  # the standard library, built once
    assert set(spec.mounts) == {"gomodcache", "gocache"}


# --- go test -json ------------------------------------------------------------------------------


def test_each_test_and_subtest_is_counted_by_package_and_name() -> None:
    results = read_events(report("go-mixed.jsonl"))
    assert results.none_because == ""
    assert results.counts["tests"] == {
        "example.com/calc::TestAdd": "failed",
        "example.com/calc::TestTable": "failed",
        "example.com/calc::TestTable/zero": "failed",
        "example.com/calc::TestTable/same": "passed",
        "example.com/calc::TestSkip": "skipped",
        "example.com/calc/ok::TestFine": "passed",
        "example.com/calc/broken::[build failed]": "error",
        "example.com/calc/panics::TestNil": "failed",
    }
    assert {k: results.counts[k] for k in ("passed", "failed", "errors", "skipped")} == {
        "passed": 2, "failed": 4, "errors": 1, "skipped": 1,
    }  # fmt: skip


def test_a_failures_message_is_what_the_test_said_without_go_tests_framing() -> None:
    messages = {f["test"]: f["message"] for f in read_events(report("go-mixed.jsonl")).failures}
    assert messages["example.com/calc::TestAdd"] == "calc_test.go:7: Add(2, 3) = -1, want 5"
    # A parent with nothing of its own says what its failed subtest said.
    assert messages["example.com/calc::TestTable"] == "calc_test.go:18: Add(0, 4) = -4, want 4"
    assert messages["example.com/calc/panics::TestNil"].startswith("panic: assignment to entry")
    assert messages["example.com/calc/broken::[build failed]"] == "the package did not build"


def test_a_passing_run_counts_every_test() -> None:
    results = read_events(report("go-passing.jsonl"))
    assert (results.counts["passed"], results.counts["failed"], results.counts["skipped"]) == (
        5, 0, 1,
    )  # fmt: skip
    assert results.failures == []


def test_a_test_binary_that_exits_0_mid_test_counts_nothing() -> None:
    """syscall.Exit(0) from the code under test, after printing a PASS line: Go 1.19's
    test2json even files a pass for the test, but no event ends the package."""
    results = read_events(report("go-exited.jsonl"))
    assert results.counts == {}
    assert "did not finish package example.com/calc" in results.none_because


def test_a_test_binary_that_exits_0_before_its_tests_counts_nothing() -> None:
    """os.Exit(0) in an init function of the code under test: go test says ok, with no test."""
    results = read_events(report("go-init-exited.jsonl"))
    assert results.counts == {}
    assert "example.com/ie passed without its test binary saying PASS" in results.none_because


@pytest.mark.parametrize("cut", [1, 5, -1])
def test_a_stream_cut_short_counts_nothing(cut: int) -> None:
    lines = report("go-passing.jsonl").splitlines(keepends=True)
    results = read_events(b"".join(lines[:cut]))
    assert results.counts == {}
    assert "did not finish package" in results.none_because


def test_an_event_after_its_packages_end_counts_nothing() -> None:
    late = json.dumps({"Action": "pass", "Package": "example.com/calc", "Test": "TestLate"})
    results = read_events(report("go-passing.jsonl") + late.encode() + b"\n")
    assert results.counts == {}
    assert "follows the end of package example.com/calc" in results.none_because


def test_nothing_reported_counts_nothing() -> None:
    assert read_events(b"").none_because == "go test -json reported no package"
    assert read_events(b"{not json\n").counts == {}


def test_a_build_failure_reported_as_events_names_the_compilers_first_line() -> None:
    """Go 1.24 and later report a build as events of its own (cmd/test2json's documentation):
    written by hand in that shape, as no such Go is installed here."""
    events = [
        {"ImportPath": "example.com/calc [example.com/calc.test]", "Action": "build-output",
         "Output": "# example.com/calc [example.com/calc.test]\n"},
        {"ImportPath": "example.com/calc [example.com/calc.test]", "Action": "build-output",
         "Output": "./calc.go:4:32: undefined: c\n"},
        {"ImportPath": "example.com/calc [example.com/calc.test]", "Action": "build-fail"},
        {"Action": "start", "Package": "example.com/calc"},
        {"Action": "output", "Package": "example.com/calc",
         "Output": "FAIL\texample.com/calc [build failed]\n"},
        {"Action": "fail", "Package": "example.com/calc", "Elapsed": 0,
         "FailedBuild": "example.com/calc [example.com/calc.test]"},
    ]  # fmt: skip
    results = read_events(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    assert results.counts["tests"] == {"example.com/calc::[build failed]": "error"}
    assert results.failures[0]["message"] == "./calc.go:4:32: undefined: c"


def test_a_package_that_failed_without_a_failed_test_is_one_error() -> None:
    events = [
        {"Action": "run", "Package": "example.com/m", "Test": "TestA"},
        {"Action": "pass", "Package": "example.com/m", "Test": "TestA"},
        {"Action": "output", "Package": "example.com/m", "Output": "panic: in TestMain\n"},
        {"Action": "fail", "Package": "example.com/m"},
    ]
    results = read_events(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    assert results.counts["tests"] == {
        "example.com/m::TestA": "passed",
        "example.com/m::[package failed]": "error",
    }
    assert results.failures[0]["message"] == "panic: in TestMain"


# --- a real run through claim observe test-run ---------------------------------------------------


@needs_go
def test_claim_observe_test_run_counts_a_real_go_test_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = go_project(tmp_path / "repo")
    write_files(repo, {"calc.go": CALC_WRONG})
    claim = tmp_path / "claim.json"
    assert run(["new", str(claim), "--task-id", "t-1", "--outcome", "fixed Add"]) == 0
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0
    required = ["--require-test", "example.com/calc::TestTrue"]
    assert run(["observe", "test-run", str(claim), "--cwd", str(repo), *required,
                "--", "go", "test", "./..."]) == 0  # fmt: skip
    [item] = json.loads(claim.read_text())["evidence"]
    # TestAdd, TestAddZero and its second subtest (Add(0, 4)): a parent fails with its subtest.
    assert item["observed_value"]["failed"] == 3
    assert item["observed_value"]["tests"]["example.com/calc::TestTrue"] == "passed"
    assert item["details"]["failures"][0] == {
        "test": "example.com/calc::TestAdd", "outcome": "failed",
        "message": "calc_test.go:7: Add(2, 3) = 6, want 5",
    }  # fmt: skip
    assert item["details"]["sandbox"].startswith("bubblewrap")


# --- canaries (issue 30) -------------------------------------------------------------------------

WORDS = ("c0ffee01", "5eed0002", "0dd00003", "a11ce004", "b0b00005")
PASSES, FAILS = (f"{EVERY_BINARY}::TestClaimCanary{word}" for word in WORDS[3:])
# Two packages with tests, one of them an external test package, and one with none.
MODULE = {"go.mod": GO_MOD, "calc.go": CALC, "calc_test.go": CALC_TEST,
          "other_test.go": OTHER_TEST, "util/util.go": "package util\n",
          "util/util_test.go": OTHER_TEST.replace("package calc", "package util_test"),
          "plain/plain.go": "package plain\n", "testdata/x_test.go": "not go\n"}  # fmt: skip


def planted(files: list[str], command: tuple[str, ...] = ("go", "test", "./...")) -> Canaries:
    canaries = GO.canaries(command, [f.encode() for f in files], iter(WORDS).__next__)
    assert canaries is not None
    return canaries


def test_canaries_go_into_each_package_folder_with_tests_named_for_every_test_binary() -> None:
    canaries = planted(list(MODULE))
    assert sorted(canaries.files) == [
        "claim_canary_c0ffee01_test.go", "util/claim_canary_c0ffee01_test.go",
    ]  # fmt: skip
    assert [(c.name, c.passes) for c in canaries.tests] == [(PASSES, True), (FAILS, False)]
    assert canaries.failed_exit_code == 1
    source = canaries.files["util/claim_canary_c0ffee01_test.go"].decode()
    assert 'got, want := "5eed0002", "0dd00003"' in source  # the drawn values
    assert "t.Fatalf(" in source
    assert "t.Errorf(" in source
    assert not {"Pass", "Fail"} & set(re.findall(r"Pass|Fail", source))  # names say nothing
    assert GO.canaries(("go", "test"), [b"go.mod", b"calc.go"], iter(WORDS).__next__) is None


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["-run", "TestAdd/zero", "./..."],
         ["-run", "^(?:TestClaimCanarya11ce004|TestClaimCanaryb0b00005)$|TestAdd/zero",
          "./..."]),
        (["--run=TestAdd", "-failfast", "./...", "-args", "-failfast"],
         ["-run=^(?:TestClaimCanarya11ce004|TestClaimCanaryb0b00005)$|TestAdd",
          "./...", "-args", "-failfast"]),
    ],
)  # fmt: skip
def test_a_run_pattern_also_runs_the_canaries_and_failfast_is_dropped(
    command: list[str], expected: list[str]
) -> None:
    context = RunContext(GO.toolchain(["go"], None, Path("/nonexistent")), None, {"HOME": "/h"},
                         {}, "/w", "/w", "/r", planted(list(MODULE)))  # fmt: skip
    argv = GO.invocation(["go", "test", *command], context).argv
    assert argv[argv.index("--") + 1 :][-len(expected) :] == tuple(expected)
    # Each test binary starts once its folder's canary file is gone (go splits -exec's value).
    assert argv[argv.index("--") + 2 : argv.index("--") + 5] == (
        "test", "-json",
        "-exec=/bin/sh -c 'rm -f claim_canary_c0ffee01_test.go; exec \"$0\" \"$@\"'",
    )  # fmt: skip


def run_with_canaries(root: Path, files: dict[str, str]) -> tuple[int, Results]:
    """go test ./... as the observer builds it, with the canaries planted, outside the sandbox
    (the host's build cache, to spare the CPU): its exit code and results."""
    write_files(root, files)
    canaries = planted(list(files))
    for rel, text in canaries.files.items():
        (root / rel).write_bytes(text)
    toolchain = GO.toolchain(["go"], None, root)
    context = RunContext(toolchain, None, {"HOME": str(root)}, {}, str(root), str(root),
                         str(root), canaries)  # fmt: skip
    invocation = GO.invocation(["go", "test", "./..."], context)
    env = os.environ | dict(toolchain.env) | dict(invocation.env)
    del env["GOCACHE"], env["GOPATH"]
    done = subprocess.run(invocation.argv, cwd=root, env=env, capture_output=True, check=False)
    return done.returncode, GO.results(done.stdout)


@needs_go
def test_the_canaries_run_in_every_test_binary_with_their_folders_package_clause(
    tmp_path: Path,
) -> None:
    exit_code, results = run_with_canaries(tmp_path, MODULE)
    assert exit_code == 1, results
    tests = results.counts["tests"]
    assert (tests[PASSES], tests[FAILS]) == ("passed", "failed")
    assert tests["example.com/calc::TestAdd"] == "passed"
    assert tests["example.com/calc/util::TestTrue"] == "passed"
    assert not [name for name in tests if "Canary" in name and name not in (PASSES, FAILS)]
    assert "package example.com/calc" not in str(results.failures)  # no [package failed]
    assert not list(tmp_path.glob("**/claim_canary_*"))  # removed before each binary started


@needs_go
def test_attack_126_framing_printed_by_the_code_leaves_the_canaries_unrun(tmp_path: Path) -> None:
    exit_code, results = run_with_canaries(tmp_path, MODULE | {"calc.go": FORGED_FRAMING})
    assert exit_code == 1  # util's must-fail canary: the exit code the observer expects
    tests = results.counts["tests"]
    assert tests["example.com/calc::TestAdd"] == "passed"
    # util's test binary ran them, calc's never did: the stream is not the testing package's.
    assert (tests[PASSES], tests[FAILS]) == ("error", "error")
    messages = {failure["test"]: failure["message"] for failure in results.failures}
    assert messages[FAILS] == "the test binary of example.com/calc did not run it"


@needs_go
def test_attack_128_code_that_reads_the_canaries_source_finds_none(tmp_path: Path) -> None:
    exit_code, results = run_with_canaries(tmp_path, MODULE | {"calc.go": READS_THE_CANARIES})
    assert exit_code == 1
    tests = results.counts["tests"]
    assert tests["example.com/calc::TestAdd"] == "passed"  # forged
    messages = {failure["test"]: failure["message"] for failure in results.failures}
    assert (tests[PASSES], tests[FAILS]) == ("error", "error")
    assert messages[PASSES] == "the test binary of example.com/calc did not run it"


@needs_go
def test_attack_129_a_run_narrowed_by_the_code_leaves_the_canaries_unrun(tmp_path: Path) -> None:
    exit_code, results = run_with_canaries(tmp_path, MODULE | {"calc.go": narrowed("^TestTrue$")})
    tests = results.counts["tests"]
    assert "example.com/calc::TestAdd" not in tests  # narrowed away
    assert (tests[PASSES], tests[FAILS]) == ("error", "error")
    messages = {failure["test"]: failure["message"] for failure in results.failures}
    assert messages[PASSES] == "the test binary of example.com/calc did not run it"
    assert exit_code == 1


@needs_go
def test_attack_129_a_narrowing_that_keeps_the_canaries_leaves_the_failing_test_unrun(
    tmp_path: Path,
) -> None:
    """Knowing the canaries' prefix, the code keeps them: the canaries hold, and the test it
    narrowed away is missing from the report, which the start's baseline requires."""
    _, results = run_with_canaries(
        tmp_path, MODULE | {"calc.go": narrowed("^TestClaimCanary|^TestTrue$")}
    )
    tests = results.counts["tests"]
    assert (tests[PASSES], tests[FAILS]) == ("passed", "failed")
    assert "example.com/calc::TestAdd" not in tests


def test_a_test_binary_that_failed_before_any_test_answers_for_no_canary() -> None:
    """It panicked in an init function, or did not build: its failure is what the report says,
    and the canaries are the other binaries'."""
    canary = "TestClaimCanarya11ce004"
    events = [
        {"Action": "output", "Package": "example.com/m", "Output": "panic: in init\n"},
        {"Action": "fail", "Package": "example.com/m"},
        {"Action": "run", "Package": "example.com/m/util", "Test": canary},
        {"Action": "pass", "Package": "example.com/m/util", "Test": canary},
        {"Action": "output", "Package": "example.com/m/util", "Output": "PASS\n"},
        {"Action": "pass", "Package": "example.com/m/util"},
    ]
    results = read_events(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    assert results.counts["tests"] == {
        "example.com/m::[package failed]": "error",
        f"{EVERY_BINARY}::{canary}": "passed",
    }


# --- the repeated tests (attack 183) ------------------------------------------------------------

AGAIN = b"claim: again, in another order: TestAdd TestAddZero\n"


def events(*lines: tuple[str, str | None]) -> bytes:
    """A package's stream: each (action, test) event, then the package's own pass."""
    out = [{"Action": action, "Package": "example.com/calc", "Test": test}
           for action, test in lines]  # fmt: skip
    out += [{"Action": "output", "Package": "example.com/calc", "Output": "PASS\n"},
            {"Action": "pass", "Package": "example.com/calc"}]  # fmt: skip
    return b"".join(json.dumps(event).encode() + b"\n" for event in out)


def test_the_second_run_of_the_repeated_tests_counts_with_the_worst_outcome_standing() -> None:
    first = events(("run", "TestAdd"), ("pass", "TestAdd"), ("run", "TestAddZero"),
                   ("pass", "TestAddZero"), ("run", "TestTrue"), ("pass", "TestTrue"))  # fmt: skip
    # -count=2: TestAdd passes once and fails once in the same test binary.
    again = events(("run", "TestAdd"), ("pass", "TestAdd"), ("run", "TestAdd"), ("fail", "TestAdd"),
                   ("run", "TestAddZero"), ("pass", "TestAddZero"))  # fmt: skip

    results = read_events(first + AGAIN + again)

    assert results.counts["tests"] == {
        "example.com/calc::TestAdd": "failed",
        "example.com/calc::TestAddZero": "passed",
        "example.com/calc::TestTrue": "passed",
    }


def test_a_test_only_the_second_run_ran_counts_for_nothing() -> None:
    """The second run has no canaries: code that narrowed the first run away from TestAdd and
    prints a pass for it in the second adds no test."""
    first = events(("run", "TestAddZero"), ("pass", "TestAddZero"))
    again = events(("run", "TestAdd"), ("pass", "TestAdd"), ("run", "TestAddZero"),
                   ("pass", "TestAddZero"))  # fmt: skip

    results = read_events(first + AGAIN + again)

    assert results.counts["tests"] == {"example.com/calc::TestAddZero": "passed"}


def test_a_repeated_test_the_second_run_left_out_is_an_error_and_a_cut_one_counts_nothing() -> None:
    first = events(("run", "TestAdd"), ("pass", "TestAdd"), ("run", "TestAddZero"),
                   ("pass", "TestAddZero"))  # fmt: skip

    left_out = read_events(first + AGAIN + events(("run", "TestAddZero"), ("pass", "TestAddZero")))
    cut = read_events(first + AGAIN + events(("run", "TestAdd"))[:-60])

    assert left_out.counts["tests"]["example.com/calc::TestAdd"] == "error"
    assert left_out.failures[0]["message"] == "it did not run a second time"
    assert cut.counts == {}
    assert cut.none_because.startswith("the second run of the repeated tests: ")


def test_the_repeated_tests_run_again_by_their_parents_name_shuffled_twice() -> None:
    toolchain = GO.toolchain(["go"], None, Path("/nonexistent"))
    context = RunContext(toolchain, None, {"HOME": "/h"}, {}, "/w", "/w", "/r",
                         repeat=("example.com/calc::TestAdd",
                                 "example.com/calc::TestAddZero/zero#01",
                                 "example.com/calc::[build failed]"))  # fmt: skip

    argv = GO.invocation(["go", "test", "-run", "TestA", "-count=3", "-v", "./..."], context).argv

    assert argv[:5] == ("/bin/sh", "-c", argv[2], "sh", "TestAdd TestAddZero")
    assert shlex.split(argv[5]) == [
        toolchain.program, "test", "-json", "-count=2", "-shuffle=on",
        "-run=^(?:TestAdd|TestAddZero)$", "-v", "./...",
    ]  # fmt: skip
    assert argv[6:] == (toolchain.program, "test", "-json", "-run", "TestA", "-count=3", "-v",
                        "./...")  # fmt: skip
