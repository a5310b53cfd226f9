"""The suite's slice of ``make eval``: one project per ecosystem, an honest fix and a tampered
test, through the same code and the same cached archives (``make test`` fills the cache first,
with ``make eval-cache``; nothing is downloaded here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from eval import run
from eval.corpus import Project, load
from eval.fetch import CORPUS, cached

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


def test_node_project_honest_fix_verified(tmp_path: Path) -> None:
    _project("complex.js")
    scenarios = _play(tmp_path, "complex.js", "conjugate:imaginary-kept")
    assert scenarios["tamper_assert"]["got"] == "not verified"
    assert scenarios["honest_fix"]["got"] == "verified"
