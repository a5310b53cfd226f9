"""The Rust runner: what it recognises, detects and protects, how it runs cargo test, and what it
reads from libtest's JSON events (reports captured from real runs, see reports/README.md)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from completion_claim.cli import run
from completion_claim.errors import ObservationFailed, UsageError
from completion_claim.observe.runners import runner_for
from completion_claim.observe.runners.base import Canaries, ReportSource, RunContext
from completion_claim.observe.runners.binaries import EVERY_BINARY
from completion_claim.observe.runners.results import Results
from completion_claim.observe.runners.rust import BINARY_EVENT, CargoTest, read_events
from completion_claim.observe.sandbox import Sandbox
from tests.fixtures.projects import write_files
from tests.gate.test_rust_gate import (
    ARITH,
    CARGO_LOCK,
    CARGO_TOML,
    FORGED_EVENTS,
    LIB,
    LIB_BUGGY,
    LIB_WRONG,
    rust_project,
)

REPORTS = Path(__file__).parent / "reports"
CARGO = CargoTest()
needs_cargo = pytest.mark.needs_tool("cargo")


def report(name: str) -> bytes:
    return (REPORTS / name).read_bytes()


def test_cargo_test_is_recognised_and_cargo_build_is_not() -> None:
    assert runner_for(["cargo", "test"]).name == "cargo"
    assert runner_for(["/opt/rust/bin/cargo", "test", "--workspace"]).name == "cargo"
    assert runner_for(["cargo", "+nightly", "test"]).name == "cargo"
    assert runner_for(["cargo", "build"]).name != "cargo"


def test_a_package_is_detected_by_its_cargo_toml(tmp_path: Path) -> None:
    assert CARGO.detect(tmp_path) is None
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "calc"\n')
    detected = CARGO.detect(tmp_path)
    assert detected is not None
    assert detected.command == ("cargo", "test")


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("tests/arith.rs", True),
        ("tests/common/mod.rs", True),
        ("crates/calc/tests/arith.rs", True),
        ("Cargo.toml", True),
        ("crates/calc/Cargo.toml", True),
        ("Cargo.lock", True),
        ("build.rs", True),
        ("crates/calc/build.rs", True),
        (".cargo/config.toml", True),
        (".cargo/config", True),
        ("rust-toolchain.toml", True),
        ("rust-toolchain", True),
        ("src/lib.rs", False),  # unit tests share it with the code: see docs/threat-model.md
        ("src/tests.rs", False),
        ("tests/README.md", False),
    ],
)
def test_integration_tests_build_scripts_and_cargo_files_are_protected(
    path: str, protected: bool
) -> None:
    assert CARGO.protected(path.encode()) is protected


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["cargo", "+nightly", "test"], "+nightly"),
        (["cargo", "test", "--no-run"], "--no-run"),
        (["cargo", "test", "--config", "x=1"], "--config"),
        (["cargo", "test", "--message-format=json"], "--message-format"),
        (["cargo", "test", "--", "--format", "pretty"], "--format"),
        (["cargo", "test", "--", "-Zunstable-options"], "-Z"),
        (["cargo", "test", "--", "--nocapture"], "--nocapture"),
        (["cargo", "test", "--", "--logfile", "x"], "--logfile"),
    ],
)
def test_options_that_change_the_report_or_run_nothing_are_refused(
    command: list[str], flag: str
) -> None:
    with pytest.raises(UsageError, match=f"remove {re.escape(flag)} "):
        CARGO.check(command, None)


def test_other_options_are_kept_and_a_junit_report_is_refused() -> None:
    CARGO.check(["cargo", "test", "--workspace", "--", "--include-ignored"], None)
    with pytest.raises(UsageError, match="libtest"):
        CARGO.check(["cargo", "test"], "report.xml")


@needs_cargo
def test_the_toolchain_is_the_real_sysroot_and_never_the_cargo_home(tmp_path: Path) -> None:
    toolchain = CARGO.toolchain(["cargo", "test"], None, tmp_path)
    assert toolchain.program is not None
    sysroot = os.path.dirname(os.path.dirname(toolchain.program))
    assert os.path.basename(os.path.realpath(toolchain.program)) == "cargo"  # not rustup's proxy
    assert Path(sysroot, "bin", "rustc").is_file()
    assert toolchain.readable in ((), (sysroot,))
    assert not any(".cargo" in folder.split("/") for folder in toolchain.readable)
    assert "CARGO_HOME" not in toolchain.env  # the run's own, in its home: see below
    # A stable compiler stays stable for the code; only libtest sees the variable as set.
    assert toolchain.env.get("RUSTC_BOOTSTRAP") in ("-1", None)


@needs_cargo
def test_the_run_asks_for_json_events_through_the_observers_runner(tmp_path: Path) -> None:
    toolchain = CARGO.toolchain(["cargo", "test"], None, tmp_path)
    context = RunContext(toolchain, None, {"HOME": "/tmp"}, {"vendor": "/run/claim/deps/vendor"},
                         "/run/claim/work", "/run/claim/work", "/run/claim/report")  # fmt: skip
    invocation = CARGO.invocation(["cargo", "test", "--lib", "--", "adds"], context)
    argv = list(invocation.argv)
    assert argv[:4] == [toolchain.program, "test", "--offline", "--no-fail-fast"]
    assert 'source.claim-vendor.directory="/run/claim/deps/vendor"' in argv
    assert any(a.startswith('target."cfg(all())".runner=') for a in argv)
    assert argv[-7:] == ["--lib", "--", "-Z", "unstable-options", "--format", "json", "adds"]
    assert invocation.source is ReportSource.STDOUT


def test_a_toolchain_folder_in_the_workspace_is_refused_before_it_runs(tmp_path: Path) -> None:
    for program in ("cargo", "rustc"):
        fake = tmp_path / "bin" / program
        fake.parent.mkdir(exist_ok=True)
        fake.write_text("#!/bin/sh\ntouch ran\n")
        fake.chmod(0o755)
    with pytest.raises(UsageError, match="inside the workspace"):
        CARGO.toolchain(["cargo", "test"], str(tmp_path), tmp_path)
    assert not (tmp_path / "ran").exists()


def test_crates_are_installed_from_the_lockfile_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.example.invalid:3128")
    spec = CARGO.dependencies(["cargo", "test"], lambda _: None)
    assert spec.install_env["https_proxy"] == "http://proxy.example.invalid:3128"
    assert spec.install_env["CRATES_DOWNLOAD"].endswith("/{crate}/{crate}-{version}.crate")
    assert spec.lockfiles == ("Cargo.lock",)
    assert spec.optional == ("Cargo.lock",)  # a crate without dependencies may have none
    # The crates, and cargo's record of the compiler's answers (made with no crate of the run's).
    assert spec.mounts == {"vendor": None, "rustc-info": None}
    # Messages name the vendor script's command, as before the record.
    python = spec.install[-1]
    assert spec.named == f"{python} -I -c import os; exec(os.environ['VENDOR_SCRIPT'])"


# --- libtest's events ---------------------------------------------------------------------------


def test_each_test_is_named_by_the_target_it_was_built_from() -> None:
    results = read_events(report("cargo-mixed.jsonl"))
    assert results.none_because == ""
    assert results.counts["tests"] == {
        "calc::tests::adds": "failed",
        "calc::tests::zero": "failed",
        "calc::tests::ignored": "skipped",
        "arith::adds_big": "failed",
        "arith::says_why": "failed",
        "doctest::src/lib.rs - add": "failed",
    }
    assert (results.counts["passed"], results.counts["failed"], results.counts["skipped"]) == (
        0, 5, 1,
    )  # fmt: skip


def test_a_doctest_is_named_by_its_item_and_two_of_one_item_count_as_the_worst() -> None:
    """Its line is left out of the name: a line added above renames no test (attack 103)."""
    events = [
        {"type": "suite", "event": "started", "test_count": 2},
        {"type": "test", "name": "src/lib.rs - double (line 7)", "event": "ok"},
        {"type": "test", "name": "src/lib.rs - double (line 11)", "event": "failed"},
        {"type": "suite", "event": "failed", "passed": 1, "failed": 1, "ignored": 0},
    ]
    results = read_events(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    assert results.counts["tests"] == {"doctest::src/lib.rs - double": "failed"}
    assert (results.counts["passed"], results.counts["failed"]) == (1, 1)


def test_a_failures_message_is_its_panic_in_one_line() -> None:
    messages = {f["test"]: f["message"] for f in read_events(report("cargo-mixed.jsonl")).failures}
    assert messages["calc::tests::adds"] == (
        "src/lib.rs:15:9: assertion `left == right` failed; left: -1; right: 5"
    )
    assert messages["arith::says_why"] == "tests/arith.rs:10:9: add(1, 1) = 0, want 2"


def test_a_panic_as_rust_before_1_73_printed_it_is_one_line_too() -> None:
    """Debian's rustc 1.63 put the message first, quoted (its libtest's event, as printed)."""
    stdout = (
        "thread 'tests::adds' panicked at 'assertion failed: `(left == right)`\n"
        "  left: `-1`,\n right: `5`', src/lib.rs:15:9\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    )
    events = [
        {"type": BINARY_EVENT, "path": "/tmp/target/debug/deps/calc-0123456789abcdef"},
        {"type": "suite", "event": "started", "test_count": 1},
        {"type": "test", "event": "started", "name": "tests::adds"},
        {"type": "test", "name": "tests::adds", "event": "failed", "stdout": stdout},
        {"type": "suite", "event": "failed", "passed": 0, "failed": 1, "ignored": 0},
    ]
    results = read_events(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    assert results.failures[0]["message"] == (
        "src/lib.rs:15:9: assertion failed: `(left == right)`; left: `-1`,; right: `5`"
    )


def test_a_passing_run_counts_every_binarys_tests() -> None:
    results = read_events(report("cargo-passing.jsonl"))
    assert (results.counts["passed"], results.counts["failed"]) == (6, 0)


def test_a_test_binary_that_exits_mid_suite_counts_nothing() -> None:
    """std::process::exit(0) from the code under test: cargo itself exits 0."""
    results = read_events(report("cargo-exited.jsonl"))
    assert results.counts == {}
    assert results.none_because.startswith("the suite of calc never ended")


def test_a_test_binary_that_starts_no_suite_counts_nothing() -> None:
    """A binary that exits before libtest runs, or a harness = false target printing its own."""
    passing = report("cargo-passing.jsonl")
    silent = json.dumps({"type": BINARY_EVENT, "path": "/tmp/target/debug/deps/x-0123456789abcdef"})
    for stream in (silent.encode() + b"\n" + passing, passing + silent.encode() + b"\nall fine\n"):
        results = read_events(stream)
        assert results.counts == {}
        assert results.none_because.startswith("the test binary x reported no suite")


@pytest.mark.parametrize("cut", [2, 8, -2])
def test_a_stream_cut_short_counts_nothing(cut: int) -> None:
    lines = report("cargo-passing.jsonl").splitlines(keepends=True)
    results = read_events(b"".join(lines[:cut]))
    assert results.counts == {}
    assert "never ended" in results.none_because


def test_a_suite_whose_counts_disagree_with_its_tests_counts_nothing() -> None:
    """A failed test's event lost (or a forged pass added): the suite's own totals disagree."""
    lines = [
        line for line in report("cargo-mixed.jsonl").splitlines(keepends=True)
        if b'"name": "tests::adds", "event": "failed"' not in line
    ]  # fmt: skip
    results = read_events(b"".join(lines))
    assert results.counts == {}
    assert "disagree with its tests" in results.none_because


def test_a_suite_from_a_binary_the_observer_did_not_start_counts_nothing() -> None:
    """Another runner of the operator's .cargo/config.toml wins over the observer's: its
    binaries are not named."""
    lines = [
        line for line in report("cargo-passing.jsonl").splitlines(keepends=True)
        if BINARY_EVENT.encode() not in line
    ]  # fmt: skip
    results = read_events(b"".join(lines))
    assert results.counts == {}
    assert "a test binary the observer did not start" in results.none_because


def test_no_suite_counts_nothing_and_stray_lines_are_not_events() -> None:
    assert "ran no test binary" in read_events(b"").none_because
    stray = b"hello from a harness = false test\n{not json\n"
    assert read_events(stray + report("cargo-passing.jsonl")).counts["passed"] == 6
    event = json.dumps({"type": "test", "event": "ok", "name": "x"}).encode()
    assert "outside any suite" in read_events(event + b"\n").none_because


# --- a real run through claim observe test-run ---------------------------------------------------


@needs_cargo
def test_claim_observe_test_run_counts_a_real_cargo_test_run(tmp_path: Path) -> None:
    repo = rust_project(tmp_path / "repo")
    write_files(repo, {"src/lib.rs": LIB_WRONG})
    claim = tmp_path / "claim.json"
    assert run(["new", str(claim), "--task-id", "t-1", "--outcome", "fixed add"]) == 0
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0
    assert run(["observe", "test-run", str(claim), "--cwd", str(repo),
                "--require-test", "arith::adds", "--", "cargo", "test"]) == 0  # fmt: skip
    [item] = json.loads(claim.read_text())["evidence"]
    assert item["observed_value"]["tests"] == {
        "calc::tests::adds_zero": "failed", "arith::adds": "failed",
    }  # fmt: skip
    assert item["details"]["failures"][1]["message"] == (
        "tests/arith.rs:3:5: assertion `left == right` failed; left: 6; right: 5"
    )
    assert item["details"]["dependencies"]["lockfiles"] == {
        "Cargo.lock": "sha256:" + hashlib.sha256(CARGO_LOCK.encode()).hexdigest()
    }


def test_the_toolchain_is_resolved_once_until_its_compiler_changes(tmp_path: Path) -> None:
    """A gate resolves the toolchain twice per stop (its configuration, then the run): the
    second time costs no compiler start, unless the compiler is another file by then."""
    sysroot, asked = tmp_path / "toolchain", tmp_path / "asked"
    release = '#!/bin/sh\necho "$0 $*" >> {asked}\necho "release: {release}"\n'
    nightly = release.format(asked=asked, release="1.90.0-nightly")
    write_files(sysroot, {"bin/cargo": "#!/bin/sh\n", "bin/rustc": nightly})
    for program in ("cargo", "rustc"):
        (sysroot / "bin" / program).chmod(0o755)
    cargo = str(sysroot / "bin" / "cargo")

    for _ in range(2):
        toolchain = CARGO.toolchain(["cargo", "test"], cargo, tmp_path / "work")
        assert "RUSTC_BOOTSTRAP" not in toolchain.env  # a nightly takes unstable options as is
    assert len(asked.read_text().splitlines()) == 1

    # The operator installs a stable compiler in its place (another size, another time).
    (sysroot / "bin" / "rustc").write_text(release.format(asked=asked, release="1.90.0 (stable)"))
    toolchain = CARGO.toolchain(["cargo", "test"], cargo, tmp_path / "work")
    assert toolchain.env["RUSTC_BOOTSTRAP"] == "-1"
    assert len(asked.read_text().splitlines()) == 2


@needs_cargo
def test_a_run_its_canaries_explain_needs_no_probe_of_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cargo test run exits 101 (the must-fail canary). When the canaries held, tests
    named at random for this run reported their planted outcomes: the sandbox started the
    toolchain, and no second sandbox is started to prove it. A run whose report holds no canary
    (the build failed) is believed only after the probe, as before: a broken sandbox (here, a
    probe that cannot start the compiler) fails the observation."""
    probed: list[str] = []

    def cannot_start(self: Sandbox, command: list[str], *args: object, **kwargs: object) -> None:
        probed.append(os.path.basename(command[0]))
        raise ObservationFailed("the sandbox (bwrap) cannot start rustc: as if broken")

    monkeypatch.setattr(Sandbox, "probe", cannot_start)
    repo = rust_project(tmp_path / "repo", {"src/lib.rs": LIB})
    for name, lib, code in (("fixed", LIB, 0), ("failing", LIB_BUGGY, 0), ("broken", "fn {", 5)):
        write_files(repo, {"src/lib.rs": lib})
        claim = tmp_path / f"{name}.json"
        assert run(["new", str(claim), "--task-id", name, "--outcome", "fixed add"]) == 0
        assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0
        assert run(["observe", "test-run", str(claim), "--cwd", str(repo),
                    "--", "cargo", "test"]) == code, name  # fmt: skip
        if code == 0:
            [item] = json.loads(claim.read_text())["evidence"]
            assert item["observed_value"]["exit_code"] == 101
            assert item["observed_value"]["canaries"] == "held"
    assert probed == ["rustc"]  # the broken build's run alone


# A test of the agent's writing into its run's target folder: cargo's record of the compiler's
# answers, spoilt (the target's file names unreadable), where the next run would read it if the
# target folder or its record were shared.
SPOILING = """#[test]
fn adds() {
    let deps = std::env::current_exe().unwrap();
    let target = deps.parent().unwrap().parent().unwrap().parent().unwrap();
    let record = target.join(".rustc_info.json");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, text.replace("___", "")).unwrap();
    assert_eq!(calc::add(2, 3), 5);
}
"""


@needs_cargo
def test_each_run_starts_from_the_caches_record_of_the_compiler_and_cannot_change_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache entry keeps cargo's record of what it asks the compiler, made by a package of
    the observer's, so a run's fresh target folder spares cargo three compiler starts. Each run
    copies it: a run that spoils its copy leaves the record, and the next run, as they were."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    repo = rust_project(tmp_path / "repo", {"src/lib.rs": LIB, "tests/arith.rs": SPOILING})
    records = []
    for number in (1, 2):
        claim = tmp_path / f"claim-{number}.json"
        assert run(["new", str(claim), "--task-id", f"t-{number}", "--outcome", "fixed add"]) == 0
        assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0
        assert run(["observe", "test-run", str(claim), "--cwd", str(repo),
                    "--", "cargo", "test"]) == 0  # fmt: skip
        [item] = json.loads(claim.read_text())["evidence"]
        assert item["observed_value"]["tests"] == {"calc::tests::adds_zero": "passed",
                                                   "arith::adds": "passed"}  # fmt: skip
        assert item["observed_value"]["canaries"] == "held"
        key = item["details"]["dependencies"]["key"]
        entry = tmp_path / "state" / "completion-claim" / "runs" / "dependencies" / "cargo" / key
        records.append((entry / "rustc-info" / ".rustc_info.json").read_text())
    assert records[0] == records[1]
    assert '"rustc_fingerprint"' in records[0]
    assert "___" in records[0]


# --- canaries (issue 30) -------------------------------------------------------------------------

WORDS = ("c0ffee01", "5eed0002", "0dd00003", "a11ce004", "b0b00005")
MODULE = "claim_canary_c0ffee01"
PASSES, FAILS = (f"{EVERY_BINARY}::{MODULE}::canary_{word}" for word in WORDS[3:])
# A documentation test too: rustdoc builds it after the canaries' source is removed.
DOCUMENTED = "/// ```\n/// assert_eq!(calc::add(1, 1), 2);\n/// ```\n" + LIB
CRATE = {"Cargo.toml": CARGO_TOML, "Cargo.lock": CARGO_LOCK, "src/lib.rs": DOCUMENTED,
         "src/main.rs": "fn main() {}\n", "tests/arith.rs": ARITH}  # fmt: skip


def planted(files: list[str]) -> Canaries:
    canaries = CARGO.canaries(("cargo", "test"), [f.encode() for f in files], iter(WORDS).__next__)
    assert canaries is not None
    return canaries


def test_canaries_are_a_module_beside_each_manifest_named_for_every_test_binary() -> None:
    canaries = planted([*CRATE, "member/Cargo.toml", "member/src/lib.rs"])
    assert sorted(canaries.files) == [f"{MODULE}.rs", f"member/{MODULE}.rs"]
    assert [(c.name, c.passes) for c in canaries.tests] == [(PASSES, True), (FAILS, False)]
    assert canaries.failed_exit_code == 101
    source = canaries.files[f"{MODULE}.rs"].decode()
    assert 'assert_eq!("5eed0002", "0dd00003");' in source
    assert not re.findall(r"pass|fail", source)  # the names say nothing of which must fail
    assert CARGO.canaries(("cargo", "test"), [b"src/lib.rs"], iter(WORDS).__next__) is None


@pytest.mark.parametrize("command", [["--doc"], ["--", "--ignored"]])
def test_no_canaries_where_no_test_binary_of_the_runner_would_run_them(command: list[str]) -> None:
    """Doctests alone (rustdoc runs them, not the runner), or ignored tests alone."""
    files = [f.encode() for f in CRATE]
    assert CARGO.canaries(("cargo", "test", *command), files, iter(WORDS).__next__) is None


@pytest.mark.parametrize(
    ("theirs", "added"),
    [([], []), (["--test-threads", "1"], []), (["--skip", "slow"], []),
     (["adds", "--exact"], [f"{MODULE}::canary_a11ce004", f"{MODULE}::canary_b0b00005"])],
)  # fmt: skip
def test_a_name_filter_also_runs_the_canaries(theirs: list[str], added: list[str]) -> None:
    context = RunContext(CARGO.toolchain(["cargo"], None, Path("/nonexistent")), None,
                         {"HOME": "/h"}, {}, "/w", "/w", "/r", planted(list(CRATE)))  # fmt: skip
    argv = list(CARGO.invocation(["cargo", "test", "--", *theirs], context).argv)
    # The planting step first (the module's name, the work tree, its files, and no test to run
    # a second time), then cargo test.
    program = argv.index(context.toolchain.program or "")
    assert argv[:2] == ["/bin/sh", "-c"]
    assert argv[3:program] == ["sh", MODULE, "/w", f"{MODULE}.rs", "--", "", "--"]
    # The runner removes the canaries' source before any test binary starts, then says whether
    # the binary holds them.
    runner = next(arg for arg in argv if arg.startswith('target."cfg(all())".runner='))
    assert f'"/bin/sh", "-c", "rm -f -- /w/{MODULE}.rs; c=false; grep -qF -- {MODULE}' in runner
    libtest = argv[argv.index("json") + 1 :]
    assert libtest == [*theirs, *added]


def run_with_canaries(root: Path, files: dict[str, str]) -> tuple[int, Results]:
    """cargo test as the observer builds it, with the canaries planted, outside the sandbox
    (its target folder the test's own): its exit code and results."""
    write_files(root, files)
    canaries = planted(list(files))
    for rel, text in canaries.files.items():
        (root / rel).write_bytes(text)
    toolchain = CARGO.toolchain(["cargo"], None, root)
    context = RunContext(toolchain, None, {"HOME": str(root)}, {}, str(root), str(root),
                         str(root), canaries)  # fmt: skip
    invocation = CARGO.invocation(["cargo", "test"], context)
    env = os.environ | dict(toolchain.env) | dict(invocation.env)
    done = subprocess.run(invocation.argv, cwd=root, env=env, capture_output=True, check=False)
    return done.returncode, CARGO.results(done.stdout)


@needs_cargo
def test_the_canaries_run_in_every_test_binary_of_the_crate(tmp_path: Path) -> None:
    exit_code, results = run_with_canaries(tmp_path, CRATE)
    assert exit_code == 101, results
    tests = results.counts["tests"]
    # The library's, the program's and the integration test's binaries each ran them.
    assert tests == {"calc::tests::adds_zero": "passed", "arith::adds": "passed",
                     "doctest::src/lib.rs - add": "passed",
                     PASSES: "passed", FAILS: "failed"}  # fmt: skip
    assert (
        (tmp_path / "src/lib.rs")
        .read_text()
        .endswith(f'#[cfg(test)]\n#[path = "{tmp_path}/{MODULE}.rs"]\nmod {MODULE};\n')
    )
    assert not (tmp_path / f"{MODULE}.rs").exists()  # removed before the binaries ran


@needs_cargo
def test_attack_127_events_written_by_the_code_leave_the_canaries_unrun(tmp_path: Path) -> None:
    exit_code, results = run_with_canaries(tmp_path, CRATE | {"src/lib.rs": FORGED_EVENTS})
    assert exit_code == 101  # the program's must-fail canary: what the observer expects
    if results.counts:  # the forged end came before the canaries ended: they are missing
        tests = results.counts["tests"]
        assert (tests["calc::tests::adds_zero"], tests["arith::adds"]) == ("passed", "passed")
        assert (tests[PASSES], tests[FAILS]) == ("error", "error")
    else:  # after: the must-fail canary's failure is in the suite, and not in the forged end
        assert "'failed': 0, 'ignored': 0} disagree with its tests" in results.none_because


@needs_cargo
def test_a_test_file_other_test_files_include_runs_the_canaries_once_more_in_them(
    tmp_path: Path,
) -> None:
    """``tests/common.rs`` is a test binary of its own and a module of ``tests/arith.rs``: in
    arith's binary the canaries run twice, as arith's and as ``common``'s, with one outcome."""
    arith = "mod common;\n\n" + ARITH.replace("(2, 3)", "(2, common::one() + 2)")
    files = CRATE | {
        "tests/common.rs": "pub fn one() -> i64 {\n    1\n}\n",
        "tests/arith.rs": arith,
    }
    exit_code, results = run_with_canaries(tmp_path, files)
    assert exit_code == 101, results
    tests = results.counts["tests"]
    assert (tests["arith::adds"], tests[PASSES], tests[FAILS]) == ("passed", "passed", "failed")
    assert not [name for name in tests if "claim_canary" in name and "[" not in name]


# --- configuration outside the work tree, without the sandbox ------------------------------------

# Right only where the configuration of the run's parent folder sets a cfg the build never has.
POISONABLE = """#[cfg(claim_poisoned)]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(not(claim_poisoned))]
pub fn add(a: i64, b: i64) -> i64 {
    a - b
}
"""


@needs_cargo
def test_attack_132_without_the_sandbox_a_cargo_config_above_the_run_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """cargo reads .cargo/config.toml in every folder above the one it runs in: without the
    sandbox, the run's copy is below the observer's temporary folder (/tmp), where any user of
    the machine can leave one."""
    shared = tmp_path / "shared-tmp"
    poisoned = '[build]\nrustflags = ["--cfg", "claim_poisoned"]\n'
    write_files(shared, {".cargo/config.toml": poisoned})
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", None)
    repo = rust_project(tmp_path / "repo", {"src/lib.rs": POISONABLE})
    claim = tmp_path / "claim.json"
    assert run(["new", str(claim), "--task-id", "t-1", "--outcome", "fixed add"]) == 0
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0

    assert run(["observe", "test-run", str(claim), "--cwd", str(repo), "--no-sandbox",
                "--", "cargo", "test"]) == 5  # fmt: skip

    assert f"{shared}/.cargo/config.toml: cargo would read it" in capsys.readouterr().err


def test_without_the_sandbox_cargo_keeps_its_home_and_build_in_the_runs_own_home() -> None:
    """Not in the machine's /tmp, which other users write to (the sandbox's /tmp is its own)."""
    toolchain = CARGO.toolchain(["cargo"], None, Path("/nonexistent"))
    owned = "/tmp/claim-test-run-x"
    context = RunContext(toolchain, None, {"HOME": f"{owned}/home"}, {}, f"{owned}/work",
                         f"{owned}/work", "/r")  # fmt: skip
    env = CARGO.invocation(["cargo", "test"], context).env
    assert env["CARGO_HOME"] == f"{owned}/home/cargo-home"
    assert env["CARGO_TARGET_DIR"] == f"{owned}/home/target"


def test_a_test_binary_built_without_the_canaries_counts_nothing_and_says_why() -> None:
    """The runner says whether the build put the canaries in the binary it starts: one without
    them (``harness = false``) runs none, and is not taken for a forged report."""
    passing = report("cargo-passing.jsonl")
    plain = {"type": BINARY_EVENT, "path": "/t/deps/plain-0123456789abcdef", "canaries": False}
    results = read_events(passing + json.dumps(plain).encode() + b"\nall fine\n")
    assert results.counts == {}
    assert results.none_because.startswith(
        "the test binary plain was built without the observer's canaries"
    )
    assert "harness = false" in results.none_because


def test_rustdocs_merged_doctest_binary_is_expected_to_run_no_canary() -> None:
    """Edition 2024 runs an item's doctests in one binary, ``rust_out`` in rustdoc's temporary
    folder, through the observer's runner: no canary is built into it, and it may only report
    doctests."""
    binary = {"type": BINARY_EVENT, "path": "/t/deps/calc-0123456789abcdef", "canaries": True}
    doctests = {"type": BINARY_EVENT, "path": "/tmp/rustdoctestAbC123/rust_out", "canaries": False}
    canary = f"{MODULE}::canary_a11ce004"

    def stream(name: str) -> bytes:
        events = [
            binary,
            {"type": "suite", "event": "started", "test_count": 1},
            {"type": "test", "name": canary, "event": "ok"},
            {"type": "suite", "event": "ok", "passed": 1, "failed": 0, "ignored": 0},
            doctests,
            {"type": "suite", "event": "started", "test_count": 1},
            {"type": "test", "name": name, "event": "ok"},
            {"type": "suite", "event": "ok", "passed": 1, "failed": 0, "ignored": 0},
        ]
        return b"".join(json.dumps(e).encode() + b"\n" for e in events)

    results = read_events(stream("src/lib.rs - add (line 3)"))
    assert results.counts["tests"] == {
        "doctest::src/lib.rs - add": "passed", f"{EVERY_BINARY}::{canary}": "passed",
    }  # fmt: skip
    refused = read_events(stream("adds"))
    assert refused.counts == {}
    assert "adds ran in rustdoc's doctest binary" in refused.none_because


# --- 168: a test run a second time in its own binary ---------------------------------------------

SECOND = """use calc::add;

#[test]
fn adds() {
    assert_eq!(add(2, 3), 5);
}

#[test]
#[should_panic(
    expected = "overflow"
)]
fn overflows() {
    add(i64::MAX, 1);
}

#[test]
pub fn adds_or_says() -> Result<(), String> {
    Ok(())
}

mod nested {
    #[test]
    fn adds() {}
}
"""


def test_only_a_test_at_the_top_of_its_file_that_a_second_call_repeats_runs_again() -> None:
    """A test in a module of its own is private to it; one that must panic, or may not be built
    or run, is not the same test called again."""
    files = {b"tests/more-arith.rs": SECOND.encode(), b"tests/other.rs": b"#[test]\nfn x() {}\n"}
    names = ["more_arith::adds", "more_arith::overflows", "more_arith::adds_or_says",
             "more_arith::nested::adds", "calc::tests::adds_zero", "doctest::src/lib.rs - add",
             "missing::adds"]  # fmt: skip
    canaries = CARGO.repeat(planted(list(CRATE)), names, iter(["a9a1"]).__next__, files.get)
    assert canaries.repeats == {
        "more_arith::claim_again_a9a1::adds_or_says": "more_arith::adds_or_says",
        "more_arith::claim_again_a9a1::adds": "more_arith::adds",
    }
    source = canaries.files["claim_again_a9a1/tests/more-arith.rs"].decode()
    assert "ClaimAgain::claim_again(super::adds_or_says());" in source
    assert "super::overflows" not in source


def test_claim_init_protects_the_test_targets_the_manifests_name_outside_test_folders(
    tmp_path: Path,
) -> None:
    """Attack 187: a ``[[test]]``, ``[[bench]]`` or ``[[example]]`` path, in the root manifest
    or a workspace member's (named as a folder); one under tests/ is protected already."""
    write_files(tmp_path, {
        "Cargo.toml": '[workspace]\nmembers = ["calc", "crates/*"]\n\n[[test]]\nname = "a"\n'
                      'path = "checks/a.rs"\n',
        "calc/Cargo.toml": '[package]\nname = "calc"\n\n[[test]]\nname = "b"\npath = "b.rs"\n\n'
                           '[[bench]]\nname = "c"\npath = "tests/c.rs"\n\n'
                           '[[example]]\nname = "d"\npath = "demo/d.rs"\n',
    })  # fmt: skip
    detected = CARGO.detect(tmp_path)
    assert detected is not None
    assert detected.protect == ("checks/a.rs", "calc/b.rs", "calc/demo/d.rs")
    (tmp_path / "Cargo.toml").write_text("not toml [")
    assert CARGO.detect(tmp_path) == detected.__class__(detected.command, detected.why,
                                                        detected.toolchain)  # fmt: skip
