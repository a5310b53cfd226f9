"""``claim hook start|stop`` run as the harness runs it (the real executable, the real gate, a real
repository), and ``claim hooks install|uninstall`` on real settings files."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..fixtures.gate_service import TOKEN_NAME, GateService, buggy_project, gate_service
from ..fixtures.projects import CALC, CALC_BUGGY, GIT_ENV, TEST_CALC, make_repo, write_files
from ..gate.payloads import documented_stop

CLAIM = Path(sys.executable).parent / "claim"


@pytest.fixture(autouse=True)
def _harness_homes(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`claim hooks install` writes the harness's trust under the user's home: the test's."""
    monkeypatch.setitem(GIT_ENV, "HOME", str(tmp_path_factory.mktemp("home")))
    for variable in ("CODEX_HOME", "COPILOT_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delitem(GIT_ENV, variable, raising=False)


def claim(
    *args: str, cwd: Path, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIM), *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env={**GIT_ENV, **(env or {})},
        timeout=300,
        check=False,
    )


def project(tmp_path: Path, max_blocks: int = 2) -> Path:
    """A repository with a passing suite and a committed claim.toml whose runs go outside it."""
    config = (
        f'[gate]\nruns_dir = "{tmp_path / "runs"}"\nmax_blocks = {max_blocks}\n\n'
        '[[check]]\ntype = "test_run"\n'
        f'command = ["{sys.executable}", "-m", "pytest", "-q", "-p", "no:cacheprovider"]\n'
        "baseline = false\n"  # a sandboxed run more at each start; the baseline's own tests take it
    )
    files = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "claim.toml": config}
    return make_repo(tmp_path / "repo", files)


def stop_payload(harness: str, repo: Path, session: str = "s-1", **over: Any) -> str:
    return json.dumps({**documented_stop(harness, repo, session), **over})


def start_payload(repo: Path, session: str = "s-1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(repo),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    )


def gate_start(repo: Path, *server: str, **env: str) -> None:
    """``claim gate --start`` for session s-1 before the agent works (what a harness with a
    session-start hook does by itself locally; through a service, the operator's side with a
    start-scoped token)."""
    done = claim("gate", "--start", "--session", "s-1", *server, cwd=repo, env=env)
    assert done.returncode == 0, done.stderr


def answer(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    body = json.loads(done.stdout)
    assert isinstance(body, dict)
    return body


def claude_code_stop(repo: Path, **over: Any) -> subprocess.CompletedProcess[str]:
    """The installed command as Claude Code runs it at a stop in ``repo``."""
    return claim(
        "hook", "stop", "--harness", "claude-code", cwd=repo,
        stdin=stop_payload("claude-code", repo, **over),
    )  # fmt: skip


def claims(runs: Path) -> list[dict[str, Any]]:
    return [
        json.loads(path.read_text())
        for path in sorted(runs.rglob("*.json"))
        if "sessions" not in path.parts
    ]


# ---- the stop, with the real gate


def test_a_wrong_fix_is_sent_back_and_the_right_one_lets_the_agent_stop(tmp_path: Path) -> None:
    repo = project(tmp_path)
    started = claim(
        "hook", "start", "--harness", "claude-code", cwd=repo, stdin=start_payload(repo)
    )
    assert started.returncode == 0, started.stderr
    write_files(repo, {"calc.py": CALC_BUGGY + "\n# touched\n"})

    blocked = claude_code_stop(repo)
    assert blocked.returncode == 0, blocked.stderr
    body = answer(blocked)
    assert body["decision"] == "block"
    assert "refuted" in body["reason"]
    assert "failed" in body["reason"]
    assert "1 of 2" in body["systemMessage"]

    write_files(repo, {"calc.py": CALC + "\n# fixed\n"})
    allowed = claude_code_stop(repo, stop_hook_active=True)
    body = answer(allowed)
    assert "decision" not in body
    assert body["systemMessage"].startswith("completion-claim: verified")
    states = [doc.get("verdict", {}).get("state") for doc in claims(tmp_path / "runs")]
    assert "verified" in states


def test_after_max_blocks_the_stop_goes_through_and_says_not_verified(tmp_path: Path) -> None:
    repo = project(tmp_path, max_blocks=1)
    write_files(repo, {"calc.py": CALC_BUGGY})
    first = claude_code_stop(repo)
    assert answer(first)["decision"] == "block"
    second = claude_code_stop(repo, stop_hook_active=True)
    body = answer(second)
    assert "decision" not in body
    assert "NOT verified" in body["systemMessage"]
    assert "after 1 block in a row" in body["systemMessage"]


@pytest.mark.parametrize(
    ("harness", "blocked_code", "blocked"),
    [
        ("codex", 0, {"decision": "block"}),
        ("openhands", 2, {"decision": "deny"}),
        ("cursor", 0, {}),
        ("copilot", 0, {"decision": "block"}),
    ],
)
def test_each_harness_gets_its_own_answer_from_the_real_gate(
    harness: str, blocked_code: int, blocked: dict[str, str], tmp_path: Path
) -> None:
    repo = project(tmp_path)
    gate_start(repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    sent_back = claim(
        "hook", "stop", "--harness", harness, cwd=repo, stdin=stop_payload(harness, repo)
    )
    assert sent_back.returncode == blocked_code, sent_back.stderr
    body = answer(sent_back)
    reason_key = "followup_message" if harness == "cursor" else "reason"
    assert set(body) - {"systemMessage"} == {*blocked, reason_key}
    assert {key: body[key] for key in blocked} == blocked
    assert "failed" in body[reason_key]
    write_files(repo, {"calc.py": CALC + "\n# fixed\n"})
    allowed = claim(
        "hook", "stop", "--harness", harness, cwd=repo, stdin=stop_payload(harness, repo)
    )
    assert allowed.returncode == 0, allowed.stderr
    assert reason_key not in answer(allowed)
    assert "decision" not in answer(allowed)


# ---- every stop is judged: an oversized or unreadable payload too

# Where each harness carries the agent's last message (the others send none).
MESSAGE_FIELDS = {"claude-code": "last_assistant_message", "codex": "last_assistant_message",
                  "gemini": "prompt_response"}  # fmt: skip
HARNESSES = ("claude-code", "codex", "openhands", "cursor", "copilot", "gemini")
OVER_A_MEBIBYTE = "I will retry. " * 80_000  # 1.1 MB, as a last message grows over retries
LAST_WORDS = "Done: add() is fixed and every test passes."


def oversized_stop(harness: str, repo: Path) -> str:
    """The harness's own stop payload, over 1 MiB: its last message (or, for a harness that
    sends none, another member) holds the text of every retry."""
    field = MESSAGE_FIELDS.get(harness, "padding")
    return stop_payload(harness, repo, **{field: OVER_A_MEBIBYTE + LAST_WORDS})


def judged_and_sent_back(done: subprocess.CompletedProcess[str]) -> None:
    """The gate ran and did not verify the work: the agent is sent back, in its harness's
    words."""
    assert done.returncode in (0, 2), done.stderr
    assert "let through unjudged" not in done.stderr
    body = answer(done)
    reason = str(body.get("reason") or body.get("followup_message"))
    assert reason.startswith("completion-claim gate: your work is "), body
    assert ", not verified." in reason


def decided(runs: Path) -> list[dict[str, Any]]:
    """The claims the gate recorded (not the start records beside them)."""
    return [doc for doc in claims(runs) if "verdict" in doc]


def assert_cut_and_said_so(harness: str, outcome: str) -> None:
    assert len(outcome) <= 64 * 1024
    if harness in MESSAGE_FIELDS:
        assert outcome.startswith("[completion-claim: the agent's last message was ")
        assert "only its last" in outcome
        assert outcome.endswith(LAST_WORDS)  # the end: the latest retry's words


@pytest.mark.parametrize("harness", HARNESSES)
def test_attack_157_an_oversized_stop_payload_is_judged_with_its_message_cut(
    harness: str, tmp_path: Path
) -> None:
    """A last message that takes the payload over 1 MiB made the hook report an input problem
    and let the stop through, with nothing recorded. Now the message is cut (its end kept, the
    record saying so) and the gate judges the pinned repository as usual."""
    repo = project(tmp_path)
    gate_start(repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    done = claim("hook", "stop", "--harness", harness, "--repo", str(repo), cwd=repo,
                 stdin=oversized_stop(harness, repo))  # fmt: skip
    judged_and_sent_back(done)
    (recorded,) = decided(tmp_path / "runs")
    assert recorded["verdict"]["state"] == "refuted"
    assert_cut_and_said_so(harness, recorded["claimed_outcome"])


@pytest.mark.parametrize("harness", ["claude-code", "cursor", "gemini"])
def test_attack_157_through_the_service_an_oversized_stop_is_judged_and_logged(
    harness: str, service: GateService
) -> None:
    repo = buggy_project(service.observed / "repo")
    gate_start(repo, "--server", service.url, CLAIM_TOKEN=service.operator_token)
    write_files(repo, {"README.md": "fixed\n"})
    done = claim(
        "hook", "stop", "--harness", harness, "--server", service.url, "--repo", str(repo),
        cwd=repo, stdin=oversized_stop(harness, repo), env={"CLAIM_TOKEN": service.token},
    )  # fmt: skip
    judged_and_sent_back(done)
    entry = service.ledger.get(1)  # 0 is the session's start
    assert entry is not None
    assert (entry.state, entry.via) == ("refuted", "gate")
    assert_cut_and_said_so(harness, entry.outcome)


@pytest.mark.parametrize(
    "stdin", ["", "{broken", "[]", json.dumps({"hook_event_name": "Stop", "cwd": "relative"})]
)
def test_attack_158_an_unreadable_stop_payload_is_judged_not_let_through(
    stdin: str, tmp_path: Path
) -> None:
    """A payload the hook cannot read (empty, not JSON, off its contract) let the stop through
    unjudged. Now the gate judges the work tree the hook was pinned to, under a session of its
    own (so the usual bound on blocks in a row holds), and the record says what was wrong."""
    repo = project(tmp_path, max_blocks=1)
    gate_start(repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    pinned = ("hook", "stop", "--harness", "claude-code", "--repo", str(repo))
    first = claim(*pinned, cwd=tmp_path, stdin=stdin)
    judged_and_sent_back(first)
    (recorded,) = decided(tmp_path / "runs")
    # Its session is unknown, and so is the start it would measure from: unverified, not passed.
    assert recorded["verdict"]["state"] == "unverified"
    assert recorded["claimed_outcome"].startswith("[completion-claim: the stop payload could not")
    second = claim(*pinned, cwd=tmp_path, stdin=stdin)  # the bound: let through, verdict said
    assert "NOT verified: unverified after 1 block in a row" in answer(second)["systemMessage"]


def test_attack_158_through_the_service_an_unreadable_payload_is_judged(
    service: GateService,
) -> None:
    repo = buggy_project(service.observed / "repo")
    gate_start(repo, "--server", service.url, CLAIM_TOKEN=service.operator_token)
    write_files(repo, {"README.md": "fixed\n"})
    done = claim("hook", "stop", "--harness", "codex", "--server", service.url, cwd=repo,
                 stdin="{broken", env={"CLAIM_TOKEN": service.token})  # fmt: skip
    judged_and_sent_back(done)
    entry = service.ledger.get(1)
    assert entry is not None
    assert (entry.state, entry.via) == ("unverified", "gate")
    assert entry.outcome.startswith("[completion-claim: the stop payload could not be read")


def test_an_honest_fix_with_an_oversized_message_is_verified(tmp_path: Path) -> None:
    repo = project(tmp_path)
    gate_start(repo)
    write_files(repo, {"calc.py": CALC + "\n# fixed\n"})
    done = claim("hook", "stop", "--harness", "gemini", "--repo", str(repo), cwd=repo,
                 stdin=oversized_stop("gemini", repo))  # fmt: skip
    assert answer(done)["systemMessage"].startswith("completion-claim: verified"), done.stderr


# ---- a hook that cannot judge lets the stop through, loudly


def test_an_unreadable_payload_with_no_work_tree_to_judge_is_one_line(tmp_path: Path) -> None:
    done = claim("hook", "stop", "--harness", "claude-code", cwd=tmp_path, stdin="{broken")
    assert done.returncode == 0
    assert len(done.stderr.strip().splitlines()) == 1
    assert "no claim.toml" in done.stderr
    assert "let through unjudged" in done.stderr
    assert "decision" not in answer(done)


def test_no_config_lets_the_stop_through_and_says_why(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "bare", {"calc.py": CALC})
    done = claim("hook", "stop", "--harness", "codex", cwd=repo, stdin=stop_payload("codex", repo))
    assert done.returncode == 0
    assert "no claim.toml" in done.stderr
    assert "no claim.toml" in answer(done)["systemMessage"]


def test_a_broken_config_lets_the_stop_through_naming_the_line(tmp_path: Path) -> None:
    repo = project(tmp_path)
    (repo / "claim.toml").write_text("[gate]\nmax_blokcs = 2\n")
    done = claude_code_stop(repo)
    assert done.returncode == 0
    assert "claim.toml:2" in done.stderr


def test_an_explicit_config_outside_the_work_tree_is_used(tmp_path: Path) -> None:
    repo = project(tmp_path)
    outside = tmp_path / "operator" / "claim.toml"
    outside.parent.mkdir()
    (repo / "claim.toml").rename(outside)
    write_files(repo, {"calc.py": CALC_BUGGY})
    done = claim(
        "hook",
        "stop",
        "--harness",
        "claude-code",
        "--config",
        str(outside),
        cwd=repo,
        stdin=stop_payload("claude-code", repo),
    )
    assert answer(done)["decision"] == "block"


def test_the_installed_hook_judges_its_repository_wherever_the_agent_cds(tmp_path: Path) -> None:
    repo = project(tmp_path)
    decoy = project(tmp_path / "decoy")  # a clean tree with passing tests and its own config
    assert claim("hooks", "install", "--harness", "codex", cwd=repo).returncode == 0
    (entry,) = json.loads((repo / ".codex" / "hooks.json").read_text())["hooks"]["Stop"]
    argv = shlex.split(entry["hooks"][0]["command"])
    write_files(repo, {"calc.py": CALC_BUGGY})
    done = subprocess.run(
        argv,
        cwd=decoy,
        input=stop_payload("codex", decoy),
        capture_output=True,
        text=True,
        env=GIT_ENV,
        timeout=300,
        check=False,
    )
    assert answer(done)["decision"] == "block", done.stderr


def test_start_with_unreadable_stdin_takes_no_baselines_and_exits_0(tmp_path: Path) -> None:
    repo = project(tmp_path)
    done = claim("hook", "start", "--harness", "claude-code", cwd=repo, stdin="")
    assert done.returncode == 0
    assert "no baselines were taken" in done.stderr


def test_unknown_harness_is_a_usage_error(tmp_path: Path) -> None:
    done = claim("hook", "stop", "--harness", "aider", cwd=tmp_path)
    assert done.returncode == 4


# ---- the hook as a client of claim serve (the service's own tests run it against one)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[GateService]:
    # No test baseline at its starts: a sandboxed run more, and test_gate_api tests that one.
    with gate_service(tmp_path / "svc", baseline=False) as running:
        yield running


def stop_via(
    service: GateService, repo: Path, harness: str = "claude-code", **env: str
) -> subprocess.CompletedProcess[str]:
    return claim(
        "hook", "stop", "--harness", harness, "--server", service.url, cwd=repo,
        stdin=stop_payload(harness, repo), env={"CLAIM_TOKEN": service.token, **env},
    )  # fmt: skip


def test_the_service_sends_a_false_done_back_and_lets_the_fix_through(
    service: GateService,
) -> None:
    """The work tree's own claim.toml asks for nothing; the service's config runs the tests."""
    repo = buggy_project(service.observed / "repo")
    gate_start(repo, "--server", service.url, CLAIM_TOKEN=service.operator_token)
    write_files(repo, {"README.md": "fixed\n"})

    blocked = answer(stop_via(service, repo))
    assert blocked["decision"] == "block"
    assert "refuted" in blocked["reason"]
    assert "1 of 2" in blocked["systemMessage"]

    write_files(repo, {"calc.py": CALC})
    allowed = answer(stop_via(service, repo))
    assert "decision" not in allowed
    assert allowed["systemMessage"].startswith("completion-claim: verified (recorded at ")
    assert allowed["systemMessage"].endswith("/claims/2)")  # 0 is the session's start
    entries = [service.ledger.get(i) for i in range(1, 3)]
    assert [(e.state, e.via, e.submitted_by) for e in entries if e] == [
        ("refuted", "gate", TOKEN_NAME),
        ("verified", "gate", TOKEN_NAME),
    ]


def test_the_token_can_come_from_a_file(service: GateService, tmp_path: Path) -> None:
    repo = buggy_project(service.observed / "repo")
    gate_start(repo, "--server", service.url, CLAIM_TOKEN=service.operator_token)
    write_files(repo, {"calc.py": CALC})
    token_file = tmp_path / "token"
    token_file.write_text(service.token + "\n")
    done = claim(
        "hook", "stop", "--harness", "codex", "--server", service.url,
        "--token-file", str(token_file), cwd=repo, stdin=stop_payload("codex", repo),
    )  # fmt: skip
    assert answer(done)["systemMessage"].startswith("completion-claim: verified")


def test_a_refused_token_lets_the_stop_through_and_records_nothing(
    service: GateService,
) -> None:
    repo = buggy_project(service.observed / "repo")
    done = stop_via(service, repo, CLAIM_TOKEN="wrong")
    body = answer(done)
    assert "decision" not in body
    assert "refused (401)" in body["systemMessage"]
    assert service.ledger.tree_head().size == 0


@pytest.mark.parametrize(
    "sabotage",
    [
        pytest.param(lambda repo: (repo / ".git" / "HEAD").write_text("garbage\n"), id="bad-HEAD"),
        pytest.param(lambda repo: (repo / ".git").rename(repo / "git-moved"), id="git-moved"),
    ],
)
def test_attack_27_a_work_tree_the_service_cannot_judge_is_sent_back_not_let_through(
    service: GateService, sabotage: Callable[[Path], object]
) -> None:
    """Broken work under a .git the service refuses to read: the stop is not let through
    unjudged; it goes back to the agent like a local gate's uncaptured change, within max_blocks."""
    repo = buggy_project(service.observed / "repo")
    write_files(repo, {"README.md": "done\n"})
    sabotage(repo)
    body = answer(stop_via(service, repo))
    assert body["decision"] == "block"
    assert "the gate service could not judge your work tree" in body["reason"]
    assert "unverified; sent back (1 of 3)" in body["systemMessage"]
    assert service.ledger.tree_head().size == 0


def test_each_harness_gets_its_own_answer_from_the_service(service: GateService) -> None:
    repo = buggy_project(service.observed / "repo")
    write_files(repo, {"README.md": "x\n"})
    done = stop_via(service, repo, harness="openhands")
    assert done.returncode == 2
    assert answer(done)["decision"] == "deny"


def test_start_through_the_service_sets_the_base_of_the_next_stop(service: GateService) -> None:
    repo = buggy_project(service.observed / "repo")
    own_token = claim(
        "hook", "start", "--harness", "claude-code", "--server", service.url, cwd=repo,
        stdin=start_payload(repo), env={"CLAIM_TOKEN": service.token},
    )  # fmt: skip
    assert own_token.returncode == 0
    assert "lacks the scope 'start'" in own_token.stderr  # the hook's token cannot start
    assert service.ledger.tree_head().size == 0
    started = claim(
        "hook", "start", "--harness", "claude-code", "--server", service.url, cwd=repo,
        stdin=start_payload(repo), env={"CLAIM_TOKEN": service.operator_token},
    )  # fmt: skip
    assert (started.returncode, started.stderr) == (0, "")
    write_files(repo, {"calc.py": CALC})
    assert answer(stop_via(service, repo))["systemMessage"].startswith("completion-claim: verified")
    entry = service.ledger.get(1)
    assert entry is not None
    assert entry.start_index == 0
    assert "baselines taken at start" in entry.claim["task"]["description"]


def test_an_unreachable_service_lets_the_stop_through_and_says_so(tmp_path: Path) -> None:
    repo = project(tmp_path)
    write_files(repo, {"calc.py": CALC_BUGGY})
    server = f"unix://{tmp_path}/nobody-listens.sock"
    done = claim(
        "hook", "stop", "--harness", "claude-code", "--server", server, cwd=repo,
        stdin=stop_payload("claude-code", repo),
    )  # fmt: skip
    assert done.returncode == 0
    body = answer(done)
    assert "decision" not in body
    assert "the gate service could not judge" in body["systemMessage"]
    assert "cannot reach the service" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()  # the local gate did not run instead


def test_server_and_config_together_let_the_stop_through_saying_why(tmp_path: Path) -> None:
    repo = project(tmp_path)
    done = claim(
        "hook", "stop", "--harness", "codex", "--server", f"unix://{tmp_path}/s.sock",
        "--config", str(repo / "claim.toml"), cwd=repo, stdin=stop_payload("codex", repo),
    )  # fmt: skip
    assert done.returncode == 0
    assert "--config and --server" in answer(done)["systemMessage"]


def test_start_with_an_unreachable_service_takes_no_baselines_and_exits_0(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path)
    done = claim(
        "hook", "start", "--harness", "claude-code", "--server", f"unix://{tmp_path}/s.sock",
        cwd=repo, stdin=start_payload(repo),
    )  # fmt: skip
    assert done.returncode == 0
    assert "cannot reach the service" in done.stderr
    assert "no baselines were taken" in done.stderr


# ---- hooks install / uninstall


def test_install_writes_this_claim_by_absolute_path_and_uninstall_removes_it(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
    }
    settings.write_text(json.dumps(original))
    (repo / "sub").mkdir()

    first = claim("hooks", "install", "--harness", "claude-code", cwd=repo / "sub")
    assert first.returncode == 0, first.stderr
    assert str(settings) in first.stdout
    written = json.loads(settings.read_text())
    commands = [h["command"] for group in written["hooks"]["Stop"] for h in group["hooks"]]
    assert commands == [
        "say done",
        f'{CLAIM.resolve()} hook stop --harness claude-code --repo "$CLAUDE_PROJECT_DIR"',
    ]
    assert written["permissions"] == original["permissions"]

    again = claim("hooks", "install", "--harness", "claude-code", cwd=repo)
    assert "already installed" in again.stdout
    assert json.loads(settings.read_text()) == written

    removed = claim("hooks", "uninstall", "--harness", "claude-code", cwd=repo)
    assert removed.returncode == 0
    assert json.loads(settings.read_text()) == original


def test_install_with_a_server_writes_thin_clients_and_refuses_a_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    done = claim(
        "hooks", "install", "--harness", "claude-code", "--server", "unix:///run/c/gate.sock",
        "--token-file", "token", cwd=repo,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "start each session from the operator's side" in done.stdout + done.stderr
    written = json.loads((repo / ".claude" / "settings.json").read_text())
    (stop,) = [h["command"] for group in written["hooks"]["Stop"] for h in group["hooks"]]
    assert stop == (
        f'{CLAIM.resolve()} hook stop --harness claude-code --repo "$CLAUDE_PROJECT_DIR" '
        f"--server unix:///run/c/gate.sock --token-file {repo / 'token'}"
    )
    (repo / "claim.toml").write_text("")
    both = claim(
        "hooks", "install", "--harness", "codex", "--server", "unix:///s.sock",
        "--config", "claim.toml", cwd=repo,
    )  # fmt: skip
    assert both.returncode == 4
    assert "--config and --server" in both.stderr
    assert not (repo / ".codex").exists()


def test_install_at_user_scope_writes_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = tmp_path / "claim.toml"
    config.write_text("")
    done = claim(
        "hooks",
        "install",
        "--harness",
        "cursor",
        "--scope",
        "user",
        "--config",
        str(config),
        cwd=tmp_path,
        env={"HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr
    written = json.loads((home / ".cursor" / "hooks.json").read_text())
    assert written["version"] == 1
    assert written["hooks"]["stop"][0]["command"].endswith(
        f"hook stop --harness cursor --config {config}"
    )


def test_install_refuses_a_settings_file_that_is_not_json(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    settings = repo / ".codex" / "hooks.json"
    settings.parent.mkdir()
    settings.write_text("{ oops")
    done = claim("hooks", "install", "--harness", "codex", cwd=repo)
    assert done.returncode == 4
    assert len(done.stderr.strip().splitlines()) == 1
    assert "not valid JSON" in done.stderr
    assert settings.read_text() == "{ oops"


def test_install_writes_codex_trust_and_check_then_says_the_hooks_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    home = {"HOME": str(tmp_path / "home")}
    done = claim("hooks", "install", "--harness", "codex", cwd=repo, env=home)
    assert done.returncode == 0, done.stderr
    trusted = [line for line in done.stdout.splitlines() if line.startswith("Trusted in ")]
    assert len(trusted) == 3  # the project, and each of the two hooks
    assert "will not run" not in done.stderr
    checked = claim("hooks", "check", "--harness", "codex", cwd=repo, env=home)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.splitlines() == [
        "claim: codex interactive: the hooks run",
        "claim: codex non-interactive: the hooks run",
    ]


def test_without_the_trust_each_missing_step_is_one_line_and_strict_fails(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    home = {"HOME": str(tmp_path / "home")}
    done = claim("hooks", "install", "--harness", "codex", "--no-trust", "--strict",
                 cwd=repo, env=home)  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert all(line.startswith("claim: the hooks will not run (") for line in lines)
    assert any("only in a trusted project" in line for line in lines)
    assert any("`codex exec` skips the hook" in line for line in lines)
    assert not (tmp_path / "home" / ".codex" / "config.toml").exists()
    checked = claim("hooks", "check", "--harness", "codex", "--json", cwd=repo, env=home)
    assert checked.returncode == 1
    report = json.loads(checked.stdout)
    assert report["non_interactive"]
    assert report["interactive"]


def test_check_says_when_the_hooks_are_not_installed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC})
    checked = claim("hooks", "check", "--harness", "claude", cwd=repo)
    assert checked.returncode == 1
    assert "the gate's hooks are not in" in checked.stdout


def test_claude_is_accepted_for_claude_code_by_hook_and_hooks(tmp_path: Path) -> None:
    repo = project(tmp_path)
    installed = claim("hooks", "install", "--harness", "claude", cwd=repo)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.startswith("The claude-code hooks are installed in ")
    assert "claim:" not in installed.stdout
    done = claim("hook", "stop", "--harness", "claude", cwd=repo,
                 stdin=stop_payload("claude-code", repo))  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_installed_claude_hooks_name_the_project_by_its_variable_and_run_from_anywhere(
    tmp_path: Path,
) -> None:
    """The project file holds no path of this checkout (it can be committed and shared); the
    harness's shell expands $CLAUDE_PROJECT_DIR, which the harness sets, to the repository."""
    repo = project(tmp_path)
    assert claim("hooks", "install", "--harness", "claude-code", cwd=repo).returncode == 0
    text = (repo / ".claude" / "settings.json").read_text()
    assert str(repo) not in text
    written = json.loads(text)
    (start,) = [h["command"] for g in written["hooks"]["SessionStart"] for h in g["hooks"]]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    ran = subprocess.run(
        ["/bin/sh", "-c", start], cwd=elsewhere, input=start_payload(elsewhere), text=True,
        capture_output=True, env={**GIT_ENV, "CLAUDE_PROJECT_DIR": str(repo)}, timeout=300,
        check=False,
    )  # fmt: skip

    assert ran.returncode == 0, ran.stderr
    assert list((tmp_path / "runs").rglob("session-*.json")) != []
    unset = subprocess.run(
        ["/bin/sh", "-c", start], cwd=repo, input=start_payload(repo), text=True,
        capture_output=True, env=GIT_ENV, timeout=300, check=False,
    )  # fmt: skip
    assert unset.returncode == 4
    assert "--repo is empty: the harness did not set the project folder" in unset.stderr


def test_the_installed_project_file_is_no_change_until_someone_else_edits_it(
    tmp_path: Path,
) -> None:
    """``.claude/settings.json``, written by ``claim hooks install`` and not yet committed, is
    the gate's own writing: recorded by digest, it is no change while it holds those bytes."""
    repo = project(tmp_path)
    assert claim("hooks", "install", "--harness", "claude-code", cwd=repo).returncode == 0
    gate_start(repo)
    write_files(repo, {"calc.py": CALC + "\n"})
    base = ["gate", "--repo", str(repo), "--session", "s-1", "--json"]

    done = claim(*base, cwd=repo)
    assert done.returncode == 0, done.stderr
    claim_path = Path(json.loads(done.stdout)["claim_path"])
    targets = [m["target"] for m in json.loads(claim_path.read_text())["mutations"]]
    assert targets == ["calc.py"]

    settings = repo / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace('"Stop"', '"Stopped"'))
    again = claim(*base, cwd=repo)
    claim_path = Path(json.loads(again.stdout)["claim_path"])
    targets = [m["target"] for m in json.loads(claim_path.read_text())["mutations"]]
    assert targets == [".claude/settings.json", "calc.py"]
