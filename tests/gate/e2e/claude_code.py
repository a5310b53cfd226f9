"""The real Claude Code CLI for the end-to-end tests: installed once per machine from npm into a
cache outside the repository, run offline against the scripted model server.

``python -m tests.gate.e2e.claude_code`` installs it (``make claude-code``) and prints its path.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Pinned: an unpinned install picks an older release on Node 20, and hook payloads change.
VERSION = "2.1.328"
PACKAGE = f"@anthropic-ai/claude-code@{VERSION}"
INSTALL_TIMEOUT_S = 600
SESSION_TIMEOUT_S = 180


class InstallFailed(Exception):
    """npm is missing or unreachable, or the package it installed does not run."""


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "completion-claim" / f"claude-code-{VERSION}"


def executable(install: Path) -> Path:
    return install / "node_modules" / ".bin" / "claude"


def ensure_installed(environ: Mapping[str, str] = os.environ) -> Path:
    """The ``claude`` executable of the pinned release, installed first if the cache lacks it.

    The install goes to a fresh folder renamed into place, under a lock, so two test runs on one
    machine neither install twice nor see half an install."""
    install = cache_dir(environ)
    install.parent.mkdir(parents=True, exist_ok=True)
    with open(install.parent / f".claude-code-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not executable(install).exists():
            _install(install, environ)
    _check_runs(executable(install))
    return executable(install)


def _install(install: Path, environ: Mapping[str, str]) -> None:
    npm = shutil.which("npm", path=environ.get("PATH"))
    if npm is None:
        raise InstallFailed(f"cannot install {PACKAGE}: npm is not on PATH (install Node.js)")
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=install.parent))
    try:
        result = subprocess.run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
                str(staging),
                PACKAGE,
            ],
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            raise InstallFailed(
                f"npm install {PACKAGE} failed (is the npm registry reachable?): "
                + _npm_failure(result.stderr or result.stdout, result.returncode)
            )
        staging.chmod(0o755)  # mkdtemp's 0700 would hide the CLI from other users of the cache
        shutil.rmtree(install, ignore_errors=True)
        staging.rename(install)
    except subprocess.TimeoutExpired:
        raise InstallFailed(f"npm install {PACKAGE} took over {INSTALL_TIMEOUT_S} s") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _npm_failure(output: str, returncode: int) -> str:
    """npm's first line naming the error (a FetchError, E404, ...) rather than its stack trace."""
    lines = [line.removeprefix("npm error").strip() for line in output.splitlines()]
    lines = [line for line in lines if line]
    named = [line for line in lines if "Error" in line or line.startswith("404")]
    return (named or lines or [f"exit code {returncode}"])[0]


def _check_runs(claude: Path) -> None:
    try:
        result = subprocess.run(
            [str(claude), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError as error:
        raise InstallFailed(f"{claude} does not run: {error}") from None
    if not result.stdout.startswith(VERSION):
        raise InstallFailed(
            f"{claude} --version said {result.stdout.strip()!r}, not {VERSION} "
            f"(stderr: {result.stderr.strip()[-200:]!r}); remove {claude.parents[2]}"
            " to reinstall"
        )


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
