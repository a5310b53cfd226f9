"""The gate where the agent says "done", in the real Codex, Copilot, Gemini CLI and OpenHands
CLIs: a scripted model per wire API, the hooks ``claim hooks install`` writes (and the trust it
writes for them), and each harness's non-interactive run. The assertions are on what the model
was told (the requests the CLI sent), what the run printed, and what the gate recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.needs import unavailable

from .clis import InstallFailed
from .harnesses import DRIVERS, Driver, Run
from .model_server import Request, Script, Turn
from .project import (
    CALC_FIXED,
    CALC_WITH_BUG,
    TESTS,
    TESTS_CHECK,
    Project,
    claim,
    git,
    make_project,
)
from .wires import GATE_REASON, WireRequest, serve_wire

TASK = "Fix add in calc.py so that the tests pass."
DONE = "Done. All tests pass."
CALC_FILES = {"calc.py": CALC_WITH_BUG, "tests/test_calc.py": TESTS}


def _marked(harness: str) -> Any:
    return pytest.param(harness, marks=getattr(pytest.mark, harness), id=harness)


FAST = [_marked(h) for h in ("codex", "copilot", "gemini")]
ALL = [*FAST, _marked("openhands")]


@dataclass
class Session:
    driver: Driver
    project: Project
    script: Script
    run: Run

    def feedback(self) -> list[str]:
        """The gate's reasons the model was given, in order (as the last request held them)."""
        turns = self.script.agent_requests
        return turns[-1].feedback() if turns else []

    def story(self) -> str:
        lines = [f"exit {self.run.returncode} after {self.run.seconds:.1f} s, "
                 f"{len(self.script.agent_requests)} model turns"]  # fmt: skip
        lines += [f"  installed: {line}" for line in self.project.installed.splitlines()]
        lines += [f"  feedback: {reason[:300]}" for reason in self.feedback()]
        lines += [f"  stdout: {self.run.stdout[-1500:]}", f"  stderr: {self.run.stderr[-1500:]}"]
        return "\n".join(lines)


@pytest.fixture
def driver(request: pytest.FixtureRequest) -> Driver:
    found = DRIVERS[request.param]
    try:
        found.executable()
    except InstallFailed as failure:
        unavailable(f"{found.harness} is not available: {failure}")
    return found


@contextmanager
def gated(
    driver: Driver,
    tmp_path: Path,
    script: Script,
    *,
    max_blocks: int,
    files: dict[str, str] = CALC_FILES,
    scope: str = "project",
    install_flags: tuple[str, ...] = (),
) -> Iterator[tuple[Project, dict[str, str]]]:
    """The harness offline against ``script``, and a project gated for it by ``claim hooks
    install`` (run with the harness's home, as the operator would)."""
    env = driver.environment(tmp_path / "home")
    with serve_wire(driver.wire, script) as url:
        driver.offline(env, url)
        project = make_project(
            tmp_path, files, TESTS_CHECK, ("test_run",), max_blocks=max_blocks,
            harness=driver.harness, scope=scope, env=env, install_flags=install_flags,
        )  # fmt: skip
        yield project, env


def session(
    driver: Driver,
    tmp_path: Path,
    script: Script,
    *,
    max_blocks: int,
    files: dict[str, str] = CALC_FILES,
    scope: str = "project",
    install_flags: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
) -> Session:
    """One non-interactive run (with ``extra`` arguments) in a project gated for ``driver``."""
    with gated(driver, tmp_path, script, max_blocks=max_blocks, files=files, scope=scope,
               install_flags=install_flags) as (project, env):  # fmt: skip
        ran = Session(driver, project, script, driver.run(project.repo, TASK, env, extra))
    print(ran.story())  # pytest shows it when the test fails
    return ran


def state(document: dict[str, Any]) -> str:
    assert "verdict_attestation" in document  # signed, as a key is configured
    found: str = document["verdict"]["state"]
    return found


def file_targets(document: dict[str, Any]) -> list[str]:
    return [m["target"] for m in document["mutations"] if m["kind"] == "file_write"]


@pytest.mark.parametrize("driver", ALL, indirect=True)
def test_the_cli_offers_the_shell_tool_the_scripts_call_with_the_arguments_they_send(
    driver: Driver, tmp_path: Path
) -> None:
    """Pins what the scenarios rely on, so an upgrade that renames the tool or its arguments
    fails here, plainly, rather than as a puzzling verdict."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    script = Script([["Nothing to do."]], then=["Nothing to do."])
    env = driver.environment(tmp_path / "home")
    extra = ("--skip-trust",) if driver.harness == "gemini" else ()
    with serve_wire(driver.wire, script) as url:
        driver.offline(env, url)
        ran = driver.run(repo, "Say hello", env, extra)

    assert ran.returncode == 0, ran.output[-2000:]
    request = script.agent_requests[0]
    assert isinstance(request, WireRequest)
    assert driver.shell_tool in request.tool_names
    assert set(driver.shell("true").input) <= request.tool_parameters(driver.shell_tool)
    assert any("Say hello" in text for text in request.texts())


@pytest.mark.parametrize("driver", ALL, indirect=True)
def test_a_wrong_fix_is_sent_back_with_the_failing_test_then_the_real_fix_is_verified(
    driver: Driver, tmp_path: Path
) -> None:
    calc = tmp_path / "repo" / "calc.py"

    def fix_what_the_gate_reported(request: Request) -> Turn:
        if any("test_add" in reason for reason in request.feedback()):
            return [
                "The gate says test_add fails; add must add.",
                driver.edit(calc, "a * b", "a + b"),
            ]
        return ["I was not told what failed."]

    script = Script(
        [
            ["Fixing add.", driver.edit(calc, "a - b", "a * b")],
            [DONE],
            fix_what_the_gate_reported,
            ["Fixed: add adds, test_add passes."],
        ],
        then=["unexpected extra turn"],
    )
    ran = session(driver, tmp_path, script, max_blocks=3)

    assert ran.run.returncode == 0
    edit_done, said_done, told, _fixed = ran.script.agent_requests
    assert edit_done.feedback() == said_done.feedback() == []
    (reason,) = set(told.feedback())  # the request right after the false "done"
    assert "tests/test_calc.py::test_add failed" in reason
    assert calc.read_text() == CALC_FIXED
    sent_back, accepted = ran.project.claims()
    assert state(sent_back) != "verified"
    assert file_targets(sent_back) == ["calc.py"]
    assert state(accepted) == "verified"
    assert file_targets(accepted) == ["calc.py"]
    checked = claim("check-verdict", str(ran.project.claim_paths()[-1]),
                    "--public-key", ran.project.public_key)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("valid: verdict verified, independence proven")


@pytest.mark.parametrize("driver", ALL, indirect=True)
def test_editing_the_test_to_agree_with_the_bug_is_sent_back_until_max_blocks_then_recorded(
    driver: Driver, tmp_path: Path
) -> None:
    test_file = tmp_path / "repo" / "tests" / "test_calc.py"

    def retry_with_a_tool_call(request: Request) -> Turn:
        """Each retry runs a command before saying done again: Gemini CLI then reports the
        stop as a fresh turn, which must not reset the count."""
        return ["Checking again.", driver.shell("true")] if request.feedback() else [DONE]

    script = Script(
        [["Updating the test.", driver.edit(test_file, "add(2, 3) == 5", "add(2, 3) == -1")],
         [DONE], retry_with_a_tool_call, [DONE], retry_with_a_tool_call, [DONE]],
        then=["unexpected extra turn"],
    )  # fmt: skip
    ran = session(driver, tmp_path, script, max_blocks=2)

    recorded = ran.project.claims()
    assert len(recorded) == 3
    for document in recorded:
        assert state(document) in ("refuted", "unverified")
        assert file_targets(document) == ["tests/test_calc.py"]
    reasons = set(ran.feedback())
    assert reasons
    assert all("tests/test_calc.py::test_add failed" in r for r in reasons)
    assert len(ran.script.agent_requests) == 6  # the edit, then three stops and two checks
    checked = claim("check-verdict", str(ran.project.claim_paths()[-1]),
                    "--public-key", ran.project.public_key)  # fmt: skip
    assert checked.returncode in (1, 2)


@pytest.mark.parametrize("driver", FAST, indirect=True)
def test_claiming_success_without_changing_anything_is_not_verified(
    driver: Driver, tmp_path: Path
) -> None:
    script = Script([[DONE]])
    ran = session(driver, tmp_path, script, max_blocks=1,
                  files={**CALC_FILES, "calc.py": CALC_FIXED})  # fmt: skip

    reasons = set(ran.feedback())
    assert any("nothing changed in the work tree" in r for r in reasons), reasons
    recorded = ran.project.claims()
    assert len(recorded) == 2
    for document in recorded:
        assert state(document) == "unverified"
        assert document["mutations"] == []
    assert GATE_REASON in next(iter(reasons))


@pytest.mark.parametrize("driver", FAST, indirect=True)
def test_hooks_installed_for_the_user_gate_every_project(driver: Driver, tmp_path: Path) -> None:
    """No folder trust is written at user scope (Gemini CLI, which will not start in an
    untrusted folder, is told to skip that check, which skips only a project's hooks)."""
    extra = ("--skip-trust",) if driver.harness == "gemini" else ()
    ran = session(driver, tmp_path, Script([[DONE]]), max_blocks=1, scope="user",
                  files={**CALC_FILES, "calc.py": CALC_FIXED}, extra=extra)  # fmt: skip

    assert any("nothing changed in the work tree" in r for r in ran.feedback())
    assert [state(document) for document in ran.project.claims()] == ["unverified"] * 2
    assert "will not run" not in ran.project.installed


@pytest.mark.parametrize("driver", [_marked("codex"), _marked("copilot")], indirect=True)
def test_an_install_that_cannot_make_the_hooks_run_says_so_before_the_run(
    driver: Driver, tmp_path: Path
) -> None:
    """Without the trust, Codex and Copilot skip the hooks without a word, and the false "done"
    goes through: the install said so first, and --strict failed."""
    ran = session(driver, tmp_path, Script([[DONE]]), max_blocks=1,
                  install_flags=("--no-trust", "--strict"))  # fmt: skip

    assert ran.project.install_exit == 1
    assert "the hooks will not run (non-interactive: " in ran.project.installed
    env = driver.environment(tmp_path / "home")
    checked = claim("hooks", "check", "--harness", driver.harness, "--json",
                    cwd=ran.project.repo, env=env)  # fmt: skip
    assert checked.returncode == 1
    assert json.loads(checked.stdout)["non_interactive"]
    assert ran.feedback() == []
    assert ran.project.claims() == []  # the gate never heard of the stop


@pytest.mark.parametrize("driver", [_marked("gemini")], indirect=True)
def test_gemini_in_a_folder_left_untrusted_refuses_to_run_loudly(
    driver: Driver, tmp_path: Path
) -> None:
    """Gemini CLI does not skip a project's hooks silently in `-p` mode: it will not start."""
    ran = session(driver, tmp_path, Script([[DONE]]), max_blocks=1,
                  install_flags=("--no-trust", "--strict"))  # fmt: skip

    assert ran.project.install_exit == 1
    assert "`gemini -p` refuses to start" in ran.project.installed
    assert ran.run.returncode != 0
    assert "not running in a trusted directory" in ran.run.output
    assert ran.script.agent_requests == []


@pytest.mark.parametrize("driver", ALL, indirect=True)
def test_project_hooks_committed_in_one_checkout_judge_the_checkout_they_run_in(
    driver: Driver, tmp_path: Path
) -> None:
    """Issue 21: the project file names no path of the checkout, so it is the same file in a
    clone elsewhere. Installed and committed in one folder, the repository is then moved; the
    new folder's install (for the harness's trust of it) leaves the file as it is, and the
    gate judges the moved tree (the old folder is gone: a pinned path would fail there)."""
    first, moved = tmp_path / "repo", tmp_path / "clone" / "repo"
    calc = moved / "calc.py"
    script = Script([["Fixing add.", driver.edit(calc, "a - b", "a + b")], [DONE]],
                    then=["unexpected extra turn"])  # fmt: skip
    with gated(driver, tmp_path, script, max_blocks=1) as (project, env):
        installed = json.loads(
            claim("hooks", "install", "--harness", driver.harness, "--json",
                  "--config", str(project.config), cwd=first, env=env).stdout
        )  # fmt: skip
        settings = Path(installed["path"])
        written = settings.read_text()
        moved.parent.mkdir()
        first.rename(moved)
        again = claim("hooks", "install", "--harness", driver.harness, "--json",
                      "--config", str(project.config), cwd=moved, env=env)  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["installed"] is False
        assert (moved / settings.relative_to(first)).read_text() == written
        assert str(first) not in written
        assert str(moved) not in written
        checked = claim("hooks", "check", "--harness", driver.harness, cwd=moved, env=env)
        assert checked.returncode == 0, checked.stdout
        ran = driver.run(moved, TASK, env)
    print(Session(driver, project, script, ran).story())

    assert ran.returncode == 0
    assert calc.read_text() == CALC_FIXED
    (accepted,) = project.claims()
    assert state(accepted) == "verified"
    assert file_targets(accepted) == ["calc.py"]


@pytest.mark.parametrize("driver", [_marked("codex"), _marked("gemini")], indirect=True)
def test_a_hook_without_repo_judges_the_session_folder_not_where_the_agent_cd_ed(
    driver: Driver, tmp_path: Path
) -> None:
    """Codex's and Gemini CLI's project hooks carry no --repo: the tree is the session's folder
    as the harness names it. An agent that leaves a wrong fix there, fixes a clone of its own
    elsewhere and says "done" from inside it still has the session's tree judged."""
    repo, clean = tmp_path / "repo", tmp_path / "clean"
    script = Script(
        [["Fixing add.", driver.edit(repo / "calc.py", "a - b", "a * b")],
         ["Working in a clean copy.",
          driver.shell(f"git clone -q {repo} {clean} && cd {clean} && "
                       "sed -i 's/a - b/a + b/' calc.py && python3 -m pytest -q")],
         [DONE], [DONE]],
        then=["unexpected extra turn"],
    )  # fmt: skip
    ran = session(driver, tmp_path, script, max_blocks=1)

    assert (clean / "calc.py").read_text() == CALC_FIXED  # the agent's move happened
    assert any("tests/test_calc.py::test_add failed" in r for r in ran.feedback())
    recorded = ran.project.claims()
    assert recorded
    for document in recorded:
        assert state(document) != "verified"
        assert file_targets(document) == ["calc.py"]
