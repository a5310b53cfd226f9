"""The gate on Java projects, Maven's and Gradle's, with the check ``claim init`` writes for them
(the detected command, the default branch's commit as the trusted ref): a wrong fix is refuted,
a test edited to agree with the bug is not verified, the honest fix is verified; names in the
reports' own form feed ``require_tests`` and the agent's failure lines.

Maven Central is not reachable here: Maven's command names Debian's repository
(``-Dmaven.repo.local=/usr/share/maven-repo``), where an operator's would come from the
dependency cache; Gradle's build names it as a ``file:`` repository.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from completion_claim.gate.run import run_gate, start_gate
from completion_claim.observe.runners.java import Gradle, Maven
from tests.fixtures.java import (
    CALC,
    MAIN,
    MAVEN_REPOSITORY,
    TEST,
    calc,
    gradle_project,
    junit4_test,
    jupiter_test,
    maven_project,
)
from tests.fixtures.projects import head_commit, write_files
from tests.gate.conftest import POLICY, WriteConfig

Project = Callable[..., Path]
PROJECTS: dict[str, tuple[Project, Callable[[int], str]]] = {
    "maven": (maven_project, jupiter_test),
    "gradle": (gradle_project, junit4_test),
}
WRONG_FIX = calc("*")  # 2 * 3 is not 5, 2 * 0 is not 2
FAILURE_LINES = {
    "maven": "com.example.CalcTest::add failed: expected: <5> but was: <6>",
    "gradle": (
        "com.example.CalcTest::add failed: java.lang.AssertionError: expected:<5> but was:<6>"
    ),
}


def check_for(tool: str, repo: Path, extra: str = "", *, baseline: bool = False) -> str:
    """The [[check]] claim init writes for the detected project (with Debian's repository named,
    for Maven, in place of the dependency cache). Without the start's test baseline unless
    ``baseline``: a build at the start costs as much as the judged one, and only the honest fix
    takes one, to judge with it as an operator's gate does."""
    runner = Maven() if tool == "maven" else Gradle()
    detected = runner.detect(repo)
    assert detected is not None
    command = list(detected.command)
    if tool == "maven":
        command.insert(1, f"-Dmaven.repo.local={MAVEN_REPOSITORY}")
    return (
        f'[[check]]\ntype = "test_run"\ncommand = {json.dumps(command)}\n'
        f'trusted_ref = "{head_commit(repo)}"\ntimeout_s = 600\n{extra}'
        + ("" if baseline else "baseline = false\n")
    )


@pytest.mark.parametrize("tool", list(PROJECTS))
def test_a_wrong_fix_is_refuted_naming_the_failing_test(
    tmp_path: Path, write_config: WriteConfig, tool: str
) -> None:
    make, _ = PROJECTS[tool]
    repo = make(tmp_path / "repo")
    config = write_config(POLICY + check_for(tool, repo))
    start_gate(config, repo)
    write_files(repo, {MAIN: WRONG_FIX})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert (result.verdict.state, result.exit_code) == ("refuted", 2)
    lines = result.agent_reason.splitlines()
    assert FAILURE_LINES[tool] in lines


@pytest.mark.parametrize("tool", list(PROJECTS))
def test_a_test_edited_to_agree_with_the_bug_is_not_verified(
    tmp_path: Path, write_config: WriteConfig, tool: str
) -> None:
    make, test = PROJECTS[tool]
    repo = make(tmp_path / "repo")
    config = write_config(POLICY + check_for(tool, repo))
    start_gate(config, repo)
    write_files(repo, {TEST: test(-1)})  # add(2, 3) == -1: the bug, now "expected"

    result = run_gate(config, repo, outcome="Fixed the test.")

    assert result.exit_code != 0
    assert result.verdict.state == "refuted"  # the trusted test ran, and failed
    assert f"your changes to {TEST} were not used" in result.agent_reason


@pytest.mark.parametrize("tool", list(PROJECTS))
def test_the_honest_fix_is_verified_with_its_required_tests(
    tmp_path: Path, write_config: WriteConfig, tool: str
) -> None:
    make, _ = PROJECTS[tool]
    repo = make(tmp_path / "repo")
    required = 'require_tests = ["com.example.CalcTest::add", "com.example.CalcTest::addZero"]\n'
    config = write_config(
        POLICY + "min_tests = 2\n" + check_for(tool, repo, required, baseline=True)
    )
    start_gate(config, repo)
    write_files(repo, {MAIN: CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert (result.verdict.state, result.exit_code, result.agent_reason) == ("verified", 0, "")
    (item,) = [e for e in result.document["evidence"] if e["check_type"] == "test_run"]
    assert item["observed_value"]["tests"] == {
        "com.example.CalcTest::add": "passed",
        "com.example.CalcTest::addZero": "passed",
    }
    assert item["details"]["runner"] == tool


def test_a_required_test_the_reports_do_not_name_is_not_verified(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = maven_project(tmp_path / "repo")
    required = 'require_tests = ["com.example.CalcTest::subtract"]\n'
    config = write_config(POLICY + check_for("maven", repo, required))
    start_gate(config, repo)
    write_files(repo, {MAIN: CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state != "verified"
    assert result.exit_code != 0


def test_min_tests_counts_the_tests_the_reports_name(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = gradle_project(tmp_path / "repo")
    config = write_config(POLICY + "min_tests = 3\n" + check_for("gradle", repo))
    start_gate(config, repo)
    write_files(repo, {MAIN: CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "unverified"
    assert "2 tests executed; the policy's min_tests is 3" in result.agent_reason
