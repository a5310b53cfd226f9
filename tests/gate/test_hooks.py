"""The harness adapters at the payload level: each harness's documented stdin JSON in, its
documented answer out, for verified, refuted, unverified, malformed and empty input, and the
max_blocks let-through. Verdicts are real ``verify()`` results over real claims."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli.verify_cmd import EXIT_FOR_STATE
from completion_claim.gate import hooks
from completion_claim.gate.run import GateResult
from completion_claim.verify import Verdict, verify

from ..builders import at, build, evidence
from .payloads import documented_stop

MAX_BLOCKS = 3


@pytest.fixture(autouse=True)
def _no_project_dir_from_the_outer_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in hooks.HARNESSES.values():
        if name.project_dir_env is not None:
            monkeypatch.delenv(name.project_dir_env, raising=False)


def verdict(state: str) -> Verdict:
    items = {
        "verified": [evidence()],
        "refuted": [evidence(observed_value={"billing_zip": "0"})],
        "unverified": [],
    }[state]
    result = verify(build(evidence_items=items), at(20))
    assert result.state == state
    return result


REASON = "tests/test_calc.py::test_add failed: assert -1 == 5"


class Gate:
    """A decision function that hands back one real verdict and remembers what it was asked."""

    def __init__(self, state: str, claim_path: Path) -> None:
        judged = verdict(state)
        self.outcome = GateResult(
            verdict=judged,
            claim_path=claim_path,
            document={"verdict": judged.to_json()},
            agent_reason="" if state == "verified" else REASON,
            exit_code=EXIT_FOR_STATE[state],
        )
        self.requests: list[hooks.StopRequest] = []

    def __call__(self, request: hooks.StopRequest) -> hooks.GateOutcome:
        self.requests.append(request)
        return self.outcome


def payload(harness: str, repo: Path, **over: Any) -> dict[str, Any]:
    return {**documented_stop(harness, repo), **over}


def stop(
    harness: str, tmp_path: Path, gate: Gate, raw: bytes | None = None, **over: Any
) -> hooks.HookAnswer:
    adapter = hooks.harness(harness)
    data = raw if raw is not None else json.dumps(payload(harness, tmp_path, **over)).encode()
    request = hooks.read_stop(adapter, data)
    if isinstance(request, hooks.HookAnswer):
        return request
    return hooks.judge_stop(
        adapter, request, gate, sessions_dir=tmp_path / "runs" / "sessions", max_blocks=MAX_BLOCKS
    )


def out(answer: hooks.HookAnswer) -> dict[str, Any]:
    body = json.loads(answer.stdout)
    assert isinstance(body, dict)
    return body


HARNESSES = ["claude-code", "codex", "openhands", "cursor", "copilot", "gemini"]


# ---- verified: the stop goes through


@pytest.mark.parametrize("harness", HARNESSES)
def test_verified_work_is_allowed_to_stop(harness: str, tmp_path: Path) -> None:
    gate = Gate("verified", tmp_path / "claim.json")
    answer = stop(harness, tmp_path, gate)
    assert answer.exit_code == 0
    body = out(answer)
    assert "decision" not in body
    assert "followup_message" not in body
    assert gate.requests[0].repo == tmp_path


def test_claude_code_verified_prints_a_system_message(tmp_path: Path) -> None:
    answer = stop("claude-code", tmp_path, Gate("verified", tmp_path / "c.json"))
    assert out(answer) == {
        "systemMessage": f"completion-claim: verified (recorded at {tmp_path / 'c.json'})"
    }


def test_the_gate_is_asked_with_the_session_and_the_final_message(tmp_path: Path) -> None:
    gate = Gate("verified", tmp_path / "c.json")
    stop("claude-code", tmp_path, gate)
    stop("codex", tmp_path, gate)
    stop("cursor", tmp_path, gate)
    stop("copilot", tmp_path, gate)
    asked = [(r.harness, r.session, r.outcome) for r in gate.requests]
    assert asked == [
        ("claude-code", "abc123", "Done. All tests pass."),
        ("codex", "s-1", "Done."),
        ("cursor", "conv-1", ""),
        ("copilot", "cp-1", ""),
    ]


# ---- refuted / unverified: sent back, in each harness's words


@pytest.mark.parametrize("state", ["refuted", "unverified"])
@pytest.mark.parametrize("harness", ["claude-code", "codex", "copilot"])
def test_not_verified_is_blocked_with_decision_block(
    harness: str, state: str, tmp_path: Path
) -> None:
    answer = stop(harness, tmp_path, Gate(state, tmp_path / "c.json"))
    body = out(answer)
    assert answer.exit_code == 0
    assert body["decision"] == "block"
    assert REASON in body["reason"]
    assert state in body["reason"]


@pytest.mark.parametrize("state", ["refuted", "unverified"])
def test_openhands_denies_with_exit_2(state: str, tmp_path: Path) -> None:
    answer = stop("openhands", tmp_path, Gate(state, tmp_path / "c.json"))
    assert answer.exit_code == 2
    assert out(answer)["decision"] == "deny"
    assert REASON in out(answer)["reason"]
    assert REASON in answer.stderr


@pytest.mark.parametrize("state", ["refuted", "unverified"])
def test_cursor_sends_the_reason_as_a_followup_message(state: str, tmp_path: Path) -> None:
    answer = stop("cursor", tmp_path, Gate(state, tmp_path / "c.json"))
    assert answer.exit_code == 0
    assert list(out(answer)) == ["followup_message"]
    assert REASON in out(answer)["followup_message"]


def test_codex_answer_has_only_fields_its_schema_allows(tmp_path: Path) -> None:
    allowed = {"continue", "decision", "reason", "stopReason", "suppressOutput", "systemMessage"}
    for state in ("verified", "refuted"):
        assert set(out(stop("codex", tmp_path, Gate(state, tmp_path / "c.json")))) <= allowed


def test_cursor_does_not_judge_a_stop_the_user_aborted(tmp_path: Path) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    answer = stop("cursor", tmp_path, gate, status="aborted")
    assert out(answer) == {}
    assert answer.exit_code == 0
    assert gate.requests == []


# ---- max_blocks: bounded, then let through loudly


@pytest.mark.parametrize("harness", HARNESSES)
def test_after_max_blocks_the_stop_is_let_through_with_the_verdict(
    harness: str, tmp_path: Path
) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    flag = "stop_hook_active" if harness in ("claude-code", "codex", "copilot") else None
    answers = []
    for attempt in range(MAX_BLOCKS + 1):
        over: dict[str, Any] = {}
        if flag:
            over[flag] = attempt > 0
        if harness == "cursor":
            over["loop_count"] = attempt
        answers.append(stop(harness, tmp_path, gate, **over))
    blocked, last = answers[:-1], answers[-1]
    assert all(
        a.exit_code == 2 or "decision" in out(a) or "followup_message" in out(a) for a in blocked
    )
    assert last.exit_code == 0
    assert "decision" not in out(last)
    assert "followup_message" not in out(last)
    message = out(last).get("systemMessage") or last.stderr
    assert "NOT verified" in message
    assert "refuted" in message
    assert str(tmp_path / "c.json") in message
    assert len(gate.requests) == MAX_BLOCKS + 1  # every stop was judged and recorded


def test_claude_code_let_through_is_a_system_message(tmp_path: Path) -> None:
    gate = Gate("unverified", tmp_path / "c.json")
    for attempt in range(MAX_BLOCKS):
        assert (
            out(stop("claude-code", tmp_path, gate, stop_hook_active=attempt > 0))["decision"]
            == "block"
        )
    last = out(stop("claude-code", tmp_path, gate, stop_hook_active=True))
    assert set(last) == {"systemMessage"}
    assert "unverified after 3 blocks in a row" in last["systemMessage"]


def test_the_count_is_per_session(tmp_path: Path) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    for _ in range(MAX_BLOCKS):
        stop("gemini", tmp_path, gate)
    other = stop("gemini", tmp_path, gate, session_id="another")
    assert out(other)["decision"] == "block"
    assert "decision" not in out(stop("gemini", tmp_path, gate))


def test_a_verified_stop_resets_the_count(tmp_path: Path) -> None:
    refuted, verified = Gate("refuted", tmp_path / "c.json"), Gate("verified", tmp_path / "c.json")
    for _ in range(MAX_BLOCKS):
        stop("gemini", tmp_path, refuted)
    stop("gemini", tmp_path, verified)
    assert out(stop("gemini", tmp_path, refuted))["decision"] == "block"


def test_a_fresh_turn_resets_a_stale_count(tmp_path: Path) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    for attempt in range(MAX_BLOCKS):
        stop("claude-code", tmp_path, gate, stop_hook_active=attempt > 0)
    # The harness says no hook blocked earlier in this turn: a new prompt, a new row.
    assert out(stop("claude-code", tmp_path, gate, stop_hook_active=False))["decision"] == "block"


def test_stop_hook_active_alone_does_not_let_a_stop_through(tmp_path: Path) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    assert out(stop("claude-code", tmp_path, gate, stop_hook_active=True))["decision"] == "block"


def test_the_session_file_is_named_by_a_hash_and_written_whole(tmp_path: Path) -> None:
    stop("claude-code", tmp_path, Gate("refuted", tmp_path / "c.json"))
    files = list((tmp_path / "runs" / "sessions").iterdir())
    assert [f.name for f in files] == [
        f"{__import__('hashlib').sha256(b'abc123').hexdigest()[:16]}.json"
    ]
    assert json.loads(files[0].read_text()) == {
        "blocks": 1,
        "last_state": "refuted",
        "last_claim": str(tmp_path / "c.json"),
    }


def test_a_corrupt_session_file_counts_from_zero(tmp_path: Path) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    stop("copilot", tmp_path, gate)
    (session_file,) = (tmp_path / "runs" / "sessions").iterdir()
    session_file.write_text("{not json")
    assert out(stop("copilot", tmp_path, gate))["decision"] == "block"
    assert json.loads(session_file.read_text())["blocks"] == 1


# ---- input the hook cannot read: one clear line, the stop is not blocked


@pytest.mark.parametrize("harness", HARNESSES)
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"", "empty input"),
        (b"   \n", "empty input"),
        (b"{not json", "input is not JSON"),
        (b"[1, 2]", "input is not a JSON object"),
        (b" " * (hooks.MAX_INPUT_BYTES + 1), f"input is over {hooks.MAX_INPUT_BYTES} bytes"),
    ],
)
def test_attack_158_unreadable_input_is_judged_under_a_session_of_its_own(
    harness: str, raw: bytes, problem: str, tmp_path: Path
) -> None:
    """Nothing in a payload the hook cannot read lets the stop through: the pinned work tree is
    judged, counted under a session of the harness's own, and the record says why."""
    request = hooks.read_stop(hooks.harness(harness), raw, tmp_path)
    assert isinstance(request, hooks.StopRequest)
    assert (request.repo, request.session) == (tmp_path, f"{harness}:unread-payload")
    assert request.outcome.startswith(
        f"[completion-claim: the stop payload could not be read ({problem}"
    )
    gate = Gate("refuted", tmp_path / "c.json")
    adapter = hooks.harness(harness)
    answer = hooks.judge_stop(
        adapter, request, gate, sessions_dir=tmp_path / "sessions", max_blocks=MAX_BLOCKS
    )
    assert len(gate.requests) == 1
    assert "sent back (1 of 3)" in answer.stdout + answer.stderr


@pytest.mark.parametrize(
    ("harness", "over", "problem"),
    [
        ("claude-code", {"session_id": None}, "'session_id' is missing"),
        ("claude-code", {"cwd": "relative/dir"}, "'cwd' is not an existing absolute directory"),
        ("claude-code", {"stop_hook_active": "yes"}, "'stop_hook_active' is not a boolean"),
        ("cursor", {"workspace_roots": []}, "'workspace_roots' is missing"),
        ("cursor", {"loop_count": "2"}, "'loop_count' is not an integer"),
        ("copilot", {"sessionId": 7}, "'sessionId' is missing"),
    ],
)
def test_a_payload_off_contract_is_named_and_judged(
    harness: str, over: dict[str, Any], problem: str, tmp_path: Path
) -> None:
    data = json.dumps(payload(harness, tmp_path, **over)).encode()
    request = hooks.read_stop(hooks.harness(harness), data, tmp_path)
    assert isinstance(request, hooks.StopRequest)
    assert problem in request.outcome


@pytest.mark.parametrize(
    ("harness", "event"), [("claude-code", "PreToolUse"), ("codex", "SubagentStop")]
)
def test_another_event_than_a_stop_is_named_and_let_through(
    harness: str, event: str, tmp_path: Path
) -> None:
    """A hook wired to another event (the installer's mistake, not the agent's stop)."""
    gate = Gate("refuted", tmp_path / "c.json")
    answer = stop(harness, tmp_path, gate, hook_event_name=event)
    assert answer.exit_code == 0
    assert f"'hook_event_name' is {event!r}" in answer.stderr
    assert gate.requests == []


def test_claude_code_shows_a_payload_it_let_through_as_a_system_message(tmp_path: Path) -> None:
    answer = stop("claude-code", tmp_path, Gate("refuted", tmp_path / "c.json"),
                  hook_event_name="PreToolUse")  # fmt: skip
    assert "'hook_event_name' is 'PreToolUse'" in out(answer)["systemMessage"]


def test_unread_without_a_pinned_repo_judges_the_project_dir_else_the_hooks_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, here = tmp_path / "project", tmp_path / "here"
    project.mkdir()
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    for harness, expected in (("claude-code", project), ("codex", here)):
        request = hooks.read_stop(hooks.harness(harness), b"{broken")
        assert isinstance(request, hooks.StopRequest)
        assert request.repo == expected


def test_unread_with_no_work_tree_to_judge_is_let_through_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = hooks.read_stop(hooks.harness("codex"), b"{broken", tmp_path / "gone")
    assert isinstance(answer, hooks.HookAnswer)
    assert "input is not JSON" in answer.stderr
    assert "is not an existing absolute directory" in answer.stderr
    assert "let through unjudged" in answer.stderr
    removed = tmp_path / "removed"
    removed.mkdir()
    monkeypatch.chdir(removed)
    removed.rmdir()  # the folder the harness ran the hook in is gone
    answer = hooks.read_stop(hooks.harness("codex"), b"{broken")
    assert isinstance(answer, hooks.HookAnswer)
    assert "no work tree to judge" in answer.stderr


LAST_WORDS = "Done: add() is fixed."
MESSAGE_FIELDS = {"claude-code": "last_assistant_message", "codex": "last_assistant_message",
                  "gemini": "prompt_response"}  # fmt: skip


@pytest.mark.parametrize("harness", HARNESSES)
def test_attack_157_an_oversized_payload_is_read_with_its_message_cut_to_its_end(
    harness: str, tmp_path: Path
) -> None:
    """Over 1 MiB, each harness's own payload is read: its session and work tree as usual,
    the last message (where the harness sends one) cut to its end, after a note."""
    field = MESSAGE_FIELDS.get(harness, "padding")
    big = payload(harness, tmp_path, **{field: "retry. " * 200_000 + LAST_WORDS})
    data = json.dumps(big).encode()
    assert len(data) > 1 << 20
    request = hooks.read_stop(hooks.harness(harness), data, tmp_path)
    assert isinstance(request, hooks.StopRequest)
    assert (
        request.session
        == documented_stop(harness, tmp_path)[
            "sessionId"
            if harness == "copilot"
            else "conversation_id"
            if harness == "cursor"
            else "session_id"
        ]
    )
    assert len(request.outcome) <= hooks.MAX_OUTCOME_CHARS
    if harness in MESSAGE_FIELDS:
        assert request.outcome.startswith(
            f"[completion-claim: the agent's last message was {200_000 * 7 + len(LAST_WORDS)} "
            "characters; only its last "
        )
        assert request.outcome.endswith(LAST_WORDS)


def test_a_message_within_the_bound_is_kept_whole(tmp_path: Path) -> None:
    message = "x" * hooks.MAX_OUTCOME_CHARS
    data = json.dumps(payload("gemini", tmp_path, prompt_response=message)).encode()
    request = hooks.read_stop(hooks.harness("gemini"), data, tmp_path)
    assert isinstance(request, hooks.StopRequest)
    assert request.outcome == message


def test_claude_code_subagent_stop_is_judged(tmp_path: Path) -> None:
    answer = stop(
        "claude-code",
        tmp_path,
        Gate("refuted", tmp_path / "c.json"),
        hook_event_name="SubagentStop",
    )
    assert out(answer)["decision"] == "block"


def test_claude_code_judges_its_project_dir_not_the_agents_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    gate = Gate("verified", tmp_path / "c.json")
    stop("claude-code", tmp_path, gate, cwd=str(elsewhere))
    assert gate.requests[0].repo == project


def test_a_pinned_repo_wins_over_the_payload(tmp_path: Path) -> None:
    pinned, elsewhere = tmp_path / "pinned", tmp_path / "elsewhere"
    pinned.mkdir()
    elsewhere.mkdir()
    for harness in HARNESSES:
        data = json.dumps(payload(harness, elsewhere)).encode()
        request = hooks.read_stop(hooks.harness(harness), data, pinned)
        assert isinstance(request, hooks.StopRequest)
        assert request.repo == pinned
    start_payload = {**payload("codex", elsewhere), "hook_event_name": "SessionStart"}
    start = hooks.read_start(hooks.harness("codex"), json.dumps(start_payload).encode(), pinned)
    assert isinstance(start, hooks.StartRequest)
    assert start.repo == pinned


def test_a_pinned_repo_that_is_gone_lets_the_stop_through_unjudged(tmp_path: Path) -> None:
    data = json.dumps(payload("codex", tmp_path)).encode()
    answer = hooks.read_stop(hooks.harness("codex"), data, tmp_path / "gone")
    assert isinstance(answer, hooks.HookAnswer)
    assert "'--repo' is not an existing absolute directory" in answer.stderr


def test_openhands_without_cwd_uses_its_project_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENHANDS_PROJECT_DIR", str(tmp_path))
    gate = Gate("verified", tmp_path / "c.json")
    stop("openhands", tmp_path, gate, cwd=None, session_id=None)
    assert gate.requests[0].repo == tmp_path
    assert gate.requests[0].session == f"openhands:{tmp_path}"


# ---- session start


@pytest.mark.parametrize(
    ("harness", "doc", "session", "resumed"),
    [
        (  # OpenHands 1.16.0 as captured
            "openhands",
            {"event_type": "SessionStart", "tool_name": None, "session_id": "o", "metadata": {}},
            "o",
            False,
        ),
        (  # Gemini CLI 0.61.0 as captured
            "gemini",
            {
                "session_id": "g",
                "hook_event_name": "SessionStart",
                "source": "startup",
                "timestamp": "2026-12-01T14:08:39.128Z",
            },
            "g",
            False,
        ),
        (
            "gemini",
            {"session_id": "g", "hook_event_name": "SessionStart", "source": "resume"},
            "g",
            True,
        ),
        (
            "claude-code",
            {"session_id": "a", "hook_event_name": "SessionStart", "source": "startup"},
            "a",
            False,
        ),
        (
            "claude-code",
            {"session_id": "a", "hook_event_name": "SessionStart", "source": "resume"},
            "a",
            True,
        ),
        (
            "codex",
            {"session_id": "b", "hook_event_name": "SessionStart", "source": "startup"},
            "b",
            False,
        ),
        ("openhands", {"session_id": "c", "hook_event_name": "SessionStart"}, "c", False),
        ("cursor", {"conversation_id": "d", "hook_event_name": "sessionStart"}, "d", False),
        ("copilot", {"sessionId": "e", "timestamp": 1, "source": "new"}, "e", False),
    ],
)
def test_session_start_payloads(
    harness: str, doc: dict[str, Any], session: str, resumed: bool, tmp_path: Path
) -> None:
    where = {"cursor": "workspace_roots", "openhands": "working_dir"}.get(harness, "cwd")
    doc = {**doc, where: [str(tmp_path)] if harness == "cursor" else str(tmp_path)}
    request = hooks.read_start(hooks.harness(harness), json.dumps(doc).encode())
    assert isinstance(request, hooks.StartRequest)
    assert (request.session, request.repo, request.resumed) == (session, tmp_path, resumed)


def test_an_unreadable_start_payload_takes_no_baselines_and_says_so(tmp_path: Path) -> None:
    answer = hooks.read_start(hooks.harness("claude-code"), b"nope")
    assert isinstance(answer, hooks.HookAnswer)
    assert answer.exit_code == 0
    assert "no baselines were taken" in answer.stderr


# ---- what the harnesses really send (payloads captured from the pinned releases)


def test_openhands_reads_its_own_shape_working_dir_and_event_type(tmp_path: Path) -> None:
    gate = Gate("verified", tmp_path / "c.json")
    stop("openhands", tmp_path, gate)
    (request,) = gate.requests
    assert (request.repo, request.session, request.outcome) == (tmp_path, "oh-1", "")


def test_openhands_judges_only_its_stop_event(tmp_path: Path) -> None:
    answer = stop("openhands", tmp_path, Gate("verified", tmp_path / "c.json"),
                  event_type="PreToolUse")  # fmt: skip
    assert answer.exit_code == 0
    assert "'hook_event_name' is 'PreToolUse'" in answer.stderr


def test_openhands_project_dir_wins_over_working_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("OPENHANDS_PROJECT_DIR", str(project))
    gate = Gate("verified", tmp_path / "c.json")
    stop("openhands", elsewhere, gate)
    assert gate.requests[0].repo == project


def test_copilot_reads_stop_hook_active_and_resets_a_stale_count(tmp_path: Path) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    for _ in range(MAX_BLOCKS + 1):  # each stop the first of a new turn: a new row each time
        assert out(stop("copilot", tmp_path, gate, stop_hook_active=False))["decision"] == "block"
    for _ in range(MAX_BLOCKS - 1):
        assert out(stop("copilot", tmp_path, gate, stop_hook_active=True))["decision"] == "block"
    assert "decision" not in out(stop("copilot", tmp_path, gate, stop_hook_active=True))


def test_copilot_judges_its_project_dir_not_the_agents_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, moved = tmp_path / "project", tmp_path / "moved"
    project.mkdir()
    moved.mkdir()
    monkeypatch.setenv("COPILOT_PROJECT_DIR", str(project))
    gate = Gate("verified", tmp_path / "c.json")
    stop("copilot", moved, gate)
    assert gate.requests[0].repo == project


def test_gemini_blocks_with_decision_block_and_its_reason(tmp_path: Path) -> None:
    gate = Gate("refuted", tmp_path / "c.json")
    answer = stop("gemini", tmp_path, gate)
    body = out(answer)
    assert answer.exit_code == 0
    assert body["decision"] == "block"
    assert REASON in body["reason"]
    assert gate.requests[0].outcome == "Done."
    assert gate.requests[0].repo == tmp_path


def test_gemini_counts_blocks_although_its_flag_says_fresh_turn(tmp_path: Path) -> None:
    """Gemini CLI sends stop_hook_active false after a block whose retry made a tool call; a
    count reset on it would send the agent back for ever."""
    gate = Gate("refuted", tmp_path / "c.json")
    for _ in range(MAX_BLOCKS):
        assert out(stop("gemini", tmp_path, gate, stop_hook_active=False))["decision"] == "block"
    let_through = stop("gemini", tmp_path, gate, stop_hook_active=False)
    assert "decision" not in out(let_through)
    assert "NOT verified" in out(let_through)["systemMessage"]
    assert "NOT verified" in let_through.stderr


def test_gemini_judges_its_project_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, moved = tmp_path / "project", tmp_path / "moved"
    project.mkdir()
    moved.mkdir()
    monkeypatch.setenv("GEMINI_PROJECT_DIR", str(project))
    gate = Gate("verified", tmp_path / "c.json")
    stop("gemini", moved, gate)
    assert gate.requests[0].repo == project


def test_claude_is_an_alias_of_claude_code() -> None:
    assert hooks.harness("claude") is hooks.harness("claude-code")
    with pytest.raises(ValueError, match="unknown harness 'claud'"):
        hooks.harness("claud")
