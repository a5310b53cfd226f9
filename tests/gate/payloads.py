"""Each harness's stop payload, shared by the adapter tests and the command-line hook tests: as
the real CLI sent it (captured from the pinned releases tests/gate/e2e runs: Codex, Copilot,
OpenHands, Gemini CLI), else as its documentation shows it (docs/integrations.md cites the
pages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_SESSIONS = {
    "claude-code": "abc123",
    "codex": "s-1",
    "openhands": "oh-1",
    "cursor": "conv-1",
    "copilot": "cp-1",
    "gemini": "gm-1",
}


def documented_stop(harness: str, repo: Path, session: str | None = None) -> dict[str, Any]:
    """The stop payload of ``harness`` for work in ``repo``, in session ``session`` (each
    harness has a default)."""
    session = session or DEFAULT_SESSIONS[harness]
    documented: dict[str, dict[str, Any]] = {
        "claude-code": {
            "session_id": session,
            "transcript_path": f"/home/u/.claude/projects/x/{session}.jsonl",
            "cwd": str(repo),
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "Done. All tests pass.",
        },
        # Codex CLI 0.171.0, `codex exec`
        "codex": {
            "session_id": session,
            "turn_id": "01a231ee-eb44-70f0-83e2-bf072645cfc4",
            "transcript_path": f"/home/u/.codex/sessions/2026/12/01/rollout-{session}.jsonl",
            "cwd": str(repo),
            "hook_event_name": "Stop",
            "model": "scripted-model",
            "permission_mode": "bypassPermissions",
            "stop_hook_active": False,
            "last_assistant_message": "Done.",
        },
        # OpenHands CLI 1.16.0 (SDK 1.21.0): not Claude's shape
        "openhands": {
            "event_type": "Stop",
            "tool_name": None,
            "tool_input": None,
            "tool_response": None,
            "message": None,
            "session_id": session,
            "working_dir": str(repo),
            "metadata": {"reason": "agent_finished"},
        },
        "cursor": {
            "conversation_id": session,
            "generation_id": "gen-1",
            "hook_event_name": "stop",
            "status": "completed",
            "loop_count": 0,
            "workspace_roots": [str(repo)],
        },
        # Copilot CLI 1.0.102, `copilot -p`
        "copilot": {
            "sessionId": session,
            "timestamp": 1796134096863,
            "cwd": str(repo),
            "transcriptPath": f"/home/u/.copilot/session-state/{session}/events.jsonl",
            "stopReason": "end_turn",
            "stop_hook_active": False,
        },
        # Gemini CLI 0.61.0, `gemini -p`
        "gemini": {
            "session_id": session,
            "transcript_path": f"/home/u/.gemini/tmp/repo/chats/session-{session}.jsonl",
            "cwd": str(repo),
            "hook_event_name": "AfterAgent",
            "timestamp": "2026-12-01T14:08:39.250Z",
            "prompt": "Fix add",
            "prompt_response": "Done.",
            "stop_hook_active": False,
        },
    }
    return documented[harness]
