"""The runner registry: which runner runs a command, what claim init finds, what is protected."""

from __future__ import annotations

from pathlib import Path

import pytest

from completion_claim.errors import UsageError
from completion_claim.observe.runners import (
    FALLBACK,
    RUNNERS,
    detect,
    is_runner_protected,
    runner_for,
)
from completion_claim.observe.runners.base import Runner
from completion_claim.observe.runners.junit import JunitFile
from completion_claim.observe.runners.pytest import Pytest, report_name


@pytest.mark.parametrize(
    "command",
    [("pytest", "-q"), ("python", "-m", "pytest"), ("/usr/bin/python3.11", "-m", "pytest")],
)
def test_pytest_commands_run_as_pytest(command: tuple[str, ...]) -> None:
    assert isinstance(runner_for(command), Pytest)


def test_a_command_with_a_named_report_is_read_from_that_report() -> None:
    runner = runner_for(("make", "check"), "build/report.xml")
    assert isinstance(runner, JunitFile)
    assert runner.report == "build/report.xml"


def test_an_unknown_command_keeps_the_pytest_channel_open() -> None:
    """make test may start pytest: its plugin still reports."""
    assert runner_for(("make", "test")) is FALLBACK
    assert isinstance(FALLBACK, Pytest)


def test_pytest_refuses_a_report_file_of_its_own() -> None:
    with pytest.raises(UsageError, match="--junit is for other commands"):
        runner_for(("pytest",), "r.xml").check(("pytest",), "r.xml")
    with pytest.raises(UsageError, match="remove --junitxml"):
        Pytest().check(("pytest", "--junitxml=r.xml"), None)


@pytest.mark.parametrize("report", ["/tmp/r.xml", "../r.xml"])
def test_a_named_report_outside_the_run_folder_is_refused(report: str) -> None:
    with pytest.raises(UsageError, match="must be a path inside the run's folder"):
        JunitFile(report)


def test_detect_finds_pytest_by_its_tests(tmp_path: Path) -> None:
    assert detect(tmp_path) == []
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("def test_x(): pass\n")
    ((runner, found),) = detect(tmp_path)
    assert runner.name == "pytest"
    assert found.command == ("python", "-m", "pytest", "-q")


@pytest.mark.parametrize(
    "path",
    [b"conftest.py", b"sub/pytest.ini", b"test_calc.py", b"calc_test.py", b"pytest.py",
     b"_pytest/python.py", b"site.pth", b"pyproject.toml"],
)  # fmt: skip
def test_python_test_paths_are_protected(path: bytes) -> None:
    assert is_runner_protected(path)


def test_code_is_not_protected() -> None:
    assert not is_runner_protected(b"calc.py")
    assert not is_runner_protected(b"src/pkg/testing.py")


@pytest.mark.parametrize("runner", RUNNERS, ids=lambda runner: runner.name)
def test_each_runner_protects_its_own_examples(runner: object) -> None:
    """The gate refuses an ignore glob by these examples: each must be a path the runner
    protects, and each runner names some."""
    assert isinstance(runner, Runner)
    assert runner.examples
    assert all(runner.protected(example.encode()) for example in runner.examples)


@pytest.mark.parametrize("runner", RUNNERS, ids=lambda runner: runner.name)
def test_each_detected_runner_names_an_example_test_as_require_tests_takes_it(
    runner: Runner,
) -> None:
    """claim init writes it as the commented require_tests example."""
    if runner.name == "package-script":  # never detected: its commands are refused
        assert runner.example_test == ""
        return
    assert "::" in runner.example_test
    report_name(runner.example_test)
