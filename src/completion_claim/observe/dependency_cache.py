"""The operator's dependency cache: what a runner installs from the lockfile, once per lockfile.

A test run never uses the agent's installed dependencies (``node_modules``, a module cache): the
runner names its lockfiles and an install command (``npm ci --ignore-scripts``, ``go mod
download``, ``cargo fetch``); the observer writes the lockfiles, as the run tree holds them once
protected paths are restored from the trusted ref, into a fresh folder of the cache, runs the
install there in the sandbox with the network on (it can write nothing but that folder), and
keeps the result under the digest of the runner's name, the install command and the lockfiles.
Later runs with the same lockfiles reuse it. Entries are mounted read-only into the run, which
has no network: the tests run offline on exactly what the lockfile pinned.

An entry is complete only once renamed into place (install in a temporary folder, then
``rename``), owned by the observer and not writable by anyone else; concurrent observers wait on
a lock and find it done.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ObservationFailed, UsageError
from .runners.base import Dependencies, Runner, Toolchain
from .sandbox import SYSTEM_PATH, WORK, Sandbox

DEPENDENCIES_MOUNT = "/run/claim/deps"  # where a mount the observer places is seen in the run
_MAX_LOCKFILE_BYTES = 64 << 20
_OUTPUT_LINES = 5


@dataclass(frozen=True)
class Installed:
    """A complete cache entry: its folder and key, and what each mount is on the host."""

    folder: Path
    key: str
    mounts: Mapping[str, str | None]

    def host(self, sub: str) -> Path:
        return self.folder / sub


def cache_key(runner: Runner, spec: Dependencies, lockfiles: Mapping[str, bytes]) -> str:
    hasher = hashlib.sha256()
    for part in (
        runner.name,
        *spec.install,
        *sorted(f"{k}={v}" for k, v in spec.install_env.items()),
    ):
        hasher.update(part.encode() + b"\0")
    for name in spec.lockfiles:
        data = lockfiles.get(name)
        size = "absent" if data is None else str(len(data))
        hasher.update(name.encode() + b"\0" + size.encode() + b"\0" + (data or b""))
    return hasher.hexdigest()


def read_lockfiles(run_folder: Path, spec: Dependencies) -> dict[str, bytes]:
    """The lockfiles as the run tree holds them (the observer's own copy, before the run)."""
    found: dict[str, bytes] = {}
    for name in spec.lockfiles:
        try:
            fd = os.open(run_folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            if name in spec.optional:
                continue
            raise ObservationFailed(
                f"{name} is missing: the dependencies are installed from it"
            ) from None
        except OSError as exc:
            raise ObservationFailed(f"cannot read {name}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(_MAX_LOCKFILE_BYTES + 1)
        if len(data) > _MAX_LOCKFILE_BYTES:
            raise ObservationFailed(f"{name} is over {_MAX_LOCKFILE_BYTES} bytes")
        found[name] = data
    return found


def install(
    cache: Path,
    runner: Runner,
    spec: Dependencies,
    lockfiles: Mapping[str, bytes],
    toolchain: Toolchain,
    sandbox: Sandbox | None,
    timeout_s: float,
) -> Installed:
    """The cache entry for these lockfiles, installed now when there is none."""
    key = cache_key(runner, spec, lockfiles)
    folder = cache / runner.name / key
    if folder.is_dir():
        return Installed(folder, key, spec.mounts)
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _locked(folder.parent / f"{key}.lock"):
        if folder.is_dir():  # another observer finished it while this one waited
            return Installed(folder, key, spec.mounts)
        scratch = Path(tempfile.mkdtemp(prefix=f"{key[:12]}.", dir=folder.parent))
        try:
            _install_into(scratch, spec, lockfiles, toolchain, sandbox, timeout_s)
            _seal(scratch)
            os.rename(scratch, folder)
        finally:
            if scratch.exists():
                shutil.rmtree(scratch, ignore_errors=True)
    return Installed(folder, key, spec.mounts)


def _install_into(
    scratch: Path,
    spec: Dependencies,
    lockfiles: Mapping[str, bytes],
    toolchain: Toolchain,
    sandbox: Sandbox | None,
    timeout_s: float,
) -> None:
    for name, data in lockfiles.items():
        target = scratch / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    entry = str(scratch) if sandbox is None else WORK
    home = "/tmp" if sandbox is not None else str(scratch / ".home")  # noqa: S108 - the sandbox's
    env = {
        "PATH": ":".join([*toolchain.path, SYSTEM_PATH]),
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        **toolchain.env,
        **{name: value.replace("{entry}", entry) for name, value in spec.install_env.items()},
    }
    argv: list[str] = list(spec.install)
    if sandbox is None:
        os.mkdir(home)
    else:
        networked = Sandbox(sandbox.bwrap, sandbox.version, True, sandbox.setpriv)
        if sandbox.setpriv is not None:
            _chown_tree(scratch, sandbox.uid)
        argv = networked.argv(
            argv, run_dir=str(scratch), plugin_dir=None, cwd=WORK, env=env,
            readable=toolchain.readable, hidden=(),
        )  # fmt: skip
        env = {"PATH": SYSTEM_PATH}
    try:
        done = subprocess.run(
            argv, cwd=scratch, env=env, capture_output=True, timeout=timeout_s, check=False,
            start_new_session=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ObservationFailed(
            f"installing the dependencies ({spec.named}) ran longer than {timeout_s:g} s"
        ) from None
    except OSError as exc:
        raise ObservationFailed(f"cannot run {spec.install[0]}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).decode("utf-8", "replace")
        raise ObservationFailed(
            f"installing the dependencies ({spec.named}) failed: "
            f"{_complaint(said, spec.error_lines) or f'exit {done.returncode}'}"
        )
    for sub in spec.mounts:
        if not (scratch / sub).is_dir():
            raise ObservationFailed(f"installing the dependencies ({spec.named}) made no {sub}/")
    if sandbox is None:
        shutil.rmtree(home, ignore_errors=True)


def _complaint(said: str, error_lines: str | None) -> str:
    """What the install said went wrong: its error lines (the first few) when the runner names
    them and there are any, else its last lines."""
    lines = [line.strip() for line in said.strip().splitlines() if line.strip()]
    if error_lines is not None:
        errors = [line for line in lines if re.fullmatch(error_lines, line)]
        if errors:
            return " | ".join(errors[: _OUTPUT_LINES - 2])
    return " | ".join(lines[-_OUTPUT_LINES:])


def _seal(folder: Path) -> None:
    """The observer's, and writable by nobody else: the run mounts it read-only, and no other
    account may change it between runs."""
    uid, gid = os.geteuid(), os.getegid()
    for path, folders, files in os.walk(folder):
        for name in [*folders, *files, ""]:
            target = os.path.join(path, name) if name else path
            os.lchown(target, uid, gid)
            if not os.path.islink(target):
                os.chmod(target, os.lstat(target).st_mode & 0o755)


def _chown_tree(folder: Path, uid: int) -> None:
    for path, _, files in os.walk(folder):
        os.chown(path, uid, uid)
        for name in files:
            os.lchown(os.path.join(path, name), uid, uid)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def require_protected(runner: Runner, spec: Dependencies, cwd: str) -> None:
    """A lockfile the runner does not protect would let the agent choose what is installed."""
    for name in spec.lockfiles:
        rel = os.path.normpath(os.path.join(cwd, name)).encode()
        if not runner.protected(rel):
            raise UsageError(f"{runner.name}: the lockfile {name} is not a protected path")
