"""``claim observe test-run``: real pytest runs on small projects, judged by the real verifier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run
from completion_claim.errors import ObservationFailed, UsageError
from completion_claim.observe.test_run import parse_junit, report_name
from tests.fixtures.projects import (
    CALC,
    CALC_BUGGY,
    CONFTEST_FORCING_PASSES,
    TEST_CALC,
    calc_project,
    make_repo,
    write_files,
)

PYTEST = (sys.executable, "-m", "pytest", "-q")
PYTHON = (sys.executable, "-c")


@pytest.fixture
def claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "claim.json"
    assert run(["new", str(path), "--task-id", "t-1", "--outcome", "fixed add()"]) == 0
    capsys.readouterr()
    return path


def observe(claim: Path, cwd: Path, *args: str) -> int:
    return run(["observe", "test-run", str(claim), "--cwd", str(cwd), *args])


def capture(claim: Path, repo: Path) -> None:
    """What CI runs before observing: the claim records the workspace's changes."""
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0


def evidence(claim: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(claim.read_text())["evidence"]
    return items


def verdict(claim: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = run(["verify", str(claim), "--json"])
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
    assert item["expected"] == {"exit_code": 0}
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
    }
    details = item["details"]
    assert item["subject"] == details["workspace_before"]
    assert item["subject"].startswith("sha256:")
    assert details["test_config"] == {}
    assert details["test_config_changed"] == ["tests/test_more.py"]  # a new test file
    assert details["argv"] == list(PYTEST)  # the report is asked for through the environment
    assert details["python"] == sys.executable
    assert details["sandbox"].startswith("bubblewrap ")
    assert "3 passed" in details["output_tail"][-1]
    assert verdict(claim, capsys)[0] == 0


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
        "tests": {
            "tests.test_calc::test_add": "passed",
            "tests.test_calc::test_add_zero": "passed",
        },
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
    assert verdict(claim, capsys)[0] == 2


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

    assert evidence(claim)[0]["observed_value"] == {"exit_code": 4}


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


def test_an_entity_bomb_is_refused_before_expansion() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><testsuite name="&b;"/>'
    )

    with pytest.raises(ObservationFailed, match="DOCTYPE"):
        parse_junit(bomb)
