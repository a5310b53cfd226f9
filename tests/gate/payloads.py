"""Each harness's stop payload as its documentation shows it (docs/integrations.md cites the
pages), shared by the adapter tests and the command-line hook tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_SESSIONS = {
    "claude-code": "abc123",
    "codex": "s-1",
    "openhands": "oh-1",
    "cursor": "conv-1",
    "copilot": "cp-1",
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
        "codex": {
            "session_id": session,
            "turn_id": "t-1",
            "transcript_path": None,
            "cwd": str(repo),
            "hook_event_name": "Stop",
            "model": "gpt-5-codex",
            "permission_mode": "default",
            "stop_hook_active": False,
            "last_assistant_message": "Done.",
        },
        "openhands": {"session_id": session, "cwd": str(repo), "hook_event_name": "Stop"},
        "cursor": {
            "conversation_id": session,
            "generation_id": "gen-1",
            "hook_event_name": "stop",
            "status": "completed",
            "loop_count": 0,
            "workspace_roots": [str(repo)],
        },
        "copilot": {
            "timestamp": 1704614750000,
            "cwd": str(repo),
            "sessionId": session,
            "transcriptPath": "/tmp/t.jsonl",
            "stopReason": "end_turn",
        },
    }
    return documented[harness]
