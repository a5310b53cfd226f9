"""The harnesses' CLIs for the end-to-end tests, each a pinned release installed once per machine
into a cache outside the repository: from npm (Claude Code, Codex, Copilot, Gemini CLI) or from
PyPI into its own virtual environment (OpenHands). ``python -m tests.gate.e2e.clis [NAME...]``
(``make harnesses``) installs them ahead of the tests, which otherwise install on first use.

An install goes to a fresh folder renamed into place (a virtual environment, which cannot be
moved, is marked complete last instead), under a file lock, so two test runs (or
two pytest-xdist workers) on one machine neither install twice nor see half an install.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

INSTALL_TIMEOUT_S = 600
_SEEN_RUNNING: set[Path] = set()
"""The executables whose ``--version`` answered in this process: asked once, not twice a test
(Gemini CLI's takes about 2.5 s)."""


class InstallFailed(Exception):
    """npm is missing or unreachable, or the package it installed does not run."""


@dataclass(frozen=True)
class NpmCli:
    """One pinned release: ``name`` names its cache folder, ``bin`` its executable."""

    name: str
    package: str
    version: str
    bin: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def lock_name(self) -> str:
        return f".{self.name}-{self.version}.lock"

    def cache_dir(self, environ: Mapping[str, str] = os.environ) -> Path:
        base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "completion-claim" / f"{self.name}-{self.version}"

    def executable(self, install: Path) -> Path:
        return install / "node_modules" / ".bin" / self.bin

    def ensure_installed(self, environ: Mapping[str, str] = os.environ) -> Path:
        """The executable of the pinned release, installed first if the cache lacks it."""
        install = self.cache_dir(environ)
        install.parent.mkdir(parents=True, exist_ok=True)
        with open(install.parent / self.lock_name, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.executable(install).exists():
                self._install(install, environ)
        executable = self.executable(install)
        if executable not in _SEEN_RUNNING:
            self._check_runs(executable)
            _SEEN_RUNNING.add(executable)
        return executable

    def _install(self, install: Path, environ: Mapping[str, str]) -> None:
        npm = shutil.which("npm", path=environ.get("PATH"))
        if npm is None:
            raise InstallFailed(f"cannot install {self.spec}: npm is not on PATH (install Node.js)")
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=install.parent))
        try:
            result = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--loglevel=error",
                 "--prefix", str(staging), self.spec],
                env=dict(environ),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )  # fmt: skip
            if result.returncode != 0:
                raise InstallFailed(
                    f"npm install {self.spec} failed (is the npm registry reachable?): "
                    + _npm_failure(result.stderr or result.stdout, result.returncode)
                )
            staging.chmod(0o755)  # mkdtemp's 0700 would hide the CLI from other users
            shutil.rmtree(install, ignore_errors=True)
            staging.rename(install)
        except subprocess.TimeoutExpired:
            took = f"npm install {self.spec} took over {INSTALL_TIMEOUT_S} s"
            raise InstallFailed(took) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _check_runs(self, executable: Path) -> None:
        try:
            result = subprocess.run(
                [str(executable), "--version"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
                env={**os.environ, "HOME": tempfile.gettempdir()},
            )
        except OSError as error:
            raise InstallFailed(f"{executable} does not run: {error}") from None
        if self.version not in result.stdout.split("\n")[0]:
            raise InstallFailed(
                f"{executable} --version said {result.stdout.strip()!r}, not {self.version} "
                f"(stderr: {result.stderr.strip()[-200:]!r}); remove {executable.parents[2]}"
                " to reinstall"
            )


def _npm_failure(output: str, returncode: int) -> str:
    """npm's first line naming the error (a FetchError, E404, ...) rather than its stack trace."""
    lines = [line.removeprefix("npm error").strip() for line in output.splitlines()]
    lines = [line for line in lines if line]
    named = [line for line in lines if "Error" in line or line.startswith("404")]
    return (named or lines or [f"exit code {returncode}"])[0]


# Pinned: hook payloads and trust rules change between releases (the versions docs/integrations.md
# describes).
CLAUDE_CODE = NpmCli("claude-code", "@anthropic-ai/claude-code", "2.1.328", "claude")
CODEX = NpmCli("codex", "@openai/codex", "0.171.0", "codex")
COPILOT = NpmCli("copilot", "@github/copilot", "1.0.102", "copilot")
GEMINI = NpmCli("gemini-cli", "@google/gemini-cli", "0.61.0", "gemini")


@dataclass(frozen=True)
class PipCli:
    """A release from PyPI in its own virtual environment, under the Python it needs."""

    name: str
    package: str
    version: str
    bin: str
    python: str
    """The interpreter's version, ``3.12``: looked for on PATH, then among pyenv's."""

    @property
    def spec(self) -> str:
        return f"{self.package}=={self.version}"

    def cache_dir(self, environ: Mapping[str, str] = os.environ) -> Path:
        base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "completion-claim" / f"{self.name}-{self.version}"

    def executable(self, install: Path) -> Path:
        return install / "bin" / self.bin

    def interpreter(self, environ: Mapping[str, str]) -> Path:
        """pyenv's shims answer for versions not selected, with an error: each candidate is run."""
        pyenv = Path(environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
        candidates = [shutil.which(f"python{self.python}", path=environ.get("PATH"))]
        candidates += [str(p / "bin" / f"python{self.python}") for p in sorted(
            pyenv.glob(f"{self.python}.*"), reverse=True)]  # fmt: skip
        for candidate in filter(None, candidates):
            try:
                ran = subprocess.run([candidate, "-c", "import venv"], capture_output=True,
                                     timeout=60, check=False)  # fmt: skip
            except OSError:
                continue
            if ran.returncode == 0:
                return Path(candidate)
        raise InstallFailed(
            f"cannot install {self.spec}: it needs Python {self.python} (python{self.python} "
            f"on PATH or under {pyenv}), and this machine has none"
        )

    def ensure_installed(self, environ: Mapping[str, str] = os.environ) -> Path:
        install = self.cache_dir(environ)
        install.parent.mkdir(parents=True, exist_ok=True)
        complete = install / ".installed"
        with open(install.parent / f".{self.name}-{self.version}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not complete.exists():
                python = self.interpreter(environ)
                shutil.rmtree(install, ignore_errors=True)
                try:
                    self._install(python, install, environ)
                except BaseException:
                    shutil.rmtree(install, ignore_errors=True)
                    raise
                complete.touch()
        return self.executable(install)

    def _install(self, python: Path, install: Path, environ: Mapping[str, str]) -> None:
        for step in (
            [str(python), "-m", "venv", str(install)],
            [str(install / "bin" / "python"), "-m", "pip", "install", "--quiet", self.spec],
        ):
            try:
                result = subprocess.run(
                    step, env=dict(environ), stdin=subprocess.DEVNULL, capture_output=True,
                    text=True, timeout=INSTALL_TIMEOUT_S, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                raise InstallFailed(f"{' '.join(step)} took over {INSTALL_TIMEOUT_S} s") from None
            if result.returncode != 0:
                lines = [line for line in (result.stderr or result.stdout).splitlines() if line]
                named = [line for line in lines if "ERROR" in line or "Error" in line]
                raise InstallFailed(
                    f"installing {self.spec} failed (is PyPI reachable?): "
                    + (named or lines or [f"exit code {result.returncode}"])[-1]
                )


OPENHANDS = PipCli("openhands", "openhands", "1.16.0", "openhands", python="3.12")
ALL: tuple[NpmCli | PipCli, ...] = (CLAUDE_CODE, CODEX, COPILOT, GEMINI, OPENHANDS)


if __name__ == "__main__":
    wanted = sys.argv[1:] or [cli.name for cli in ALL]
    for cli in ALL:
        if cli.name in wanted:
            try:
                print(cli.ensure_installed())
            except InstallFailed as failure:
                sys.exit(f"{cli.name}: {failure}")
