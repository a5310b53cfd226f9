"""The operator's dependency cache: installed once per lockfile, in the sandbox, sealed, reused."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from completion_claim.errors import ObservationFailed, UsageError
from completion_claim.observe.dependency_cache import (
    cache_key,
    install,
    read_lockfiles,
    require_protected,
)
from completion_claim.observe.runners.base import (
    Dependencies,
    Detected,
    Invocation,
    RunContext,
    Runner,
    Toolchain,
)
from completion_claim.observe.sandbox import Sandbox

# Installs what the lockfile lists, one file per line, into lib/ (and counts installs, so reuse
# shows). Runs in the sandbox as the install of a real runner would.
INSTALL = (
    "/usr/bin/python3",
    "-c",
    "import os, pathlib\n"
    "os.makedirs('lib', exist_ok=True)\n"
    "for name in pathlib.Path('deps.lock').read_text().split():\n"
    "    pathlib.Path('lib', name).write_text(name)\n",
)


class LockfileRunner(Runner):
    """A runner whose only dependency step is INSTALL: what a real runner's cache does, without
    a registry."""

    name = "lockfile"
    ecosystem = "test"

    def __init__(self, install: Sequence[str] = INSTALL, protected: bool = True) -> None:
        self.install = tuple(install)
        self.is_protected = protected

    def recognises(self, command: Sequence[str]) -> bool:
        return False

    def detect(self, root: Path) -> Detected | None:
        return None

    def protected(self, rel: bytes) -> bool:
        return self.is_protected and rel.endswith(b"deps.lock")

    def dependencies(
        self, command: Sequence[str], read: Callable[[str], bytes | None]
    ) -> Dependencies:
        return Dependencies(("deps.lock",), self.install, {"lib": "lib"})

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        return Invocation(tuple(command))


def installed(cache: Path, runner: LockfileRunner, lock: bytes) -> Path:
    spec = runner.dependencies((), lambda _: None)
    entry = install(
        cache, runner, spec, {"deps.lock": lock}, Toolchain(), Sandbox.find(network=False), 60.0
    )
    return entry.host("lib")


def test_an_install_is_made_in_the_sandbox_and_sealed(tmp_path: Path) -> None:
    lib = installed(tmp_path, LockfileRunner(), b"left-pad\nis-odd\n")
    assert sorted(os.listdir(lib)) == ["is-odd", "left-pad"]
    for path in (lib, lib / "left-pad", lib.parent):
        info = os.lstat(path)
        assert info.st_uid == os.geteuid()
        assert not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def test_the_same_lockfile_reuses_its_entry_and_another_gets_its_own(tmp_path: Path) -> None:
    runner = LockfileRunner()
    first = installed(tmp_path, runner, b"left-pad\n")
    (first / "left-pad").chmod(0o644)
    marker = os.stat(first / "left-pad").st_ino
    assert installed(tmp_path, runner, b"left-pad\n") == first
    assert os.stat(first / "left-pad").st_ino == marker  # not installed again
    other = installed(tmp_path, runner, b"is-odd\n")
    assert other != first
    assert os.listdir(other) == ["is-odd"]


def test_a_failed_install_leaves_no_entry(tmp_path: Path) -> None:
    runner = LockfileRunner(
        install=("/usr/bin/python3", "-c", "import sys; sys.exit('no registry')")
    )
    with pytest.raises(
        ObservationFailed, match=r"installing the dependencies .* failed: no registry"
    ):
        installed(tmp_path, runner, b"left-pad\n")
    assert [p.suffix for p in (tmp_path / runner.name).iterdir()] == [".lock"]


def test_an_install_without_the_promised_folder_is_refused(tmp_path: Path) -> None:
    runner = LockfileRunner(install=("/usr/bin/true",))
    with pytest.raises(ObservationFailed, match="made no lib/"):
        installed(tmp_path, runner, b"left-pad\n")


def test_concurrent_observers_install_once(tmp_path: Path) -> None:
    runner = LockfileRunner()
    found: list[Path] = []
    threads = [threading.Thread(target=lambda: found.append(installed(tmp_path, runner, b"a\n")))
               for _ in range(3)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found)) == 1
    assert [p for p in (tmp_path / runner.name).iterdir() if p.is_dir()] == [found[0].parent]


def test_the_install_has_no_way_into_the_cache_beyond_its_own_folder(tmp_path: Path) -> None:
    runner = LockfileRunner()
    first = installed(tmp_path, runner, b"left-pad\n")
    escape = (
        "/usr/bin/python3", "-c",
        f"import os; os.makedirs('lib'); open({str(first / 'left-pad')!r}, 'w').write('x')",
    )  # fmt: skip
    with pytest.raises(ObservationFailed, match="failed"):
        installed(tmp_path, LockfileRunner(install=escape), b"other\n")
    assert (first / "left-pad").read_text() == "left-pad"


def test_a_lockfile_the_runner_does_not_protect_is_refused(tmp_path: Path) -> None:
    runner = LockfileRunner(protected=False)
    with pytest.raises(UsageError, match=r"deps\.lock is not a protected path"):
        require_protected(runner, runner.dependencies((), lambda _: None), ".")


def test_lockfiles_are_read_without_following_links(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("key")
    (tmp_path / "deps.lock").symlink_to(tmp_path / "secret")
    with pytest.raises(ObservationFailed, match=r"cannot read deps\.lock"):
        read_lockfiles(tmp_path, LockfileRunner().dependencies((), lambda _: None))
    (tmp_path / "deps.lock").unlink()
    with pytest.raises(ObservationFailed, match=r"deps\.lock is missing"):
        read_lockfiles(tmp_path, LockfileRunner().dependencies((), lambda _: None))


def test_an_optional_lockfile_may_be_absent_and_its_absence_keys_the_entry(tmp_path: Path) -> None:
    spec = Dependencies(("deps.lock", "deps.sum"), INSTALL, {"lib": "lib"}, optional=("deps.sum",))
    (tmp_path / "deps.lock").write_bytes(b"left-pad\n")
    absent = read_lockfiles(tmp_path, spec)
    assert absent == {"deps.lock": b"left-pad\n"}
    (tmp_path / "deps.sum").write_bytes(b"")
    empty = read_lockfiles(tmp_path, spec)
    runner = LockfileRunner()
    assert cache_key(runner, spec, absent) != cache_key(runner, spec, empty)
    (tmp_path / "deps.lock").unlink()
    with pytest.raises(ObservationFailed, match=r"deps\.lock is missing"):
        read_lockfiles(tmp_path, spec)
