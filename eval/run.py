"""Run the corpus: every bug checked, every strategy played in every set-up, the table written.

``python -m eval [--project NAME] [--setup NAME] [--strategy NAME] [--results DIR]``. Exits 1
when any scenario is falsely verified or falsely blocked by the gate, or a bug is not caught by
the project's own tests (each is listed), 2 when the corpus or the cache is wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.corpus import Bug, CorpusError, Project, load
from eval.fetch import CORPUS, FetchError, cache_dir
from eval.judges import (
    SETUPS,
    BareRun,
    Judgement,
    Setup,
    SetupFailed,
    believe,
    claim_program,
    scenario_env,
)
from eval.report import markdown, totals
from eval.strategies import IMPOSSIBLE_STRATEGIES, STRATEGIES, NotApplicable, Strategy
from eval.workspace import BUG, IMPOSSIBLE, pristine, start_state

RESULTS_VARIABLE = "COMPLETION_CLAIM_EVAL_RESULTS"


@dataclass(frozen=True)
class Scenario:
    project: str
    ecosystem: str
    bug: str
    variant: str
    strategy: str
    setup: str
    expected: str
    gate: Judgement
    bare: Judgement
    believed: Judgement

    @property
    def got(self) -> str:
        return "verified" if self.gate.verdict == "verified" else "not verified"

    @property
    def false_verified(self) -> bool:
        return self.expected == "not verified" and self.got == "verified"

    @property
    def false_block(self) -> bool:
        return self.expected == "verified" and self.got != "verified"


@dataclass(frozen=True)
class BugCheck:
    project: str
    bug: str
    variant: str
    pristine_exit: int  # the project's own tests on the release: must pass
    start_exit: int  # on the start state: must fail
    edits_error: str  # an edit of the bug that does not apply to the start state

    @property
    def sound(self) -> bool:
        return self.pristine_exit == 0 and self.start_exit != 0 and not self.edits_error


def main(argv: list[str] | None = None) -> int:
    options = _arguments(argv)
    try:
        projects = [p for p in load(options.corpus) if _chosen(options.project, p.name)]
    except CorpusError as error:
        print(f"eval: {error}", file=sys.stderr)
        return 2
    results = _results_dir(options.results)
    env = scenario_env(results / "state")
    scenarios: list[Scenario] = []
    checks: list[BugCheck] = []
    began = time.monotonic()
    try:
        for project in projects:
            _run_project(project, options, env, results, scenarios, checks)
    except FetchError as error:
        print(f"eval: {error}", file=sys.stderr)
        return 2
    rows = [_row(s) for s in scenarios]
    found = [asdict(check) for check in checks]
    about = _about(began, scenarios, checks)
    document = {"about": about, "checks": found, "scenarios": rows}
    (results / "results.json").write_text(json.dumps(document, indent=2) + "\n")
    (results / "table.md").write_text(markdown(rows, found))
    print((results / "table.md").read_text())
    print(f"results: {results}")
    bad = [s for s in scenarios if s.false_verified or s.false_block]
    return 1 if bad or not all(check.sound for check in checks) else 0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--project", action="append", help="only this project (repeatable)")
    parser.add_argument("--setup", action="append", choices=sorted(SETUPS))
    parser.add_argument("--strategy", action="append", help="only this strategy (repeatable)")
    parser.add_argument("--bug", action="append", help="only this bug id (repeatable)")
    parser.add_argument("--no-impossible", action="store_true", help="leave those variants out")
    parser.add_argument("--check-only", action="store_true", help="check the bugs, play nothing")
    parser.add_argument("--results", type=Path, help=f"default: ${RESULTS_VARIABLE} or the cache")
    return parser.parse_args(argv)


def _chosen(wanted: list[str] | None, name: str) -> bool:
    return wanted is None or name in wanted


def _results_dir(chosen: Path | None) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = chosen or Path(os.environ.get(RESULTS_VARIABLE) or cache_dir() / "results")
    results = base / stamp
    results.mkdir(parents=True)
    return results


def _run_project(
    project: Project,
    options: argparse.Namespace,
    env: dict[str, str],
    results: Path,
    scenarios: list[Scenario],
    checks: list[BugCheck],
) -> None:
    bare = BareRun(env, cache_dir())
    setups = [SETUPS[name] for name in sorted(SETUPS) if _chosen(options.setup, name)]
    for bug in project.bugs:
        if not _chosen(options.bug, bug.id):
            continue
        variants = [BUG] if bug.impossible is None or options.no_impossible else [BUG, IMPOSSIBLE]
        for variant in variants:
            check = _check_bug(project, bug, variant, bare)
            checks.append(check)
            print(
                f"{project.label} {bug.id} ({variant}): tests pass on the release: "
                f"{check.pristine_exit == 0}, fail on the start: {check.start_exit != 0}"
                + (f", {check.edits_error}" if check.edits_error else ""),
                flush=True,
            )
            if not check.sound or options.check_only:
                continue
            for strategy in _strategies(variant, options.strategy):
                for setup in setups:
                    scenario = _play(project, bug, variant, strategy, setup(env), bare, results)
                    if scenario is not None:
                        scenarios.append(scenario)
                        _say(scenario)
                        with (results / "scenarios.jsonl").open("a") as stream:
                            stream.write(json.dumps(_row(scenario)) + "\n")


def _strategies(variant: str, wanted: list[str] | None) -> list[Strategy]:
    found = [s for s in STRATEGIES if _chosen(wanted, s.name)]
    if variant == IMPOSSIBLE:
        found = [s for s in found if s.name in IMPOSSIBLE_STRATEGIES]
    return found


def _check_bug(project: Project, bug: Bug, variant: str, bare: BareRun) -> BugCheck:
    with tempfile.TemporaryDirectory(prefix="eval-check-") as scratch:
        release = Path(scratch) / "release"
        pristine(project, release)
        pristine_exit = bare.judge(project, release).exit_code
        start = Path(scratch) / "start"
        start_state(project, bug, variant, start)
        start_exit = bare.judge(project, start).exit_code
        edits_error = _edits_error(bug, start, Path(scratch) / "edited")
    return BugCheck(project.label, bug.id, variant, pristine_exit, start_exit, edits_error)


def _edits_error(bug: Bug, start: Path, scratch: Path) -> str:
    """Each of the bug's edits applied to a copy of the start state: the first that fails."""
    edits = [bug.mutation.reverted(), bug.wrong_fix, bug.tamper_assert]
    edits += [edit for edit in (bug.special_case, bug.tamper_skip) if edit is not None]
    for edit in edits:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(start, scratch, symlinks=True)
        try:
            edit.apply(scratch)
        except CorpusError as error:
            return str(error)
    return ""


def _play(
    project: Project,
    bug: Bug,
    variant: str,
    strategy: Strategy,
    setup: Setup,
    bare: BareRun,
    results: Path,
) -> Scenario | None:
    scratch = Path(tempfile.mkdtemp(prefix="eval-", dir=results))
    tree = scratch / project.name
    try:
        start_state(project, bug, variant, tree)
        try:
            setup.prepare(tree, scratch / "operator")
        except SetupFailed as failed:
            gate = Judgement("setup failed", -1, str(failed), 0.0)
        else:
            try:
                strategy.play(tree, project, bug)
            except NotApplicable:
                return None
            gate = setup.judge(tree)
        return Scenario(
            project=project.label,
            ecosystem=project.ecosystem,
            bug=bug.id,
            variant=variant,
            strategy=strategy.name,
            setup=setup.name,
            expected=strategy.expected(variant),
            gate=gate,
            bare=bare.judge(project, tree),
            believed=believe(),
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _say(scenario: Scenario) -> None:
    mark = (
        "FALSE VERIFIED"
        if scenario.false_verified
        else "FALSE BLOCK"
        if scenario.false_block
        else "ok"
    )
    print(
        f"  {scenario.bug} {scenario.variant} {scenario.strategy} [{scenario.setup}]: "
        f"expected {scenario.expected}, gate {scenario.gate.verdict} ({scenario.gate.exit_code}), "
        f"bare {scenario.bare.verdict}: {mark}",
        flush=True,
    )


def _about(began: float, scenarios: list[Scenario], checks: list[BugCheck]) -> dict[str, object]:
    """What was run, where, with which tools, and the totals."""
    return {
        "command": "python -m eval " + " ".join(sys.argv[1:]),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(time.monotonic() - began, 1),
        "claim": _version([claim_program(), "--version"]),
        "python": platform.python_version(),
        "node": _version(["node", "--version"]),
        "go": _version(["go", "version"]),
        "machine": f"{platform.system()} {platform.release()} {platform.machine()}, "
        f"{os.cpu_count()} cores",
        "bugs_unsound": [f"{c.project} {c.bug} ({c.variant})" for c in checks if not c.sound],
        **totals([_row(s) for s in scenarios]),
    }


def _row(scenario: Scenario) -> dict[str, Any]:
    return asdict(scenario) | {"got": scenario.got}


def _version(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return "missing"
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else "?"
