"""A small project gated as an operator would set it up: a git repository the agent works in,
and, outside it, the operator's claim.toml, signing key and runs directory; the harness's hooks
installed with the real ``claim hooks install`` (and committed, at project scope).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLAIM = str(Path(sys.executable).parent / "claim")
GIT_IDENTITY = ("-c", "user.name=Operator", "-c", "user.email=operator@example.com")

CALC_WITH_BUG = "def add(a, b):\n    return a - b\n"
CALC_FIXED = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_zero():\n    assert add(0, 0) == 0\n"
)


def claim(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLAIM, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
        env=None if env is None else dict(env),
    )  # fmt: skip


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@dataclass(frozen=True)
class Project:
    repo: Path
    config: Path
    runs: Path
    public_key: str
    trusted: str  # the commit whose tests judge the agent
    installed: str = ""
    """What ``claim hooks install`` said (on stderr): what it did and what is left to do."""
    install_exit: int = 0

    def claims(self) -> list[dict[str, Any]]:
        """Every claim the gate recorded, oldest first (run folders are named by time)."""
        return [json.loads(path.read_text()) for path in self.claim_paths()]

    def claim_paths(self) -> list[Path]:
        return sorted(self.runs.glob("*/*/claim.json"), key=lambda path: path.parent.name)


def make_project(
    root: Path,
    files: Mapping[str, str],
    checks: str,
    requires: tuple[str, ...],
    *,
    max_blocks: int,
    harness: str = "claude-code",
    scope: str = "project",
    env: Mapping[str, str] | None = None,
    install_flags: tuple[str, ...] = (),
) -> Project:
    """Commit ``files`` (the trusted commit), write the operator's claim.toml with ``checks``
    (``{trusted}`` is replaced by that commit), install the hooks of ``harness`` at ``scope``
    (with ``env``: the harness's home) and commit them when they are in the repository."""
    repo, operator = root / "repo", root / "operator"
    repo.mkdir()
    operator.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "calc and its tests")
    trusted = git(repo, "rev-parse", "HEAD")

    key = operator / "gate.key"
    made = claim("keygen", "--out", str(key))
    assert made.returncode == 0, made.stderr
    public_key = claim("pubkey", str(key)).stdout.strip()
    config = operator / "claim.toml"
    config.write_text(
        "[policy]\n"
        'id = "e2e/gate"\n'
        f"requires = {json.dumps(list(requires))}\n"
        "max_age_s = 3600\n\n"
        "[gate]\n"
        'runs_dir = "runs"\n'
        'sign_key = "gate.key"\n'
        f"max_blocks = {max_blocks}\n\n" + checks.replace("{trusted}", trusted)
    )
    installed = claim(
        "hooks", "install", "--harness", harness, "--scope", scope,
        "--config", str(config), "--json", *install_flags, cwd=repo, env=env,
    )  # fmt: skip
    assert installed.returncode == 0 or "--strict" in install_flags, installed.stderr
    settings = Path(json.loads(installed.stdout)["path"])
    if settings.is_relative_to(repo):
        git(repo, "add", str(settings.relative_to(repo)))
        git(repo, "commit", "-q", "-m", "gate the agent's stops")
    return Project(
        repo, config, operator / "runs", public_key, trusted, installed.stderr,
        installed.returncode,
    )  # fmt: skip


# The project's tests, run as in the trusted commit by the gate's own interpreter (which has
# pytest): the agent's edits to them do not change what runs.
TESTS_CHECK = """[[check]]
type = "test_run"
command = ["python", "-m", "pytest", "-q"]
trusted_ref = "{trusted}"
timeout_s = 120
"""
