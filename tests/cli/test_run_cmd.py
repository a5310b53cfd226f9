"""``claim run -- AGENT``: small scripted agents (python scripts that edit a real git repository
and say "Done") gated by the real gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli.run_cmd import final_message

from ..fixtures.projects import CALC, CALC_BUGGY, GIT_ENV, TEST_CALC, make_repo

CLAIM = Path(sys.executable).parent / "claim"

AGENT = """\
import os, sys
feedback = os.environ.get("CLAIM_FEEDBACK", "")
{body}
"""

RIGHT = (
    f"open('calc.py', 'w').write({CALC!r})\n"
    "print('Editing calc.py...')\nprint()\nprint('Done. All tests pass.')"
)
WRONG = f"open('calc.py', 'w').write({CALC_BUGGY!r})\nprint('Done. All tests pass.')"
LEARNS = (
    "fixed = bool(feedback)\n"
    f"open('calc.py', 'w').write({CALC!r} if fixed else {CALC_BUGGY!r})\n"
    "print('attempt', os.environ['CLAIM_ATTEMPT'], 'fixed' if fixed else 'guessed')\n"
    "print('Done.')"
)
LEARNS_FROM_ARGV = (
    "fixed = len(sys.argv) > 2 and 'failed' in sys.argv[-1]\n"
    f"open('calc.py', 'w').write({CALC!r} if fixed else {CALC_BUGGY!r})\n"
    "print('Done.')"
)


def setup(tmp_path: Path, body: str) -> tuple[Path, Path]:
    config = (
        f'[gate]\nruns_dir = "{tmp_path / "runs"}"\n\n'
        '[[check]]\ntype = "test_run"\n'
        f'command = ["{sys.executable}", "-m", "pytest", "-q", "-p", "no:cacheprovider"]\n'
        "baseline = false\n"  # a sandboxed run more at each start; the baseline's own tests take it
    )
    unfinished = "def add(a, b):\n    raise NotImplementedError\n"
    files = {"calc.py": unfinished, "tests/test_calc.py": TEST_CALC, "claim.toml": config}
    repo = make_repo(tmp_path / "repo", files)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT.format(body=body))
    return repo, agent


def claim_run(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIM), "run", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**GIT_ENV, **(env or {})},
        timeout=300,
        check=False,
    )


def recorded(tmp_path: Path) -> list[dict[str, Any]]:
    runs = tmp_path / "runs"
    found = []
    for path in sorted(runs.rglob("*.json")):
        document = json.loads(path.read_text())
        if isinstance(document, dict) and "verdict" in document:
            found.append(document)
    return found


def test_an_agent_that_does_the_work_is_verified(tmp_path: Path) -> None:
    repo, agent = setup(tmp_path, RIGHT)
    done = claim_run(repo, "--", sys.executable, str(agent))
    assert done.returncode == 0, done.stderr
    assert "Editing calc.py..." in done.stdout  # the agent's own output passes through
    assert "verified after 1 attempt" in done.stderr
    (document,) = recorded(tmp_path)
    assert document["verdict"]["state"] == "verified"
    assert document["claimed_outcome"] == "Done. All tests pass."


def test_a_false_done_is_refuted(tmp_path: Path) -> None:
    repo, agent = setup(tmp_path, WRONG)
    done = claim_run(repo, "--", sys.executable, str(agent))
    assert done.returncode == 2, done.stderr
    assert "failed" in done.stderr


def test_an_agent_that_changes_nothing_is_not_verified(tmp_path: Path) -> None:
    repo, agent = setup(tmp_path, "print('Done. Everything works.')")
    done = claim_run(repo, "--", sys.executable, str(agent))
    assert done.returncode != 0, done.stderr
    assert "nothing changed" in done.stderr


def test_retries_send_the_reason_back_in_the_environment(tmp_path: Path) -> None:
    repo, agent = setup(tmp_path, LEARNS)
    done = claim_run(repo, "--retries", "2", "--", sys.executable, str(agent))
    assert done.returncode == 0, done.stderr
    assert "attempt 1 guessed" in done.stdout
    assert "attempt 2 fixed" in done.stdout
    assert "attempt 1 of 3: refuted; running the agent again" in done.stderr
    assert "verified after 2 attempts" in done.stderr


def test_without_retries_the_agent_runs_once(tmp_path: Path) -> None:
    repo, agent = setup(tmp_path, LEARNS)
    done = claim_run(repo, "--", sys.executable, str(agent))
    assert done.returncode == 2
    assert "attempt 2" not in done.stdout


def test_feedback_arg_appends_the_reason_as_the_last_argument(tmp_path: Path) -> None:
    repo, agent = setup(tmp_path, LEARNS_FROM_ARGV)
    plain = claim_run(repo, "--retries", "1", "--", sys.executable, str(agent), "fix calc")
    assert plain.returncode == 2  # the reason was only in the environment
    repo2, agent2 = setup(tmp_path / "again", LEARNS_FROM_ARGV)
    with_arg = claim_run(
        repo2, "--retries", "1", "--feedback-arg", "--", sys.executable, str(agent2), "fix calc"
    )
    assert with_arg.returncode == 0, with_arg.stderr


def test_outcome_file_replaces_the_last_stdout_block(tmp_path: Path) -> None:
    repo, agent = setup(tmp_path, RIGHT + "\nopen('../outcome.txt', 'w').write('Fixed add().')")
    done = claim_run(
        repo, "--outcome-file", str(tmp_path / "outcome.txt"), "--", sys.executable, str(agent)
    )
    assert done.returncode == 0, done.stderr
    assert recorded(tmp_path)[0]["claimed_outcome"] == "Fixed add()."


def test_an_agent_that_cannot_start_is_one_line_exit_4(tmp_path: Path) -> None:
    repo, _ = setup(tmp_path, RIGHT)
    done = claim_run(repo, "--", str(tmp_path / "no-such-agent"))
    assert done.returncode == 4
    assert len(done.stderr.strip().splitlines()) == 1
    assert "cannot run the agent" in done.stderr


def test_no_config_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "bare", {"calc.py": CALC})
    done = claim_run(repo, "--", sys.executable, "-c", "print('Done')")
    assert done.returncode == 4
    assert "no claim.toml" in done.stderr


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("Done.", "Done."),
        ("step 1\nstep 2\n\nAll done.\nTests pass.\n", "All done.\nTests pass."),
        ("Summary\n\n\n  \n", "Summary"),
        ("a\n \t\nb", "b"),
        ("", ""),
        ("\n\n", ""),
    ],
)
def test_the_final_message_is_the_last_block_of_stdout(output: str, message: str) -> None:
    assert final_message(output) == message


# ---- a harness whose hooks never ran

RUNS_ITS_STOP_HOOK = (
    "import json, subprocess\n"
    f"open('calc.py', 'w').write({CALC!r})\n"
    "hooks = json.load(open('.codex/hooks.json'))['hooks']['Stop']\n"
    "payload = {'session_id': 's', 'cwd': os.getcwd(), 'hook_event_name': 'Stop',\n"
    "           'stop_hook_active': False, 'last_assistant_message': 'Done.'}\n"
    "subprocess.run(hooks[0]['hooks'][0]['command'], shell=True, input=json.dumps(payload),\n"
    "               text=True, capture_output=True)\n"
    "print('Done.')"
)


def harness_with_hooks(tmp_path: Path, body: str, name: str) -> tuple[Path, Path, dict[str, str]]:
    """A scripted agent installed as the executable ``name``, in a repository whose codex hooks
    ``claim hooks install`` wrote (without Codex's trust: they would not load in the real CLI)."""
    repo, agent = setup(tmp_path, body)
    executable = tmp_path / "bin" / name
    executable.parent.mkdir()
    executable.write_text(f"#!{sys.executable}\n" + agent.read_text())
    executable.chmod(0o755)
    env = {"HOME": str(tmp_path / "home")}
    installed = subprocess.run(
        [str(CLAIM), "hooks", "install", "--harness", "codex", "--no-trust"],
        cwd=repo, env={**GIT_ENV, **env}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    return repo, executable, env


def test_a_gated_harness_whose_stop_hook_never_ran_is_named_and_judged_here(
    tmp_path: Path,
) -> None:
    repo, codex, env = harness_with_hooks(tmp_path, RIGHT, "codex")
    done = claim_run(repo, "--", str(codex), env=env)
    assert done.returncode == 0, done.stderr
    assert (
        "claim run: codex stopped and no stop hook reached the gate: its codex hooks did not "
        "run (`claim hooks check --harness codex` says why)"
    ) in done.stderr
    assert "verified after 1 attempt" in done.stderr


def test_a_harness_whose_stop_hook_ran_is_not_named(tmp_path: Path) -> None:
    repo, codex, env = harness_with_hooks(tmp_path, RUNS_ITS_STOP_HOOK, "codex")
    done = claim_run(repo, "--", str(codex), env=env)
    assert done.returncode == 0, done.stderr
    assert "no stop hook reached the gate" not in done.stderr
    assert len(recorded(tmp_path)) == 2  # the hook's judgement, then claim run's


def test_an_agent_that_is_no_harness_is_not_expected_to_run_hooks(tmp_path: Path) -> None:
    repo, agent, env = harness_with_hooks(tmp_path, RIGHT, "my-agent")
    done = claim_run(repo, "--", str(agent), env=env)
    assert done.returncode == 0, done.stderr
    assert "no stop hook reached the gate" not in done.stderr
