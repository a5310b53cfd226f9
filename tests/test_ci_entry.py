"""``.ci/run``, the CI entry point, runs ``make test``: pytest on its workers, and a build that
fails whenever pytest does not exit 0 (a failed test, an error, no test collected at all)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.needs import unavailable

ROOT = Path(__file__).resolve().parent.parent


def _tool(folder: Path, name: str, body: str = "exit 0") -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.mark.parametrize("pytest_exit", [0, 1, 5])
def test_ci_run_fails_unless_pytest_passes(tmp_path: Path, pytest_exit: int) -> None:
    """The linters, pytest, the interpreter that fills the eval's cache and the system tools
    are stand-ins that exit as told; the Makefile and .ci/run are the real ones."""
    if shutil.which("make") is None:
        unavailable("make is not installed")
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("ruff", "mypy", "claim", "python", "bwrap", "setpriv", "chromium"):
        _tool(tools, name)
    _tool(tools, "pytest", f'echo "$@" > {tmp_path / "args"}\nexit {pytest_exit}')
    # Newer than pyproject.toml, or make would set up a virtual environment in the checkout.
    newer = (ROOT / "pyproject.toml").stat().st_mtime + 60
    os.utime(tools / "claim", (newer, newer))
    env = {
        "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "MAKEFLAGS": f"BIN={tools}",  # a command-line variable: the Makefile's own yields to it
    }

    done = subprocess.run(
        [str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, check=False
    )

    assert (done.returncode == 0) == (pytest_exit == 0), done.stdout + done.stderr
    assert (tmp_path / "args").read_text().split() == ["-q", "-n", "auto", "--dist", "loadgroup"]
