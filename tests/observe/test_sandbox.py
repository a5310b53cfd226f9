"""The bubblewrap sandbox itself: what it mounts, and that it refuses what it cannot hide."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from completion_claim.errors import ObservationFailed
from completion_claim.observe.sandbox import PLUGINS, SYSTEM_PATH, WORK, Sandbox


def run_inside(
    tmp_path: Path, *command: str, pass_fds: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[str]:
    work, plugin = tmp_path / "work", tmp_path / "plugin"
    sandbox = Sandbox.find(network=False)
    for folder in (work, plugin):
        folder.mkdir(exist_ok=True)
        os.chown(folder, sandbox.uid, sandbox.uid)
    argv = sandbox.argv(
        list(command), run_dir=str(work), plugin_dir=str(plugin), cwd=WORK,
        env={"PATH": SYSTEM_PATH}, readable=[], hidden=[],
    )  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, check=False, pass_fds=pass_fds)


def test_the_sandbox_sees_only_what_it_mounts(tmp_path: Path) -> None:
    (tmp_path / "beside-the-run.txt").write_text("host file")

    done = run_inside(tmp_path, "sh", "-c", "ls / /run/claim")
    beside = run_inside(tmp_path, "ls", str(tmp_path))

    listing = done.stdout.split()
    assert "root" not in listing
    assert "home" not in listing
    assert {"plugin", "work"} <= set(listing)
    assert beside.returncode != 0  # the folder beside the run is not there at all
    assert "No such file or directory" in beside.stderr


def test_the_network_is_off(tmp_path: Path) -> None:
    done = run_inside(tmp_path, "cat", "/proc/net/dev")

    interfaces = [line.split(":")[0].strip() for line in done.stdout.splitlines()[2:]]
    assert interfaces == ["lo"]


def test_a_key_inside_a_mounted_folder_is_refused(tmp_path: Path) -> None:
    sandbox = Sandbox.find(network=False)

    with pytest.raises(ObservationFailed, match="lies inside"):
        sandbox.argv(
            ["true"], run_dir="/x", plugin_dir="/y", cwd=WORK, env={},
            readable=[str(tmp_path)], hidden=[str(tmp_path / "ci.key")],
        )  # fmt: skip


def test_the_interpreter_probe_fails_closed(tmp_path: Path) -> None:
    sandbox = Sandbox.find(network=False)
    (tmp_path / "work").mkdir()

    # The interpreter's own prefix is not mounted: the probe cannot start it.
    with pytest.raises(ObservationFailed, match="cannot start"):
        sandbox.probe([sys.executable], str(tmp_path / "work"), None, [])


def test_a_missing_bwrap_is_named_with_its_package() -> None:
    with pytest.raises(ObservationFailed) as failure:
        Sandbox.find(network=False, program="no-such-bwrap")

    assert str(failure.value) == (
        "bubblewrap (bwrap) is not installed: apt-get install bubblewrap, or pass --no-sandbox"
    )


def test_the_plugin_folder_is_read_only_at_its_fixed_path(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "p.py").write_text("X = 1\n")

    done = run_inside(tmp_path, "sh", "-c", f"cat {PLUGINS}/p.py; echo 2 > {PLUGINS}/p.py")

    assert done.stdout == "X = 1\n"
    assert "Read-only file system" in done.stderr
    assert (tmp_path / "plugin" / "p.py").read_text() == "X = 1\n"


def test_descriptors_passed_on_reach_the_command(tmp_path: Path) -> None:
    """The plugin's pipes go through bwrap and, for a root observer, setpriv."""
    read, write = os.pipe()
    try:
        os.write(write, b"through")
        os.close(write)
        script = f"import os; print(os.read({read}, 64).decode())"
        done = run_inside(tmp_path, "/usr/bin/python3", "-c", script, pass_fds=(read,))
    finally:
        os.close(read)

    assert done.stdout == "through\n"


def test_the_run_reads_the_etc_files_toolchains_start_with_and_no_key(tmp_path: Path) -> None:
    """node exits 13 when it cannot read OpenSSL's configuration; the user database names the
    run's user. /etc/ssl/private beside them stays out."""
    read = run_inside(tmp_path, "cat", "/etc/ssl/openssl.cnf", "/etc/passwd")
    node = run_inside(tmp_path, "node", "-e", "console.log(require('crypto').randomUUID())")
    private = run_inside(tmp_path, "ls", "/etc/ssl/private")

    assert read.returncode == 0, read.stderr
    assert "openssl_init" in read.stdout
    assert "root:" in read.stdout
    assert (node.returncode, len(node.stdout.strip())) == (0, 36), node.stderr
    assert private.returncode != 0
