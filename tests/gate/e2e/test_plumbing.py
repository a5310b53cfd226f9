"""The scripted model server and the real Claude Code CLI talk: tools run, a Stop hook's block
reaches the model as feedback, and the session ends once the hook lets the stop through.

These pin the request shapes the scenarios rely on, so a CLI upgrade that changes them fails
here, with a clear message, rather than as a puzzling gate verdict.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .claude_code import run_session
from .model_server import STOP_HOOK_FEEDBACK, Script, ToolUse, serve

pytestmark = pytest.mark.claude_code

REASON = "tests/test_calc.py::test_add failed: assert -1 == 5"
ALLOWED = "stop allowed after one block"


def block_once_hook(folder: Path) -> Path:
    """A Stop hook that blocks the first stop with REASON, lets every later one through saying
    ALLOWED to the user, and keeps each payload it was given."""
    hook = folder / "block_once.py"
    hook.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        f"folder = pathlib.Path({str(folder)!r})\n"
        "calls = sorted(folder.glob('payload-*.json'))\n"
        "(folder / f'payload-{len(calls)}.json').write_text(sys.stdin.read())\n"
        "if not calls:\n"
        f"    print(json.dumps({{'decision': 'block', 'reason': {REASON!r}}}))\n"
        "else:\n"
        f"    print(json.dumps({{'systemMessage': {ALLOWED!r}}}))\n"
    )
    hook.chmod(0o755)
    settings = folder / "settings.json"
    entry = {"hooks": [{"type": "command", "command": str(hook)}]}
    settings.write_text(json.dumps({"hooks": {"Stop": [entry]}}))
    return settings


def test_a_blocked_stop_reaches_the_model_and_the_session_ends_when_allowed(
    claude: Path, tmp_path: Path
) -> None:
    repo, hooks = tmp_path / "repo", tmp_path / "hooks"
    repo.mkdir()
    hooks.mkdir()
    settings = block_once_hook(hooks)
    script = Script(
        [
            [
                "Writing it.",
                ToolUse(
                    "Write",
                    {
                        "file_path": str(repo / "calc.py"),
                        "content": "def add(a, b):\n    return a - b\n",
                    },
                ),
            ],
            ["Done. All tests pass."],
            lambda request: (
                [
                    ToolUse(
                        "Edit",
                        {
                            "file_path": str(repo / "calc.py"),
                            "old_string": "a - b",
                            "new_string": "a + b",
                        },
                    )
                ]
                if any("test_add" in text for text in request.feedback())
                else ["I give up."]
            ),
            ["Fixed: add now adds."],
        ],
        then=["unexpected extra turn"],
    )
    with serve(script) as url:
        session = run_session(
            claude, repo, "Fix add in calc.py", model_url=url, scratch=tmp_path, settings=settings
        )

    assert session.returncode == 0, session.stderr
    assert session.result == "Fixed: add now adds."
    assert session.system_messages == [f"Stop says: {ALLOWED}"]
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    turns = script.agent_requests
    assert len(turns) == 4
    feedback = [f"{STOP_HOOK_FEEDBACK}\n{REASON}"]
    assert [request.feedback() for request in turns] == [[], [], feedback, feedback]
    payloads = [json.loads(p.read_text()) for p in sorted(hooks.glob("payload-*.json"))]
    assert [p["stop_hook_active"] for p in payloads] == [False, True]
    assert [p["last_assistant_message"] for p in payloads] == [
        "Done. All tests pass.",
        "Fixed: add now adds.",
    ]
    assert {p["hook_event_name"] for p in payloads} == {"Stop"}
    assert {p["cwd"] for p in payloads} == {str(repo)}


def test_the_cli_offers_the_tools_the_scripts_call_with_the_inputs_they_send(
    claude: Path, tmp_path: Path
) -> None:
    script = Script([["Nothing to do."]])
    with serve(script) as url:
        session = run_session(claude, tmp_path, "Say hello", model_url=url, scratch=tmp_path)

    assert session.returncode == 0, session.stderr
    (request,) = script.agent_requests
    assert request.path == "/v1/messages?beta=true"
    assert request.body["stream"] is True
    schemas = {tool["name"]: tool["input_schema"] for tool in request.body["tools"]}
    assert schemas["Write"]["required"] == ["file_path", "content"]
    assert schemas["Edit"]["required"] == ["file_path", "old_string", "new_string"]
    assert schemas["Bash"]["required"] == ["command"]
    assert request.texts()[-1] == "Say hello"
