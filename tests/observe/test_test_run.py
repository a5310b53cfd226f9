"""``claim observe test-run``: real pytest runs on small projects, judged by the real verifier."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run
from completion_claim.errors import ObservationFailed, UsageError
from completion_claim.observe.runners.pytest import read_records, report_name
from completion_claim.observe.runners.results import (
    MAX_FAILURE_CHARS,
    MAX_FAILURES,
    junit_failures,
    parse_junit,
)
from completion_claim.observe.sandbox import Sandbox
from tests.fixtures.installed import installed_python
from tests.fixtures.projects import (
    CALC,
    CALC_BUGGY,
    CONFTEST_FORCING_PASSES,
    TEST_CALC,
    calc_project,
    git,
    head_commit,
    make_repo,
    write_files,
)

PYTEST = (sys.executable, "-m", "pytest", "-q")
PYTHON = (sys.executable, "-c")


def observe(claim: Path, cwd: Path, *args: str) -> int:
    return run(["observe", "test-run", str(claim), "--cwd", str(cwd), *args])


def capture(claim: Path, repo: Path) -> None:
    """What CI runs before observing: the claim records the workspace's changes."""
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0


def evidence(claim: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(claim.read_text())["evidence"]
    return items


def verdict(
    claim: Path, capsys: pytest.CaptureFixture[str], policy: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    options = []
    if policy is not None:
        policy_path = claim.with_name("policy.json")
        policy_path.write_text(json.dumps(policy))
        options = ["--policy", str(policy_path)]
    code = run(["verify", str(claim), "--json", *options])
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, result


def reason_codes(result: dict[str, Any]) -> set[str]:
    return {reason["code"] for item in result["evidence"] for reason in item["reasons"]}


def test_a_passing_run_is_recorded_and_verifies(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    write_files(repo, {"tests/test_more.py": "def test_more():\n    assert True\n"})
    capture(claim, repo)

    assert observe(claim, repo, "--", *PYTEST) == 0

    assert "recorded e1: test_run exit code 0, 3 passed" in capsys.readouterr().out
    (item,) = evidence(claim)
    assert item["covers"] == ["m1"]
    assert item["verifier"]["kind"] == "independent"
    assert item["expected"] == {"exit_code": 0, "failed": 0, "errors": 0, "canaries": "held"}
    assert item["observed_value"] == {
        "exit_code": 0,
        "passed": 3,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
        "tests": {
            "tests.test_calc::test_add": "passed",
            "tests.test_calc::test_add_zero": "passed",
            "tests.test_more::test_more": "passed",
        },
        "canaries": "held",
    }
    details = item["details"]
    assert item["subject"] == details["workspace_before"]
    assert item["subject"].startswith("sha256:")
    assert details["test_config"] == {}
    assert details["test_config_changed"] == ["tests/test_more.py"]  # a new test file
    assert details["argv"] == list(PYTEST)  # the report is asked for through the environment
    assert details["python"] == sys.executable
    assert details["sandbox"].startswith("bubblewrap ")
    # pytest's own line counts the observer's canaries (two that pass, a strict xfail) too
    assert "5 passed, 1 xfailed" in details["output_tail"][-1]
    assert details["canaries"] == {"planted": 3, "state": "held"}
    # The new test file is a change to the tests: it counts only where the operator allows it.
    code, result = verdict(claim, capsys)
    assert (code, reason_codes(result)) == (1, {"test_config_changed"})
    allowing = {"id": "p", "requires": ["test_run"], "max_age_s": 300, "allow_test_changes": True}
    assert verdict(claim, capsys, allowing)[0] == 0


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain-folder"])
def test_the_run_leaves_the_workspace_alone(
    tmp_path: Path, claim: Path, in_git: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # wherever the temp folder is
    files = {
        "calc.py": CALC,
        "tests/test_calc.py": TEST_CALC,
        "tests/test_writes.py": WRITES_INTO_THE_WORKSPACE,
    }
    if in_git:
        workspace = make_repo(tmp_path / "repo", files)  # no .gitignore
    else:
        workspace = tmp_path / "plain"
        write_files(workspace, files)
    before = sorted(workspace.rglob("*"))

    assert observe(claim, workspace, "--", *PYTEST) == 0
    assert observe(claim, workspace, "--", *PYTEST) == 0

    assert sorted(workspace.rglob("*")) == before  # no written.txt, __pycache__, .pytest_cache
    first, second = evidence(claim)
    assert first["subject"] == second["subject"]
    assert second["observed_value"]["passed"] == 3
    # Outside git nothing says which tests are the project's own: all of them are listed.
    changed = [] if in_git else ["tests/test_calc.py", "tests/test_writes.py"]
    assert second["details"]["test_config_changed"] == changed


def test_failing_tests_are_an_observation_that_refutes(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    write_files(repo, {"calc.py": CALC_BUGGY})
    capture(claim, repo)

    assert observe(claim, repo, "--", *PYTEST) == 0

    item = evidence(claim)[0]
    observed = item["observed_value"]
    assert observed["exit_code"] == 1
    assert (observed["passed"], observed["failed"]) == (0, 2)
    assert observed["tests"]["tests.test_calc::test_add"] == "failed"
    assert item["details"]["test_config_changed"] == []
    code, result = verdict(claim, capsys)
    assert (code, result["state"]) == (2, "refuted")


def test_a_failed_run_counts_only_once_the_sandbox_starts_the_toolchain(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken sandbox never passes for a failed test: a run that failed is followed by the
    toolchain's probe in the same sandbox, and a sandbox that cannot start it fails the
    observation (exit 5, nothing recorded). A passing run needed no such proof: no probe."""
    probed: list[str] = []

    def cannot_start(self: Sandbox, command: list[str], *args: Any, **kwargs: Any) -> None:
        probed.append(os.path.basename(command[0]))
        raise ObservationFailed("the sandbox (bwrap) cannot start python: as if broken")

    monkeypatch.setattr(Sandbox, "probe", cannot_start)
    passing = calc_project(tmp_path / "passing")
    capture(claim, passing)
    assert observe(claim, passing, "--", *PYTEST) == 0
    assert probed == []

    failing, refused = calc_project(tmp_path / "failing"), tmp_path / "refused.json"
    assert run(["new", str(refused), "--task-id", "t-2", "--outcome", "fixed add()"]) == 0
    write_files(failing, {"calc.py": CALC_BUGGY})
    capture(refused, failing)
    capsys.readouterr()
    assert observe(refused, failing, "--", *PYTEST) == 5
    assert "the sandbox (bwrap) cannot start python: as if broken" in capsys.readouterr().err
    assert probed == [os.path.basename(sys.executable)]
    assert evidence(refused) == []


def test_zero_tests_collected_is_not_discriminating(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "X = 1\n", "tests/helpers.py": "Y = 2\n"})

    assert observe(claim, repo, "--", *PYTEST) == 0

    observed = evidence(claim)[0]["observed_value"]
    assert observed == {
        "exit_code": 5,  # pytest: no tests collected
        "passed": 0,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
        "tests": {},
    }
    code, result = verdict(claim, capsys)
    assert (code, result["state"]) == (1, "unverified")
    assert "not_discriminating" in reason_codes(result)


def test_a_required_test_that_was_deselected_refutes(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")

    assert (
        observe(
            claim,
            repo,
            "--require-test",
            "tests/test_calc.py::test_add",
            "--require-test",
            "tests/test_calc.py::test_add_zero",
            "--",
            *PYTEST,
            "-k",
            "not test_add_zero",
        )
        == 0
    )

    (item,) = evidence(claim)
    assert item["expected"] == {
        "exit_code": 0,
        "failed": 0,
        "errors": 0,
        "tests": {
            "tests.test_calc::test_add": "passed",
            "tests.test_calc::test_add_zero": "passed",
        },
        "canaries": "held",
    }
    assert item["observed_value"]["exit_code"] == 0
    assert item["observed_value"]["tests"] == {"tests.test_calc::test_add": "passed"}
    code, result = verdict(claim, capsys)
    assert (code, result["state"]) == (2, "refuted")


def test_a_required_test_that_passed_verifies(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")

    assert observe(claim, repo, "--require-test", "tests.test_calc::test_add", "--", *PYTEST) == 0

    assert verdict(claim, capsys)[0] == 0


def test_a_changed_committed_config_file_is_listed(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": "X = 1\n", "tests/test_x.py": "def test_x():\n    pass\n", "tox.ini": ""},
    )
    write_files(repo, {"tox.ini": "[pytest]\naddopts = -q\n"})
    capture(claim, repo)

    assert observe(claim, repo, "--", *PYTEST) == 0

    details = evidence(claim)[0]["details"]
    assert list(details["test_config"]) == ["tox.ini"]
    assert details["test_config_changed"] == ["tox.ini"]


WRITES_INTO_THE_WORKSPACE = (
    "from pathlib import Path\n\n\n"
    "def test_writes():\n    Path('written.txt').write_text('during the run')\n"
)


def test_printed_success_does_not_beat_the_exit_code(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    script = "print('===== 5 passed in 0.01s ====='); raise SystemExit(1)"

    assert observe(claim, repo, "--", *PYTHON, script) == 0

    (item,) = evidence(claim)
    assert item["observed_value"] == {"exit_code": 1}
    assert "5 passed" in item["details"]["output_tail"][-1]
    # Exit code only: no counts, so not discriminating under the default min_tests (1).
    code, result = verdict(claim, capsys)
    assert (code, result["evidence"][0]["observation"]) == (1, "differs")


def processes_named(marker: str) -> list[int]:
    """Live processes (not zombies) whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def test_a_run_past_its_timeout_is_killed_with_everything_it_started(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    marker = f"claim-timeout-marker-{os.getpid()}"
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}])\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()

    assert observe(claim, repo, "--timeout", "2", "--", *PYTHON, script, marker) == 5

    assert time.monotonic() - started < 30
    assert "ran longer than" in capsys.readouterr().err
    deadline = time.monotonic() + 5
    while processes_named(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_named(marker) == []
    assert evidence(claim) == []


def test_a_missing_command_is_a_failed_observation(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert observe(claim, tmp_path, "--", "no-such-test-runner-xyz", "--all") == 5

    assert "command not found: no-such-test-runner-xyz" in capsys.readouterr().err
    assert evidence(claim) == []


REPORT = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<testsuites><testsuite name="suite" tests="4">'
    '<testcase classname="pkg.mod" name="test_ok"/>'
    '<testcase classname="pkg.mod" name="test_bad"><failure message="no"/></testcase>'
    '<testcase classname="pkg.mod" name="test_later"><skipped/></testcase>'
    '<testcase classname="pkg.Mod" name="test_crash"><error/></testcase>'
    "</testsuite></testsuites>"
)


def writes_report(text: str) -> tuple[str, ...]:
    """A non-pytest command that writes ``text`` to build/report.xml inside the workspace."""
    script = (
        "from pathlib import Path\n"
        "Path('build').mkdir(exist_ok=True)\n"
        f"Path('build/report.xml').write_text({text!r})\n"
    )
    return (*PYTHON, script)


def test_a_report_named_with_junit_is_read(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    junit = ("--junit", "build/report.xml", "--require-test", "pkg.mod::test_ok")

    assert observe(claim, repo, *junit, "--", *writes_report(REPORT)) == 0

    (item,) = evidence(claim)
    assert item["observed_value"] == {
        "exit_code": 0,
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "skipped": 1,
        "tests": {
            "pkg.mod::test_ok": "passed",
            "pkg.mod::test_bad": "failed",
            "pkg.mod::test_later": "skipped",
            "pkg.Mod::test_crash": "error",
        },
    }
    assert verdict(claim, capsys)[0] == 0  # exit 0 and the required test passed


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        (None, "is stale: the run did not write it"),
        ("not <xml", "not XML"),
        ('<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites/>', "declares a DOCTYPE or entities"),
        ("<html><testcase/></html>", "not a JUnit report"),
    ],
    ids=["stale", "garbage", "doctype", "not-junit"],
)
def test_a_report_that_cannot_be_trusted_is_a_failed_observation(
    tmp_path: Path,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    written: str | None,
    problem: str,
) -> None:
    repo = calc_project(tmp_path / "repo")
    write_files(repo, {"build/report.xml": REPORT})  # left over from an earlier run
    capture(claim, repo)
    command = (*PYTHON, "pass") if written is None else writes_report(written)

    assert observe(claim, repo, "--junit", "build/report.xml", "--", *command) == 5

    assert problem in capsys.readouterr().err
    assert evidence(claim) == []


def test_a_missing_pytest_report_is_an_exit_code_only_run(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")

    # pytest stops at the unknown option before writing any report
    assert observe(claim, repo, "--", *PYTEST, "--no-such-option") == 0

    assert evidence(claim)[0]["observed_value"] == {"exit_code": 4, "canaries": "unreported"}


def test_print_shows_the_evidence_without_recording_it(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert observe(claim, tmp_path, "--print", "--", *PYTHON, "pass") == 0

    printed = json.loads(capsys.readouterr().out)
    assert printed["observed_value"] == {"exit_code": 0}
    assert evidence(claim) == []


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (("--junit", "r.xml", "--", *PYTEST), "--junit is for other commands"),
        (("--", *PYTEST, "--junitxml=mine.xml"), "remove --junitxml"),
        (("--trusted-ref", "main", "--", *PYTEST), "--trusted-ref needs a git repository"),
        (("--python", "/no/such/python", "--", *PYTEST), "--python: no interpreter"),
        (("--require-test", "test_add", "--", *PYTEST), "names no test"),
    ],
)
def test_usage_mistakes_are_refused_before_running(
    tmp_path: Path,
    claim: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: tuple[str, ...],
    problem: str,
) -> None:
    assert observe(claim, tmp_path, *arguments) == 4

    assert problem in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "in_report"),
    [
        ("tests/test_x.py::test_a", "tests.test_x::test_a"),
        ("tests/test_x.py::TestA::test_b[1-a::b]", "tests.test_x.TestA::test_b[1-a::b]"),
        ("test_top.py::test_c", "test_top::test_c"),
        ("pkg.mod.TestA::test_b", "pkg.mod.TestA::test_b"),
    ],
)
def test_required_names_map_to_report_names(name: str, in_report: str) -> None:
    assert report_name(name) == in_report


def test_report_name_needs_a_separator() -> None:
    with pytest.raises(UsageError):
        report_name("test_a")


def test_a_name_reported_twice_keeps_its_worst_outcome() -> None:
    report = (
        b'<testsuite><testcase classname="m" name="t"/>'
        b'<testcase classname="m" name="t"><failure/></testcase>'
        b'<testcase classname="m" name="t"><skipped/></testcase></testsuite>'
    )

    parsed = parse_junit(report)

    assert parsed["tests"] == {"m::t": "failed"}
    assert (parsed["passed"], parsed["failed"], parsed["skipped"]) == (1, 1, 1)


def test_failures_keep_the_first_line_of_each_failed_or_errored_test() -> None:
    report = (
        b'<testsuite><testcase classname="tests.test_calc" name="test_add">'
        b'<failure message="assert -1 == 5&#10; +  where -1 = add(2, 3)">long text</failure>'
        b'</testcase><testcase classname="m" name="ok"/>'
        b'<testcase classname="m" name="skip"><skipped message="not today"/></testcase>'
        b'<testcase classname="m" name="setup"><error>\n\nfixture db not found\nmore</error>'
        b"</testcase></testsuite>"
    )

    assert junit_failures(report) == [
        {"test": "tests.test_calc::test_add", "outcome": "failed", "message": "assert -1 == 5"},
        {"test": "m::setup", "outcome": "error", "message": "fixture db not found"},
    ]


def test_failures_are_bounded_in_number_and_length() -> None:
    case = '<testcase classname="m" name="t{n}"><failure message="{text}"/></testcase>'
    cases = "".join(case.format(n=n, text="x" * 5000) for n in range(MAX_FAILURES + 5))

    found = junit_failures(f"<testsuite>{cases}</testsuite>".encode())

    assert len(found) == MAX_FAILURES
    assert {len(f["message"]) for f in found} == {MAX_FAILURE_CHARS}


def test_a_failure_message_is_redacted_like_the_output(
    tmp_path: Path, claim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "hunter2-ci-secret-value"
    monkeypatch.setenv("CI_SECRET", secret)
    repo = honest_fix(tmp_path, claim)
    leak = "import os\n\ndef test_leak():\n    assert os.environ['CI_SECRET'] == 'x'\n"
    write_files(repo, {"tests/test_leak.py": leak})
    capture(claim, repo)

    assert observe(claim, repo, "--env", "CI_SECRET", "--", *PYTEST) == 0

    (item,) = evidence(claim)
    (failure,) = item["details"]["failures"]
    assert failure["test"] == "tests.test_leak::test_leak"
    assert failure["message"].startswith("AssertionError: assert '***' == 'x'")
    assert secret not in json.dumps(item)


def test_an_entity_bomb_is_refused_before_expansion() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><testsuite name="&b;"/>'
    )

    with pytest.raises(ObservationFailed, match="DOCTYPE"):
        parse_junit(bomb)


# --- the sandbox: issue 7 attacks ----------------------------------------------------------


@dataclass
class Observer:
    """Runs `claim observe test-run` as root (in this process), or as a throwaway non-root
    user, on files kept in ``place`` (which that user owns while it observes)."""

    place: Path
    claim: Path
    user: tuple[int, int] | None = None
    python: str = sys.executable

    def observe(self, claim: Path, cwd: Path, *args: str) -> int:
        if self.user is None:
            return observe(claim, cwd, *args)
        uid, gid = self.user
        _chown_tree(self.place, uid, gid)
        command = [self.python, "-m", "completion_claim", "observe", "test-run", str(claim)]
        done = subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--",
             *command, "--cwd", str(cwd), *args],
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.place), "LANG": "C.UTF-8"},
            cwd=self.place, capture_output=True, text=True, check=False,
        )  # fmt: skip
        _chown_tree(self.place, 0, 0)
        sys.stderr.write(done.stderr)
        return done.returncode


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid)
    for path in root.rglob("*"):
        os.chown(path, uid, gid, follow_symlinks=False)


@pytest.fixture(params=["root", "non-root"])
def observer(request: pytest.FixtureRequest, tmp_path: Path, claim: Path) -> Iterator[Observer]:
    if request.param == "root":
        yield Observer(tmp_path, claim)
        return
    if os.geteuid() != 0:
        pytest.skip("this suite runs as a non-root user: the root case above is that case")
    python = str(installed_python())
    name = f"claim-{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True)  # fmt: skip
    place = Path(tempfile.mkdtemp(prefix="claim-agent-"))
    try:
        entry = pwd.getpwnam(name)
        own_claim = place / "claim.json"
        shutil.copy(claim, own_claim)
        yield Observer(place, own_claim, (entry.pw_uid, entry.pw_gid), python)
    finally:
        shutil.rmtree(place)
        subprocess.run(["userdel", name], check=True)


PYTEST_S = (*PYTEST, "-s")  # what the tests print reaches the output tail


def broken_fix(tmp_path: Path, claim: Path, extra: dict[str, str] | None = None) -> Path:
    """The standard set-up: a committed broken calc.add, an agent "fix" that is still broken,
    and the trick in ``extra``; CI has captured the claim's changes."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    write_files(repo, {"calc.py": "# fixed, says the agent\n" + CALC_BUGGY, **(extra or {})})
    capture(claim, repo)
    return repo


def honest_fix(tmp_path: Path, claim: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    write_files(repo, {"calc.py": CALC})
    capture(claim, repo)
    return repo


def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys" / "ci.key"
    path.parent.mkdir()
    assert run(["keygen", "--out", str(path)]) == 0
    return path


STEALS_THE_KEY = """\
import os, pathlib

def pytest_configure(config):
    paths = [{key!r}]
    for cmdline in pathlib.Path('/proc').glob('*/cmdline'):
        try:
            args = cmdline.read_bytes().split(b'\\0')
        except OSError:
            continue
        if b'--sign-key' in args:
            paths.append(args[args.index(b'--sign-key') + 1].decode())
    print('SAW-SIGN-KEY-IN', len(paths) - 1, 'COMMAND-LINES')
    for path in paths:
        try:
            data = open(path, 'rb').read()
        except OSError as exc:
            print('KEY-READ-FAILED', exc.strerror)
            continue
        print('STOLEN', data.decode())
        try:
            open({stash!r}, 'wb').write(data)
        except OSError as exc:
            print('STASH-FAILED', exc.strerror)
"""


def test_attack_01_tests_cannot_read_the_signing_key(observer: Observer) -> None:
    place, claim = observer.place, observer.claim
    key = key_file(place)
    stash = place / "stash"
    stash.mkdir(mode=0o777)
    conftest = STEALS_THE_KEY.format(key=str(key), stash=str(stash / "stolen.key"))
    repo = honest_fix(place, claim)
    write_files(repo, {"conftest.py": conftest})
    capture(claim, repo)

    assert observer.observe(claim, repo, "--sign-key", str(key), "--", *PYTEST_S) == 0

    assert not (stash / "stolen.key").exists()
    (item,) = evidence(claim)
    tail = "\n".join(item["details"]["output_tail"])
    assert "SAW-SIGN-KEY-IN 0 COMMAND-LINES" in tail  # the observer's command line is hidden
    assert "KEY-READ-FAILED No such file or directory" in tail  # the key is not even there
    assert "STOLEN" not in tail
    assert item["observed_value"]["passed"] == 2  # and the run still records
    assert "attestation" in item


PRINTS_SECRETS = """\
import base64, os

def test_prints_secrets():
    text = open({key!r}).read()
    body = ''.join(line for line in text.splitlines() if not line.startswith('-----'))
    print('SECRET', os.environ.get('CI_SECRET'))
    print('PEM', text)
    print('HEX', base64.b64decode(body).hex())
    print('SEED', base64.b64encode(base64.b64decode(body)[-32:]).decode())
"""


def test_attack_01_printed_key_and_secrets_are_redacted_from_the_output(
    tmp_path: Path, claim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = key_file(tmp_path)
    secret = "hunter2-ci-secret-value"
    monkeypatch.setenv("CI_SECRET", secret)
    repo = honest_fix(tmp_path, claim)
    write_files(repo, {"tests/test_leak.py": PRINTS_SECRETS.format(key=str(key))})
    capture(claim, repo)

    # Without the sandbox the test can read the key; the secret is passed on by name.
    options = ("--no-sandbox", "--env", "CI_SECRET", "--sign-key", str(key))
    assert observe(claim, repo, *options, "--", *PYTEST_S) == 0

    (item,) = evidence(claim)
    tail = "\n".join(item["details"]["output_tail"])
    for printed in ("SECRET ***", "HEX ***", "SEED ***"):
        assert printed in tail
    assert secret not in tail
    key_lines = [line for line in key.read_text().splitlines() if not line.startswith("-----")]
    assert key_lines
    assert not any(line in tail for line in key_lines)
    assert item["details"]["sandbox"] == "none"


def test_attack_01_secrets_in_argv_are_redacted(
    tmp_path: Path, claim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-0123456789")
    repo = honest_fix(tmp_path, claim)
    url = "postgresql://ci:pa55word@db.example/test"
    script = "import sys; print(sys.argv[1:])"

    assert observe(claim, repo, "--", *PYTHON, script, f"--db={url}", "tok-0123456789") == 0

    (item,) = evidence(claim)
    argv = item["details"]["argv"]
    assert argv[-2:] == ["--db=postgresql://ci:***@db.example/test", "***"]
    assert "pa55word" not in item["target"]
    assert "tok-0123456789" not in item["target"]
    assert "pa55word" not in json.dumps(item["details"]["output_tail"])


def test_attack_02_a_shadow_module_hidden_by_git_exclude_is_not_in_the_run(
    tmp_path: Path, claim: Path
) -> None:
    repo = broken_fix(tmp_path, claim)
    write_files(repo, {"tests/calc.py": CALC, ".git/info/exclude": "tests/calc.py\n"})

    assert observe(claim, repo, "--", *PYTEST) == 0

    observed = evidence(claim)[0]["observed_value"]
    assert (observed["exit_code"], observed["failed"]) == (1, 2)


# It cannot load the observer's plugin, so the most it gets is an exit code.
FAKE_PYTEST = "print('2 passed')\nraise SystemExit(0)\n"


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-ref", "no-ref"])
def test_attack_02_a_fake_pytest_module_in_the_repo_does_not_decide_the_run(
    tmp_path: Path, claim: Path, trusted: bool
) -> None:
    repo = broken_fix(tmp_path, claim, {"pytest.py": FAKE_PYTEST})
    ref = ("--trusted-ref", head_commit(repo)) if trusted else ()

    assert observe(claim, repo, *ref, "--", *PYTEST) == 0

    item = evidence(claim)[0]
    if trusted:  # removed: the real pytest runs and the broken code fails
        assert item["details"]["protected_restored"] == {"restored": [], "removed": ["pytest.py"]}
        assert (item["observed_value"]["exit_code"], item["observed_value"]["failed"]) == (1, 2)
    else:  # on the signed record the verifier reads; the run's folder is put on the path only
        # once pytest has imported itself (PYTHONSAFEPATH), so the real pytest runs
        assert item["details"]["test_config_changed"] == ["pytest.py"]
        assert (item["observed_value"]["exit_code"], item["observed_value"]["failed"]) == (1, 2)


TRICKS = {
    "conftest-forcing-passes": {"conftest.py": CONFTEST_FORCING_PASSES},
    "pytest-ini-deselect": {
        "pytest.ini": "[pytest]\naddopts = --deselect tests/test_calc.py::test_add "
        "--deselect tests/test_calc.py::test_add_zero\n"
    },
    "pyproject-k": {
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-k 'not test_add'\"\n"
    },
    "pythonpath-vendor": {"pytest.ini": "[pytest]\npythonpath = vendor\n", "vendor/calc.py": CALC},
    "new-test-patching-calc": {
        "tests/test_aaa.py": "import calc\ncalc.add = lambda a, b: a + b\n",
    },
    "modified-test": {"tests/test_calc.py": "def test_add():\n    pass\n"},
    "pth-and-sitecustomize": {
        "fix.pth": "import sitecustomize\n",
        "sitecustomize.py": "import calc\ncalc.add = lambda a, b: a + b\n",
    },
}
TRICK_FILES = {
    "conftest-forcing-passes": ["conftest.py"],
    "pytest-ini-deselect": ["pytest.ini"],
    "pyproject-k": ["pyproject.toml"],
    "pythonpath-vendor": ["pytest.ini"],
    "new-test-patching-calc": ["tests/test_aaa.py"],
    "modified-test": ["tests/test_calc.py"],
    "pth-and-sitecustomize": ["fix.pth", "sitecustomize.py"],
}


@pytest.mark.parametrize("trick", list(TRICKS))
def test_attack_02_protected_paths_are_run_as_in_the_trusted_ref(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], trick: str
) -> None:
    repo = broken_fix(tmp_path, claim, TRICKS[trick])

    assert observe(claim, repo, "--trusted-ref", head_commit(repo), "--", *PYTEST) == 0

    item = evidence(claim)[0]
    assert (item["observed_value"]["exit_code"], item["observed_value"]["failed"]) == (1, 2)
    details = item["details"]
    assert details["trusted_ref"] == git(repo, "rev-parse", "main").strip()
    restored = details["protected_restored"]
    assert sorted(restored["restored"] + restored["removed"]) == TRICK_FILES[trick]
    assert details["test_config_changed"] == []
    assert verdict(claim, capsys)[1]["state"] == "refuted"


@pytest.mark.parametrize("trick", list(TRICKS))
def test_attack_02_protected_changes_are_listed_without_a_trusted_ref(
    tmp_path: Path, claim: Path, trick: str
) -> None:
    repo = broken_fix(tmp_path, claim, TRICKS[trick])

    assert observe(claim, repo, "--", *PYTEST) == 0

    assert evidence(claim)[0]["details"]["test_config_changed"] == TRICK_FILES[trick]


def test_attack_02_the_workspace_venv_is_never_used(tmp_path: Path, claim: Path) -> None:
    fake_python = "#!/bin/sh\necho '2 passed'\nexit 0\n"
    venv = {
        ".gitignore": ".venv/\n",
        ".venv/pyvenv.cfg": "home = /usr/bin\n",
        ".venv/bin/python": fake_python,
        ".venv/lib/python3/site-packages/evil.pth": "import calc_fixer\n",
        ".venv/lib/python3/site-packages/_pytest/__init__.py": "raise SystemExit(0)\n",
    }
    repo = broken_fix(tmp_path, claim, venv)
    (repo / ".venv/bin/python").chmod(0o755)

    assert observe(claim, repo, "--", ".venv/bin/python", "-m", "pytest", "-q") == 0

    item = evidence(claim)[0]
    assert item["details"]["argv"][0] == sys.executable  # the operator's interpreter ran
    assert (item["observed_value"]["exit_code"], item["observed_value"]["failed"]) == (1, 2)


def test_attack_02_an_interpreter_inside_the_workspace_is_refused(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = honest_fix(tmp_path, claim)
    ran = tmp_path / "the-agent's-python-ran"
    write_files(repo, {"bin/python": f"#!/bin/sh\ntouch '{ran}'\n"})
    (repo / "bin/python").chmod(0o755)

    assert observe(claim, repo, "--python", str(repo / "bin/python"), "--", *PYTEST) == 4

    assert "is inside the workspace" in capsys.readouterr().err
    assert not ran.exists()


def test_attack_02_a_file_the_claim_does_not_record_refuses_the_run(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = honest_fix(tmp_path, claim)
    write_files(repo, {"calc.py": CALC_BUGGY + "# edited after capture\n"})

    assert observe(claim, repo, "--", *PYTEST) == 5

    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("calc.py is not as the claim records it (m1): run claim capture-git first")
    )
    write_files(repo, {"helper.py": "X = 1\n", "calc.py": CALC})
    assert observe(claim, repo, "--", *PYTEST) == 5
    assert "helper.py is not as the claim records it (not recorded)" in capsys.readouterr().err
    assert evidence(claim) == []


MAKEFILE = "test:\n\tpython -m pytest -q\n"
EXITS_EARLY = "import os\n\n\ndef test_exit():\n    os._exit(0)\n"


@pytest.mark.parametrize(
    ("command", "observed"),
    [
        ((*PYTHON[:1], "-B", "-m", "pytest", "-q"), {"passed": 2}),
        ((*PYTHON, "import pytest, sys; sys.exit(pytest.main(['-q']))"), {"passed": 2}),
        (("make", "test"), {"passed": 2}),
        (("pytest", "-q"), {"passed": 2}),
        (("true",), None),
    ],
    ids=["python-B", "pytest-main", "make-test", "pytest-program", "true"],
)
def test_attack_04_any_command_gets_counts_from_the_observers_plugin_or_none(
    tmp_path: Path, claim: Path, command: tuple[str, ...], observed: dict[str, int] | None
) -> None:
    repo = honest_fix(tmp_path, claim)
    write_files(repo, {"Makefile": MAKEFILE})
    capture(claim, repo)

    assert observe(claim, repo, "--", *command) == 0

    value = evidence(claim)[0]["observed_value"]
    if observed is None:
        assert value == {"exit_code": 0}  # exit-code-only: no counts to read as a pass
    else:
        assert value["exit_code"] == 0
        assert {key: value[key] for key in observed} == observed


def test_attack_04_a_test_calling_os_exit_records_no_counts(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC,
                                         "tests/test_000.py": EXITS_EARLY})  # fmt: skip

    assert observe(claim, repo, "--", *PYTEST) == 0

    # No counts: the verifier's min_tests can never read this as a green run of zero tests.
    assert evidence(claim)[0]["observed_value"] == {"exit_code": 0, "canaries": "unreported"}


# --- issue 17: reports the code under test cannot write -----------------------------------

# The finding as reported: the code under test registers an exit handler that writes a passing
# report where the run's options say pytest writes one, then ends the process with exit code 0.
FORGES_AT_EXIT = """
import atexit, os


def _forge():
    report = '/run/claim/report/junit.xml'
    for option in os.environ.get('PYTEST_ADDOPTS', '').split():
        if option.startswith('--junitxml='):
            report = option.split('=', 1)[1]
    try:
        with open(report, 'w') as handle:
            handle.write('<testsuite><testcase classname="tests.test_calc" name="test_add"/>'
                         '</testsuite>')
    except OSError:
        pass
    os._exit(0)


atexit.register(_forge)
"""
PRINTS_PASSED_AT_EXIT = """
import atexit, os


def _claim_success():
    print('=============== 2 passed in 0.01s ===============', flush=True)
    os._exit(0)


atexit.register(_claim_success)
"""
# Everything it can reach: the environment, /proc, every descriptor (each one reopened for
# reading too, which empties a pipe); then a forged report and end record written to each.
WRITES_TO_EVERY_FD = """
import atexit, hashlib, hmac, os, re

found = [value.encode() for value in os.environ.values()]
descriptors = sorted(int(fd) for fd in os.listdir('/proc/self/fd'))
sources = ['/proc/self/environ', '/proc/self/cmdline', '/proc/1/environ', '/proc/1/cmdline']
sources += [f'/proc/{pid}/fd/{fd}' for pid in ('self', 1) for fd in range(64)]
for source in sources:
    try:
        reader = os.open(source, os.O_RDONLY | os.O_NONBLOCK)
        found += re.findall(rb'[0-9a-f]{64}', os.read(reader, 1 << 20))
        os.close(reader)
    except OSError:
        pass
print('CANDIDATE KEYS', len(found), flush=True)
forged = b'<testsuite><testcase classname="tests.test_calc" name="test_add"/></testsuite>\\n'
for key in [b'0' * 64, *found]:
    for body in (b'{"seq":0,"end":true}', b'{"end":true,"seq":0}'):
        forged += hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b' ' + body + b'\\n'
for fd in descriptors:
    if fd > 2:
        try:
            os.write(fd, forged)
        except OSError:
            pass
atexit.register(os._exit, 0)
"""
EXITS_DURING_COLLECTION = "\nimport os\nos._exit(0)\n"
# Through a call the runtime monitor sees no event of (os.kill on its own process is one).
KILLS_ITS_RUNNER = (
    "\n\ndef add(a, b):\n    import signal\n    signal.raise_signal(signal.SIGKILL)\n"
)

FORGERIES = {
    "exit-handler-writes-junit": (FORGES_AT_EXIT, "refuted"),
    "prints-passed-and-exits-0": (PRINTS_PASSED_AT_EXIT, "refuted"),
    "writes-to-every-fd": (WRITES_TO_EVERY_FD, "not bound to this run"),
    "os-exit-during-collection": (EXITS_DURING_COLLECTION, "did not reach its session's end"),
    "kills-its-own-runner": (KILLS_ITS_RUNNER, "did not reach its session's end"),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_attack_47_the_code_under_test_cannot_forge_its_report(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], forgery: str
) -> None:
    code, outcome = FORGERIES[forgery]
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    write_files(repo, {"calc.py": CALC_BUGGY + code})  # the tests are the trusted ones
    capture(claim, repo)

    assert observe(claim, repo, "--trusted-ref", head_commit(repo), "--", *PYTEST) == 0

    (item,) = evidence(claim)
    observed = item["observed_value"]
    state = verdict(claim, capsys)[1]["state"]
    if outcome == "refuted":  # the session ended before the forgery: its failures stand
        assert (observed["exit_code"], observed["passed"], observed["failed"]) == (0, 0, 2)
        assert item["expected"] == {"exit_code": 0, "failed": 0, "errors": 0, "canaries": "held"}
        assert item["details"]["failures"][0]["test"] == "tests.test_calc::test_add"
        assert state == "refuted"
    else:  # nothing counts: an exit code alone never verifies a test run
        assert observed == {"exit_code": observed["exit_code"], "canaries": "unreported"}
        assert outcome in item["details"]["no_counts"]
        assert state == "unverified"


ENDS_THE_SESSION_EARLY = """
import os

sessions = []


def pytest_sessionstart(session):
    sessions.append(session)


def pytest_runtest_logreport(report):
    if report.failed:
        sessions[0].config.hook.pytest_sessionfinish(session=sessions[0], exitstatus=0)
        os._exit(0)
"""


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-ref", "no-ref"])
def test_attack_47_a_conftest_ending_the_session_early_does_not_verify(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], trusted: bool
) -> None:
    """A conftest runs inside the runner and can end its session whenever it likes: an
    untrusted one is a protected path the agent changed, and the run does not count."""
    passing = "def test_aaa():\n    pass\n"
    trick = {"conftest.py": ENDS_THE_SESSION_EARLY, "tests/test_aaa.py": passing}
    repo = broken_fix(tmp_path, claim, trick)
    ref = ("--trusted-ref", head_commit(repo)) if trusted else ()

    assert observe(claim, repo, *ref, "--", *PYTEST) == 0

    (item,) = evidence(claim)
    code, result = verdict(claim, capsys)
    if trusted:  # removed: the real tests run to their end
        assert (item["observed_value"]["exit_code"], item["observed_value"]["failed"]) == (1, 2)
        assert result["state"] == "refuted"
    else:
        assert item["observed_value"]["passed"] == 1  # it did end the session early
        assert item["details"]["test_config_changed"] == ["conftest.py", "tests/test_aaa.py"]
        assert (code, reason_codes(result)) == (1, {"test_config_changed"})


RUNS_ITS_OWN_SESSION = """
import os, pathlib, subprocess, sys, tempfile

folder = pathlib.Path(tempfile.mkdtemp())
tests = 'def test_add():\\n    pass\\n\\n\\ndef test_add_zero():\\n    pass\\n'
(folder / 'test_own.py').write_text(tests)
if {in_process}:
    import pytest
    pytest.main(['-q', str(folder)])
else:
    subprocess.run([sys.executable, '-m', 'pytest', '-q', str(folder)])
sys.stdout.flush()
os._exit(0)
"""


@pytest.mark.parametrize("in_process", [True, False], ids=["pytest-main", "subprocess"])
def test_attack_60_a_session_the_code_under_test_starts_reports_nothing(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], in_process: bool
) -> None:
    """The code under test runs a passing suite of its own, with the run's options, then ends
    the real run before its session does: only the session the observer started reports."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    write_files(repo, {"calc.py": CALC_BUGGY + RUNS_ITS_OWN_SESSION.format(in_process=in_process)})
    capture(claim, repo)

    assert observe(claim, repo, "--trusted-ref", head_commit(repo), "--", *PYTEST_S) == 0

    (item,) = evidence(claim)
    assert "2 passed" in "\n".join(item["details"]["output_tail"])  # its own session ran
    assert item["observed_value"] == {"exit_code": 0, "canaries": "unreported"}
    assert "did not reach its session's end" in item["details"]["no_counts"]
    assert verdict(claim, capsys)[1]["state"] == "unverified"


# A test held in the trusted ref judging the code from outside the runner's process: the child
# runs the code under test, and must not reach the runner's memory (where the key is) or its
# descriptors.
JUDGES_FROM_A_CHILD = """\
import os, subprocess, sys

PROBE = '''
import os
parent = os.getppid()
for what in ('mem', 'fd/0'):
    try:
        open(f'/proc/{parent}/{what}', 'rb').close()
        print('REACHED', what)
    except OSError as exc:
        print('DENIED', what, exc.errno)
import calc
print('SUM', calc.add(2, 3))
'''


def test_add_in_a_child():
    done = subprocess.run([sys.executable, '-c', PROBE], capture_output=True, text=True)
    print(done.stdout, done.stderr)
    assert 'REACHED' not in done.stdout
    assert 'SUM 5' in done.stdout
"""


def test_attack_61_a_process_the_tests_start_cannot_reach_the_runner(
    observer: Observer, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = observer.claim
    files = {"calc.py": CALC_BUGGY, "tests/test_child.py": JUDGES_FROM_A_CHILD}
    repo = make_repo(observer.place / "repo", files)
    write_files(repo, {"calc.py": CALC})
    capture(claim, repo)

    assert observer.observe(claim, repo, "--trusted-ref", head_commit(repo), "--", *PYTEST_S) == 0

    (item,) = evidence(claim)
    tail = "\n".join(item["details"]["output_tail"])
    assert "DENIED mem" in tail
    assert "DENIED fd/0" in tail
    assert item["observed_value"]["tests"] == {"tests.test_child::test_add_in_a_child": "passed"}
    assert verdict(claim, capsys)[1]["state"] == "verified"


def test_a_failing_run_names_each_failure_with_its_first_line(tmp_path: Path, claim: Path) -> None:
    repo = broken_fix(tmp_path, claim)

    assert observe(claim, repo, "--", *PYTEST) == 0

    (item,) = evidence(claim)
    assert item["details"]["failures"] == [
        {"test": "tests.test_calc::test_add", "outcome": "failed", "message": "assert -1 == 5"},
        {
            "test": "tests.test_calc::test_add_zero",
            "outcome": "failed",
            "message": "assert -4 == 4",
        },
    ]
    assert "no_counts" not in item["details"]


OUTCOMES = """\
import pytest


@pytest.fixture
def broken():
    raise RuntimeError('no database')


@pytest.fixture
def leaks():
    yield
    raise RuntimeError('left a mess')


def test_passes():
    pass


def test_setup_errors(broken):
    pass


def test_teardown_errors(leaks):
    pass


@pytest.mark.skip(reason='not today')
def test_skipped():
    pass


@pytest.mark.xfail
def test_expected_to_fail():
    assert False


@pytest.mark.xfail(strict=True)
def test_strictly_expected_to_fail():
    pass


@pytest.mark.parametrize('n', [1, 2])
def test_param(n):
    assert n == 1
"""


def test_outcomes_are_filed_as_pytests_junit_report_files_them(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"tests/test_outcomes.py": OUTCOMES})

    assert observe(claim, repo, "--", *PYTEST) == 0

    observed = evidence(claim)[0]["observed_value"]
    name = "tests.test_outcomes::"
    assert observed["tests"] == {
        f"{name}test_passes": "passed",
        f"{name}test_setup_errors": "error",
        f"{name}test_teardown_errors": "error",
        f"{name}test_skipped": "skipped",
        f"{name}test_expected_to_fail": "skipped",
        f"{name}test_strictly_expected_to_fail": "failed",
        f"{name}test_param[1]": "passed",
        f"{name}test_param[2]": "failed",
    }
    counts = {key: observed[key] for key in ("passed", "failed", "errors", "skipped")}
    assert counts == {"passed": 2, "failed": 2, "errors": 2, "skipped": 2}


def test_a_collection_error_is_an_errored_test(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"tests/test_broken.py": "import no_such_module\n"})

    assert observe(claim, repo, "--", *PYTEST) == 0

    item = evidence(claim)[0]
    assert item["observed_value"]["tests"] == {"::tests.test_broken": "error"}
    (failure,) = item["details"]["failures"]
    assert failure["message"].startswith("ImportError while importing test module")


def test_min_tests_judges_the_counts_pytest_reported(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = honest_fix(tmp_path, claim)

    assert observe(claim, repo, "--", *PYTEST) == 0

    policy = {"id": "p", "requires": ["test_run"], "max_age_s": 300, "min_tests": 3}
    code, result = verdict(claim, capsys, policy)
    assert (code, reason_codes(result)) == (1, {"not_discriminating"})
    assert verdict(claim, capsys, policy | {"min_tests": 2})[0] == 0


def test_a_required_test_of_a_run_that_reported_nothing_is_a_failed_observation(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "tests/test_000.py": EXITS_EARLY}
    repo = make_repo(tmp_path / "repo", files)

    assert (
        observe(claim, repo, "--require-test", "tests/test_calc.py::test_add", "--", *PYTEST) == 5
    )

    err = capsys.readouterr().err
    assert "--require-test needs the tests' results, and the run reported none (it exited 0;" in err
    assert "did not reach its session's end" in err
    assert evidence(claim) == []


KEY = b"k" * 64


def record(seq: int, **fields: Any) -> bytes:
    body = json.dumps({"seq": seq, **fields}, separators=(",", ":")).encode()
    return hmac.new(KEY, body, hashlib.sha256).hexdigest().encode() + b" " + body + b"\n"


PASSED = {"node": "t.py::a", "when": "call", "outcome": "passed", "xfail": False, "message": ""}
FAILED = {**PASSED, "node": "t.py::b", "outcome": "failed", "message": "boom\nmore"}
END = {"end": True}


@pytest.mark.parametrize(
    ("stream", "why"),
    [
        (b"", "pytest reported nothing"),
        (record(0, **PASSED), "did not reach its session's end"),
        (record(0, **PASSED) + record(1, **END)[:-1], "did not reach its session's end"),
        (record(0, **PASSED) + record(2, **END), "record 2 is out of order"),
        (record(1, **PASSED) + record(0, **END), "record 1 is out of order"),
        (record(0, **END) + record(1, **FAILED), "record 2 follows the session's end"),
        (record(0, **PASSED) + record(1, **END) + b"x", "record 3 follows the session's end"),
        (b"0" * 64 + b' {"seq":0,"end":true}\n', "record 1 is not bound to this run"),
        (record(0, **PASSED).replace(b"::a", b"::c") + record(1, **END), "not bound to this run"),
        (record(0, **{**PASSED, "outcome": "won"}) + record(1, **END), "unknown outcome 'won'"),
        (record(0, **{**PASSED, "extra": 1}) + record(1, **END), "is not a test phase"),
    ],
    ids=["empty", "no-end", "cut-end", "gap", "swapped", "after-end", "junk-after-end",
         "unbound", "changed", "unknown-outcome", "extra-field"],
)  # fmt: skip
def test_records_count_only_when_all_bound_in_order_and_ended(stream: bytes, why: str) -> None:
    results = read_records(stream, KEY)

    assert (results.counts, results.failures) == ({}, [])
    assert why in results.none_because


def test_bound_records_in_order_with_an_end_count() -> None:
    stream = record(0, **PASSED) + record(1, **FAILED) + record(2, **END)

    results = read_records(stream, KEY)

    assert results.counts == {
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
        "tests": {"t::a": "passed", "t::b": "failed"},
    }
    assert results.failures == [{"test": "t::b", "outcome": "failed", "message": "boom"}]
    assert results.none_because == ""


def test_attack_05_symlink_out_of_workspace_is_refused(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    outside = tmp_path / "outside.py"
    outside.write_text(CALC)
    (repo / "calc.py").unlink()
    (repo / "calc.py").symlink_to(outside)

    assert observe(claim, repo, "--", *PYTEST) == 5

    assert f"calc.py is a symbolic link leading out of {repo} (to {outside})" in (
        capsys.readouterr().err
    )
    assert evidence(claim) == []


def test_a_symlink_inside_the_workspace_is_run_as_the_link(tmp_path: Path, claim: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"impl.py": CALC, "tests/test_calc.py": TEST_CALC})
    (repo / "calc.py").symlink_to("impl.py")
    capture(claim, repo)

    assert observe(claim, repo, "--", *PYTEST) == 0

    assert evidence(claim)[0]["observed_value"]["passed"] == 2


LEAVES_A_PROCESS = """\
import os, sys, time

def test_leaves_a_process():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, '-c',
                "import time; time.sleep(3); "
                "[open(p, 'a').write('broken = True\\\\n') for p in ({calc!r}, 'calc.py')]",
                {marker!r}])
        os._exit(0)
    time.sleep(0.5)
"""


def test_attack_11_leftover_process_is_killed(observer: Observer) -> None:
    claim = observer.claim
    marker = f"claim-leftover-{os.getpid()}-{time.monotonic_ns()}"
    repo = honest_fix(observer.place, claim)
    test = LEAVES_A_PROCESS.format(calc=str(repo / "calc.py"), marker=marker)
    write_files(repo, {"tests/test_leftover.py": test})
    capture(claim, repo)

    assert observer.observe(claim, repo, "--", *PYTEST) == 0

    assert evidence(claim)[0]["observed_value"]["passed"] == 3
    assert processes_named(marker) == []  # gone with the sandbox's PID namespace
    time.sleep(4)  # past the moment the child meant to edit calc.py
    assert (repo / "calc.py").read_text() == CALC
    assert processes_named(marker) == []


def test_attack_10_sparse_conftest_respects_timeout(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = honest_fix(tmp_path, claim)
    with open(repo / "conftest.py", "wb") as handle:
        handle.truncate(8 << 30)
    started = time.monotonic()

    assert observe(claim, repo, "--timeout", "1", "--", *PYTEST) == 5

    assert time.monotonic() - started < 10
    assert "conftest.py is 8589934592 bytes, over the" in capsys.readouterr().err


def test_the_timeout_covers_copying_the_workspace(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = honest_fix(tmp_path, claim)
    with open(repo / "conftest.py", "wb") as handle:  # under the size bound
        handle.truncate(900 << 20)

    assert observe(claim, repo, "--timeout", "0.2", "--", *PYTEST) == 5

    assert "ran longer than 0.2 s (copying conftest.py)" in capsys.readouterr().err


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-ref", "no-ref"])
def test_an_honest_fix_observed_in_the_sandbox_verifies(
    observer: Observer, capsys: pytest.CaptureFixture[str], trusted: bool
) -> None:
    claim = observer.claim
    repo = honest_fix(observer.place, claim)
    ref = ("--trusted-ref", head_commit(repo)) if trusted else ()

    assert observer.observe(claim, repo, *ref, "--", *PYTEST) == 0

    item = evidence(claim)[0]
    assert item["observed_value"]["exit_code"] == 0
    assert (item["observed_value"]["passed"], item["observed_value"]["failed"]) == (2, 0)
    assert item["details"]["test_config_changed"] == []
    assert item["details"]["sandbox"].startswith("bubblewrap ")
    if trusted:
        assert item["details"]["protected_restored"] == {"restored": [], "removed": []}
    assert verdict(claim, capsys)[0] == 0


def test_without_bubblewrap_the_observer_refuses_unless_told(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = honest_fix(tmp_path, claim)
    tools = tmp_path / "tools"  # git, and no bwrap
    tools.mkdir()
    (tools / "git").symlink_to(str(shutil.which("git")))
    monkeypatch.setenv("PATH", str(tools))

    assert observe(claim, repo, "--", *PYTEST) == 5

    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "claim: bubblewrap (bwrap) is not installed: apt-get install bubblewrap, "
        "or pass --no-sandbox"
    ]
    assert observe(claim, repo, "--no-sandbox", "--", *PYTEST) == 0
    item = evidence(claim)[0]
    assert item["details"]["sandbox"] == "none"
    assert item["observed_value"]["passed"] == 2


GOLDEN_TEST = (
    "from pathlib import Path\n\nfrom calc import add\n\n\n"
    "def test_sum():\n    assert add(2, 3) == int(Path('golden/sum.txt').read_text())\n"
)


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-ref", "no-ref"])
def test_attack_02_protect_globs_cover_the_operators_own_paths(
    tmp_path: Path, claim: Path, trusted: bool
) -> None:
    files = {"calc.py": CALC_BUGGY, "tests/test_sum.py": GOLDEN_TEST, "golden/sum.txt": "5\n"}
    repo = make_repo(tmp_path / "repo", files)
    write_files(repo, {"golden/sum.txt": "-1\n"})  # what the broken add returns
    capture(claim, repo)
    ref = ("--trusted-ref", head_commit(repo)) if trusted else ()

    assert observe(claim, repo, *ref, "--protect", "golden/*", "--", *PYTEST) == 0

    item = evidence(claim)[0]
    if trusted:
        assert item["details"]["protected_restored"]["restored"] == ["golden/sum.txt"]
        assert item["observed_value"]["failed"] == 1
    else:
        assert item["details"]["test_config_changed"] == ["golden/sum.txt"]


def test_a_signing_key_inside_the_workspace_is_refused(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    key = repo / "ci.key"
    assert run(["keygen", "--out", str(key)]) == 0

    assert observe(claim, repo, "--sign-key", str(key), "--", *PYTEST) == 5

    assert "is inside the workspace" in capsys.readouterr().err
    assert evidence(claim) == []


# --- hidden tests --------------------------------------------------------------------------------

SPECIAL_CASES_THE_VISIBLE_TEST = "def add(a, b):\n    return 5 if (a, b) == (2, 3) else a - b\n"
HIDDEN_TEST = "from calc import add\n\n\ndef test_add_more():\n    assert add(10, 4) == 14\n"


def hidden_folder(tmp_path: Path) -> Path:
    """The operator's folder, outside the work tree: its paths are the run copy's."""
    folder = tmp_path / "operator" / "hidden"
    write_files(folder, {"tests/test_hidden.py": HIDDEN_TEST})
    return folder


def test_attack_134_code_that_answers_only_the_visible_test_fails_the_hidden_one(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    write_files(repo, {"calc.py": SPECIAL_CASES_THE_VISIBLE_TEST})
    capture(claim, repo)
    hidden = hidden_folder(tmp_path)

    assert observe(claim, repo, "--hidden-tests", str(hidden), "--", *PYTEST) == 0

    item = evidence(claim)[0]
    assert item["observed_value"]["tests"]["tests.test_calc::test_add"] == "passed"
    assert item["observed_value"]["tests"]["tests.test_hidden::test_add_more"] == "failed"
    digest = hashlib.sha256(HIDDEN_TEST.encode()).hexdigest()
    assert item["details"]["hidden_tests"] == {"tests/test_hidden.py": f"sha256:{digest}"}
    assert verdict(claim, capsys)[1]["state"] == "refuted"
    assert not (repo / "tests" / "test_hidden.py").exists()  # never in the agent's work tree


def test_attack_134_control_the_honest_fix_passes_the_hidden_tests_and_verifies(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = honest_fix(tmp_path, claim)

    assert observe(claim, repo, "--hidden-tests", str(hidden_folder(tmp_path)), "--", *PYTEST) == 0

    item = evidence(claim)[0]
    assert item["observed_value"]["tests"]["tests.test_hidden::test_add_more"] == "passed"
    assert verdict(claim, capsys)[1]["state"] == "verified"


def test_a_hidden_test_replaces_the_work_trees_file_of_the_same_path(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = honest_fix(tmp_path, claim)
    hidden = tmp_path / "hidden"
    write_files(hidden, {"tests/test_calc.py": HIDDEN_TEST})

    assert observe(claim, repo, "--hidden-tests", str(hidden), "--", *PYTEST) == 0

    tests = evidence(claim)[0]["observed_value"]["tests"]
    assert tests == {"tests.test_calc::test_add_more": "passed"}


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("inside", "is inside the workspace, where the agent can read and change it"),
        ("link", "is a link or a special file"),
        ("empty", "holds no file"),
    ],
)
def test_a_hidden_tests_folder_the_agent_could_reach_or_that_holds_nothing_is_refused(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], layout: str, message: str
) -> None:
    repo = honest_fix(tmp_path, claim)
    hidden = repo / "hidden" if layout == "inside" else tmp_path / "hidden"
    hidden.mkdir()
    if layout != "empty":
        write_files(hidden, {"tests/test_hidden.py": HIDDEN_TEST})
    if layout == "link":
        (hidden / "tests" / "linked.py").symlink_to(repo / "calc.py")
    capsys.readouterr()

    assert observe(claim, repo, "--hidden-tests", str(hidden), "--", *PYTEST) == 4

    assert message in capsys.readouterr().err
    assert evidence(claim) == []


# --- repeated tests ------------------------------------------------------------------------------

# Right the first time it is called, and only then: a test run once passes.
ANSWERS_ONCE = (
    "calls = []\n\n\ndef add(a, b):\n    calls.append((a, b))\n"
    "    return a + b if len(calls) == 1 else a - b\n"
)
UNITTEST_CALC = (
    "import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
REPEATED = {
    "pytest": ({"tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n"
                "    assert add(2, 3) == 5\n"}, PYTEST, "tests/test_calc.py::test_add",
               "tests.test_calc::test_add"),
    "unittest": ({"tests/__init__.py": "", "tests/test_calc.py": UNITTEST_CALC},
                 (sys.executable, "-m", "unittest"), "tests.test_calc.TestCalc::test_add",
                 "tests.test_calc.TestCalc::test_add"),
}  # fmt: skip


@pytest.mark.parametrize("runner", ["pytest", "unittest"])
@pytest.mark.parametrize("calc", ["answers-once", "honest"])
def test_attack_135_a_repeated_test_fails_code_that_answers_by_how_often_it_ran(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], runner: str, calc: str
) -> None:
    tests, command, given, name = REPEATED[runner]
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, **tests})
    write_files(repo, {"calc.py": ANSWERS_ONCE if calc == "answers-once" else CALC})
    capture(claim, repo)

    assert observe(claim, repo, "--repeat-test", given, "--", *command) == 0

    item = evidence(claim)[0]
    assert item["details"]["repeated"] == [name]
    outcome, state = ("failed", "refuted") if calc == "answers-once" else ("passed", "verified")
    assert item["observed_value"]["tests"] == {name: outcome}
    assert item["observed_value"]["canaries"] == "held"
    assert verdict(claim, capsys)[1]["state"] == state


def test_attack_135_control_a_test_run_once_passes_code_that_answers_once(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The attack is real: without the repeat, the code that is right only once verifies."""
    tests, command, _, name = REPEATED["pytest"]
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, **tests})
    write_files(repo, {"calc.py": ANSWERS_ONCE})
    capture(claim, repo)

    assert observe(claim, repo, "--", *command) == 0

    assert evidence(claim)[0]["observed_value"]["tests"] == {name: "passed"}
    assert verdict(claim, capsys)[1]["state"] == "verified"
