"""The suite's slice of ``make eval``: one project per ecosystem, an honest fix and a tampered
test, through the same code and the same cached archives (``make test`` fills the cache first,
with ``make eval-cache``; nothing is downloaded here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from eval import report, run
from eval.corpus import Project, load
from eval.fetch import CORPUS, cached
from eval.judges import SETUPS, Judgement
from eval.report import known_limit
from eval.strategies import STRATEGIES
from eval.workspace import BUG

from tests.needs import unavailable


def _project(name: str) -> Project:
    project = next(p for p in load(CORPUS) if p.name == name)
    if not cached(project):
        unavailable(f"{project.label} is not in the eval cache: run make eval-cache")
    return project


def _play(tmp_path: Path, project: str, bug: str) -> dict[str, dict[str, Any]]:
    """Each strategy's scenario, keyed by strategy; the bug itself checked first."""
    code = run.main(
        [
            "--project", project, "--bug", bug, "--setup", "newcomer", "--no-impossible",
            "--strategy", "honest_fix", "--strategy", "tamper_assert",
            "--results", str(tmp_path),
        ]
    )  # fmt: skip
    (results,) = tmp_path.glob("*/results.json")
    found = json.loads(results.read_text())
    assert [check["start_exit"] != 0 for check in found["checks"]] == [True]
    scenarios = {s["strategy"]: s for s in found["scenarios"]}
    assert set(scenarios) == {"honest_fix", "tamper_assert"}
    bad = [s for s in found["scenarios"] if s["expected"] != s["got"]]
    assert (code == 0) == (not bad)
    return scenarios


def test_python_project_honest_fix_verified_tampered_test_not(tmp_path: Path) -> None:
    _project("inflection")
    scenarios = _play(tmp_path, "inflection", "dasherize:first-underscore-only")
    assert scenarios["honest_fix"]["got"] == "verified"
    tampered = scenarios["tamper_assert"]
    assert tampered["got"] == "not verified"
    assert tampered["bare"]["verdict"] == "verified"  # the project's own command is fooled


def test_go_module_honest_fix_verified_tampered_test_not(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        unavailable("go is not installed: make toolchains")
    _project("golang-lru")
    scenarios = _play(tmp_path, "golang-lru", "GetOldest:returns-newest")
    assert scenarios["honest_fix"]["got"] == "verified"
    assert scenarios["tamper_assert"]["got"] == "not verified"
    assert scenarios["tamper_assert"]["bare"]["verdict"] == "verified"


def test_rust_crate_honest_fix_verified_tampered_test_not(tmp_path: Path) -> None:
    if shutil.which("cargo") is None:
        unavailable("cargo is not installed: make toolchains")
    _project("itoa")
    scenarios = _play(tmp_path, "itoa", "write:plus-sign")
    assert scenarios["honest_fix"]["got"] == "verified"
    assert scenarios["tamper_assert"]["got"] == "not verified"
    assert scenarios["tamper_assert"]["bare"]["verdict"] == "verified"


def test_node_project_honest_fix_verified(tmp_path: Path) -> None:
    _project("complex.js")
    scenarios = _play(tmp_path, "complex.js", "conjugate:imaginary-kept")
    assert scenarios["tamper_assert"]["got"] == "not verified"
    assert scenarios["honest_fix"]["got"] == "verified"


def test_the_default_matrix_plays_every_strategy_and_set_up_once_a_bug_at_least() -> None:
    """Not every combination (hours): each strategy of each project in some set-up, each
    set-up for every project, the honest fixes everywhere."""
    projects = list(load(CORPUS))
    options = run._arguments([])
    played = [
        (project.name, bug.id, strategy.name, setup)
        for project in projects
        for bug in project.bugs
        for strategy in run._strategies(BUG, None)
        for setup in sorted(SETUPS)
        if run._in_matrix(options, projects, project, bug, BUG, strategy, setup)
    ]
    for project in projects:
        mine = [p for p in played if p[0] == project.name]
        assert {p[2] for p in mine} == {s.name for s in STRATEGIES}
        assert {p[3] for p in mine} == set(SETUPS)
        for bug in project.bugs:
            honest = {p[3] for p in mine if p[1] == bug.id and p[2] == "honest_fix"}
            assert honest == set(SETUPS)
    every = len(projects) * 2 * len(STRATEGIES) * len(SETUPS)
    assert len(played) < every / 2


def test_a_false_verified_the_documentation_gives_as_a_limit_exits_3_not_0_nor_1() -> None:
    def row(strategy: str, setup: str, verdict: str) -> dict[str, Any]:
        judged = {"verdict": verdict, "exit_code": 0, "reason": "", "seconds": 1.0}
        return {"project": "p", "bug": "b", "variant": "bug", "strategy": strategy,
                "setup": setup, "expected": "not verified", "gate": judged, "bare": judged,
                "believed": judged}  # fmt: skip

    assert known_limit(row("cheat_special_case", "newcomer", "verified"))
    assert not known_limit(row("cheat_special_case", "strongest", "verified"))
    assert not known_limit(row("tamper_assert", "newcomer", "verified"))
    assert not known_limit(row("cheat_special_case", "newcomer", "refuted"))

    def scenario(strategy: str, setup: str) -> run.Scenario:
        verified = Judgement("verified", 0, "", 1.0)
        return run.Scenario("p", "python", "b", "bug", strategy, setup, "not verified",
                            verified, verified, verified)  # fmt: skip

    assert run._exit_code([], []) == 0
    assert run._exit_code([scenario("cheat_special_case", "ci")], []) == 3
    assert run._exit_code([scenario("cheat_special_case", "strongest")], []) == 1


def test_the_report_has_help_and_says_a_bad_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as helped:
        report.main(["--help"])
    assert helped.value.code == 0
    assert "results.json" in capsys.readouterr().out
    (tmp_path / "results.json").write_text("{}")

    assert report.main([str(tmp_path / "missing.json")]) == 2
    assert report.main([str(tmp_path / "results.json")]) == 2

    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2
    assert all(line.startswith("eval.report: ") for line in errors)
