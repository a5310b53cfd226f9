"""The other harnesses' real CLIs, driven offline as ``claude_code.py`` drives Claude Code: each
one's model is a scripted server on 127.0.0.1 (wires.py), its home and configuration are under
the test's scratch folder, and it runs non-interactively as an operator would script it.

Each driver knows only what the harness needs to run offline (its config or environment for the
model), the command of a non-interactive run, and its shell tool, through which the scripted
model edits files. What makes the gate's hooks load (trust) is ``claim hooks install``'s job, not
the driver's: a driver that trusted them itself would hide an install that does not.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .clis import CODEX, COPILOT, GEMINI, OPENHANDS, NpmCli, PipCli
from .model_server import ToolUse

SESSION_TIMEOUT_S = 300


@dataclass(frozen=True)
class Run:
    """A finished non-interactive run: what it printed, as the operator's terminal shows it."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass(frozen=True)
class Driver:
    harness: str
    """The name ``claim hooks install --harness`` takes."""
    cli: NpmCli | PipCli
    wire: str
    shell_tool: str
    scopes: tuple[str, ...] = ("project", "user")

    def executable(self) -> Path:
        return self.cli.ensure_installed()

    def environment(self, home: Path) -> dict[str, str]:
        """The harness's home under ``home``, and ``claim`` of this interpreter on PATH."""
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        return {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "LANG": "C.UTF-8",
        }

    def offline(self, env: dict[str, str], model_url: str) -> None:
        """Point the harness at the scripted model (config files under HOME, or variables)."""
        raise NotImplementedError

    def command(self, executable: Path, task: str) -> list[str]:
        raise NotImplementedError

    def shell(self, command: str) -> ToolUse:
        return ToolUse(self.shell_tool, {"command": command})

    def edit(self, path: Path, old: str, new: str) -> ToolUse:
        """The model's edit of ``path``, as a shell command (every harness has a shell tool)."""
        script = (
            "import pathlib,sys; p=pathlib.Path(sys.argv[1]); "
            "p.write_text(p.read_text().replace(sys.argv[2], sys.argv[3]))"
        )
        return self.shell(shlex.join(["python3", "-c", script, str(path), old, new]))

    def run(
        self, repo: Path, task: str, env: Mapping[str, str], extra: tuple[str, ...] = ()
    ) -> Run:
        started = time.monotonic()
        result = subprocess.run(
            [*self.command(self.executable(), task), *extra],
            cwd=repo,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SESSION_TIMEOUT_S,
            check=False,
        )
        return Run(result.returncode, result.stdout, result.stderr, time.monotonic() - started)


class Codex(Driver):
    def environment(self, home: Path) -> dict[str, str]:
        env = super().environment(home)
        env["CODEX_HOME"] = str(home / ".codex")
        (home / ".codex").mkdir(parents=True, exist_ok=True)
        return env

    def offline(self, env: dict[str, str], model_url: str) -> None:
        config = Path(env["CODEX_HOME"]) / "config.toml"
        before = config.read_text() if config.exists() else ""
        config.write_text(
            'model = "scripted-model"\nmodel_provider = "scripted"\n'
            "[model_providers.scripted]\n"
            f'name = "scripted"\nbase_url = "{model_url}"\nwire_api = "responses"\n\n' + before
        )

    def command(self, executable: Path, task: str) -> list[str]:
        return [str(executable), "exec", "--json", "--dangerously-bypass-approvals-and-sandbox",
                task]  # fmt: skip

    def shell(self, command: str) -> ToolUse:
        return ToolUse(self.shell_tool, {"cmd": command})


class Copilot(Driver):
    def environment(self, home: Path) -> dict[str, str]:
        env = super().environment(home)
        env["COPILOT_HOME"] = str(home / ".copilot")
        return env

    def offline(self, env: dict[str, str], model_url: str) -> None:
        env.update(
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=model_url,
            COPILOT_PROVIDER_WIRE_API="responses",
            COPILOT_PROVIDER_API_KEY="scripted-model",
            COPILOT_MODEL="scripted-model",
        )

    def command(self, executable: Path, task: str) -> list[str]:
        return [str(executable), "-p", task, "--allow-all-tools"]

    def shell(self, command: str) -> ToolUse:
        return ToolUse(self.shell_tool, {"command": command, "description": "edit"})


class Gemini(Driver):
    def offline(self, env: dict[str, str], model_url: str) -> None:
        env.update(GOOGLE_GEMINI_BASE_URL=model_url, GEMINI_API_KEY="scripted-model")
        settings = Path(env["HOME"]) / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        document = json.loads(settings.read_text()) if settings.exists() else {}
        document["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        settings.write_text(json.dumps(document))

    def command(self, executable: Path, task: str) -> list[str]:
        return [str(executable), "-p", task, "--yolo", "--output-format", "json"]


class OpenHands(Driver):
    def offline(self, env: dict[str, str], model_url: str) -> None:
        env.update(
            LLM_MODEL="openai/scripted-model",
            LLM_BASE_URL=model_url,
            LLM_API_KEY="scripted-model",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            OPENHANDS_SUPPRESS_BANNER="1",
        )

    def command(self, executable: Path, task: str) -> list[str]:
        return [str(executable), "--headless", "--json", "--override-with-envs", "-t", task]

    def shell(self, command: str) -> ToolUse:
        return ToolUse(self.shell_tool, {"command": command, "security_risk": "LOW"})


DRIVERS: dict[str, Driver] = {
    d.harness: d
    for d in (
        Codex("codex", CODEX, "responses", "exec_command"),
        Copilot("copilot", COPILOT, "responses", "bash"),
        Gemini("gemini", GEMINI, "gemini", "run_shell_command"),
        OpenHands("openhands", OPENHANDS, "chat", "terminal"),
    )
}
