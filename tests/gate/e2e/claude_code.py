"""The real Claude Code CLI for the end-to-end tests: installed once per machine from npm into a
cache outside the repository, run offline against the scripted model server.

``python -m tests.gate.e2e.claude_code`` installs it (``make claude-code``) and prints its path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .clis import CLAUDE_CODE, InstallFailed

VERSION = CLAUDE_CODE.version
SESSION_TIMEOUT_S = 180


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return CLAUDE_CODE.cache_dir(environ)


def ensure_installed(environ: Mapping[str, str] = os.environ) -> Path:
    """The ``claude`` executable of the pinned release, installed first if the cache lacks it."""
    return CLAUDE_CODE.ensure_installed(environ)


@dataclass(frozen=True)
class Session:
    """A finished ``claude -p`` run, read from its stream-json output (one event a line)."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    seconds: float

    @property
    def result(self) -> str:
        """The agent's final message, as ``claude -p`` prints it."""
        (final,) = [event for event in self.events if event.get("type") == "result"]
        text: str = final["result"]
        return text

    @property
    def system_messages(self) -> list[str]:
        """What hooks showed the user (a hook's ``systemMessage``: "Stop says: ...")."""
        return [
            event["content"]
            for event in self.events
            if event.get("type") == "system" and event.get("subtype") == "informational"
        ]


def run_session(
    claude: Path,
    repo: Path,
    task: str,
    *,
    model_url: str,
    scratch: Path,
    settings: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Session:
    """``claude -p TASK`` in ``repo``, offline: its model is ``model_url``, its home and temporary
    folders are under ``scratch``, and ``claim`` from this interpreter's environment is on PATH
    for the hooks."""
    home, tmp = scratch / "home", scratch / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "scripted-model",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",  # lets bypassPermissions run as root
        "HOME": str(home),
        "TMPDIR": str(tmp),
        **(extra_env or {}),
    }
    # stream-json is how -p shows hooks' system messages; plain text shows only the result.
    command = [
        str(claude),
        "-p",
        task,
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    if settings is not None:
        command += ["--settings", str(settings)]
    started = time.monotonic()
    result = subprocess.run(
        command,
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SESSION_TIMEOUT_S,
        check=False,
    )
    seconds = time.monotonic() - started
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return Session(result.returncode, events, result.stderr, seconds)


if __name__ == "__main__":
    try:
        print(ensure_installed())
    except InstallFailed as failure:
        sys.exit(f"claude-code: {failure}")
