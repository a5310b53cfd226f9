"""Run the corpus: every bug checked, its strategies played in the set-ups, the table written.

``python -m eval [--project NAME] [--setup NAME] [--strategy NAME] [--matrix default|full]
[--jobs N] [--results DIR]``. Exits 0 when every verdict is the expected one; 1 when a scenario
is falsely verified or falsely blocked by the gate and no documented limit explains it, or a bug
is not sound (not caught by the project's own tests, an edit that does not apply, hidden tests
that fail the release or pass the special case); 3 when every false verdict is a documented
limit of its set-up (each listed); 2 when the corpus or the cache is wrong.
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
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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
from eval.report import known_limit, markdown, totals
from eval.strategies import IMPOSSIBLE_STRATEGIES, STRATEGIES, NotApplicable, Strategy
from eval.workspace import BUG, IMPOSSIBLE, hidden_tests, pristine, start_state

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
    # The operator's hidden tests laid into the release (must pass) and into the special case
    # (must fail); None where the project has none, or the bug no special case.
    hidden_release_exit: int | None = None
    hidden_special_exit: int | None = None

    @property
    def sound(self) -> bool:
        hidden = self.hidden_release_exit in (None, 0) and self.hidden_special_exit != 0
        return self.pristine_exit == 0 and self.start_exit != 0 and not self.edits_error and hidden


def main(argv: list[str] | None = None) -> int:
    options = _arguments(argv)
    try:
        projects = [p for p in load(options.corpus) if _chosen(options.project, p.name)]
    except CorpusError as error:
        print(f"eval: {error}", file=sys.stderr)
        return 2
    results = _results_dir(options.results)
    env = scenario_env(results / "state")
    bare = BareRun(env, cache_dir())
    began = time.monotonic()
    starts = results / "starts"
    try:
        with ThreadPoolExecutor(max_workers=options.jobs) as pool:
            units = [
                (project, bug, variant)
                for project in projects
                for bug in project.bugs
                if _chosen(options.bug, bug.id)
                for variant in _variants(bug, options)
            ]
            checks = list(pool.map(lambda u: _check_bug(u[0], u[1], u[2], bare, starts), units))
            # Written now, beside scenarios.jsonl: a run stopped early still has them.
            _write(results / "checks.json", json.dumps([asdict(c) for c in checks], indent=2))
            plays = [
                (project, bug, variant, strategy, SETUPS[name])
                for (project, bug, variant), check in zip(units, checks, strict=True)
                if check.sound and not options.check_only
                for strategy in _strategies(variant, options.strategy)
                for name in sorted(SETUPS)
                if _chosen(options.setup, name)
                and _in_matrix(options, projects, project, bug, variant, strategy, name)
            ]
            plays = _interleaved(plays)
            played = pool.map(
                lambda p: _play(p[0], p[1], p[2], p[3], p[4], env, bare, results, starts), plays
            )
            scenarios = [scenario for scenario in played if scenario is not None]
    except FetchError as error:
        print(f"eval: {error}", file=sys.stderr)
        return 2
    shutil.rmtree(starts, ignore_errors=True)
    rows = [_row(s) for s in scenarios]
    found = [asdict(check) for check in checks]
    about = _about(began, scenarios, checks, options.jobs)
    document = {"about": about, "checks": found, "scenarios": rows}
    _write(results / "results.json", json.dumps(document, indent=2) + "\n")
    _write(results / "table.md", markdown(rows, found))
    print((results / "table.md").read_text())
    print(f"results: {results}")
    return _exit_code(scenarios, checks)


Play = tuple[Project, Bug, str, Strategy, type[Setup]]


def _interleaved(plays: list[Play]) -> list[Play]:
    """Each project's scenarios in turn, so that a run stopped early has played some of every
    project's (a long run on a loaded machine may not end)."""
    by_project: dict[str, list[Play]] = {}
    for play in plays:
        by_project.setdefault(play[0].name, []).append(play)
    queues = list(by_project.values())
    longest = max((len(queue) for queue in queues), default=0)
    return [queue[n] for n in range(longest) for queue in queues if n < len(queue)]


def _exit_code(scenarios: list[Scenario], checks: list[BugCheck]) -> int:
    """0: every verdict as expected; 1: a false verdict no documented limit explains, or a bug
    of the corpus that is not sound; 3: false verdicts, each a documented limit (known_limit)."""
    wrong = [s for s in scenarios if s.false_verified or s.false_block]
    if any(not check.sound for check in checks) or any(not known_limit(_row(s)) for s in wrong):
        return 1
    return 3 if wrong else 0


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


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
    parser.add_argument(
        "--matrix",
        choices=("default", "full"),
        help="default: every project, bug, strategy and set-up, not every combination (see "
        "docs/evaluation.md); full: every combination (hours); unless given, full when a "
        "--setup or --strategy is named",
    )
    parser.add_argument(
        "--jobs",
        type=_positive,
        default=os.cpu_count() or 1,
        help="scenarios played at once (default: the machine's cores)",
    )
    return parser.parse_args(argv)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return value


def _in_matrix(
    options: argparse.Namespace,
    projects: list[Project],
    project: Project,
    bug: Bug,
    variant: str,
    strategy: Strategy,
    setup: str,
) -> bool:
    """The default matrix plays every project, bug, strategy and set-up, not every combination
    (hours): the honest fix of every bug in every set-up (a false block anywhere shows), the
    special case of the first bug in every set-up (what the hidden tests change shows), and
    every other strategy once a project, on one bug in one set-up, turning through bugs and
    set-ups from strategy to strategy and project to project; an impossible variant plays its
    honest fix and its special case, each in one set-up. ``--matrix full`` (or naming a
    set-up or a strategy without ``--matrix default``) plays every combination."""
    chosen = options.matrix or ("full" if options.setup or options.strategy else "default")
    if chosen == "full":
        return True
    setups = sorted(SETUPS)
    bug_index = project.bugs.index(bug)
    turn = [s.name for s in STRATEGIES].index(strategy.name) + projects.index(project)
    if variant == IMPOSSIBLE:
        chosen = strategy.name in ("honest_fix", "cheat_special_case")
        return chosen and setups[(turn + bug_index) % len(setups)] == setup
    if strategy.name == "honest_fix" or (strategy.name == "cheat_special_case" and bug_index == 0):
        return True
    on_bug = turn % len(project.bugs) == bug_index
    return on_bug and setups[(turn // len(project.bugs)) % len(setups)] == setup


def _variants(bug: Bug, options: argparse.Namespace) -> list[str]:
    return [BUG] if bug.impossible is None or options.no_impossible else [BUG, IMPOSSIBLE]


def _chosen(wanted: list[str] | None, name: str) -> bool:
    return wanted is None or name in wanted


def _results_dir(chosen: Path | None) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = chosen or Path(os.environ.get(RESULTS_VARIABLE) or cache_dir() / "results")
    results = base / stamp
    results.mkdir(parents=True)
    return results


def _strategies(variant: str, wanted: list[str] | None) -> list[Strategy]:
    found = [s for s in STRATEGIES if _chosen(wanted, s.name)]
    if variant == IMPOSSIBLE:
        found = [s for s in found if s.name in IMPOSSIBLE_STRATEGIES]
    return found


def _start_of(project: Project, bug: Bug, variant: str, starts: Path) -> Path:
    """The start repository of a bug's variant, built once and copied for each scenario (a
    copy is the same repository: same commits, same ids)."""
    return starts / project.name / bug.id.replace(":", "_").replace("/", "_") / variant


def _check_bug(project: Project, bug: Bug, variant: str, bare: BareRun, starts: Path) -> BugCheck:
    """The release's tests pass, the start's fail, each edit of the bug applies to the start,
    the operator's hidden tests pass on the release and fail the special case. The start
    repository is kept for the scenarios."""
    start = _start_of(project, bug, variant, starts)
    start.parent.mkdir(parents=True, exist_ok=True)
    start_state(project, bug, variant, start)
    with tempfile.TemporaryDirectory(prefix="eval-check-") as scratch:
        release = Path(scratch) / "release"
        pristine(project, release)
        pristine_exit = bare.judge(project, release).exit_code
        copy = Path(scratch) / "start"
        shutil.copytree(start, copy, symlinks=True)
        start_exit = bare.judge(project, copy).exit_code
        edits_error = _edits_error(bug, start, Path(scratch) / "edited")
        hidden = hidden_tests(project)
        hidden_release = hidden_special = None
        if hidden is not None:
            shutil.copytree(hidden, release, dirs_exist_ok=True)
            hidden_release = bare.judge(project, release).exit_code
            if bug.special_case is not None and not edits_error:
                special = Path(scratch) / "special"
                shutil.copytree(start, special, symlinks=True)
                bug.special_case.apply(special)
                shutil.copytree(hidden, special, dirs_exist_ok=True)
                hidden_special = bare.judge(project, special).exit_code
    check = BugCheck(
        project.label, bug.id, variant, pristine_exit, start_exit, edits_error,
        hidden_release, hidden_special,
    )  # fmt: skip
    print(
        f"{project.label} {bug.id} ({variant}): tests pass on the release: "
        f"{check.pristine_exit == 0}, fail on the start: {check.start_exit != 0}"
        + (f", {check.edits_error}" if check.edits_error else "")
        + ("" if hidden_release is None else f", hidden tests pass: {hidden_release == 0}")
        + ("" if hidden_special is None else f", fail the special case: {hidden_special != 0}"),
        flush=True,
    )
    return check


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


_SAY = threading.Lock()


def _play(
    project: Project,
    bug: Bug,
    variant: str,
    strategy: Strategy,
    kind: type[Setup],
    env: dict[str, str],
    bare: BareRun,
    results: Path,
    starts: Path,
) -> Scenario | None:
    setup = kind(env)
    scratch = Path(tempfile.mkdtemp(prefix="eval-", dir=results))
    tree = scratch / project.name
    try:
        # Played once on a copy first: a strategy with no form here costs no set-up.
        shutil.copytree(_start_of(project, bug, variant, starts), tree, symlinks=True)
        try:
            strategy.play(tree, project, bug)
        except NotApplicable:
            return None
        shutil.rmtree(tree)
        shutil.copytree(_start_of(project, bug, variant, starts), tree, symlinks=True)
        try:
            setup.prepare(tree, scratch / "operator", hidden_tests(project))
        except SetupFailed as failed:
            gate = Judgement("setup failed", -1, str(failed), 0.0)
        else:
            try:
                strategy.play(tree, project, bug)
            except NotApplicable:
                return None
            gate = setup.judge(tree)
        scenario = Scenario(
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
        with _SAY:
            _say(scenario)
            with (results / "scenarios.jsonl").open("a") as stream:
                stream.write(json.dumps(_row(scenario)) + "\n")
        return scenario
    finally:
        setup.close()
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


def _about(
    began: float, scenarios: list[Scenario], checks: list[BugCheck], jobs: int
) -> dict[str, object]:
    """What was run, where, with which tools, and the totals."""
    return {
        "command": "python -m eval " + " ".join(sys.argv[1:]),
        "jobs": jobs,
        "load_average": " ".join(f"{load:.1f}" for load in os.getloadavg()),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(time.monotonic() - began, 1),
        "claim": _version([claim_program(), "--version"]),
        "python": platform.python_version(),
        "node": _version(["node", "--version"]),
        "go": _version(["go", "version"]),
        "cargo": _version(["cargo", "--version"]),
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
