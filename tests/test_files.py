"""Bounded reads and atomic writes."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from completion_claim import InvalidDocument, UsageError
from completion_claim._files import read_limited, write_atomic

from .builders import claim_doc
from .signing import CI


def test_write_atomic_replaces_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, b"new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "n.json", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.json").stat().st_mode) == 0o644


def test_exclusive_refuses_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_text("keep")
    with pytest.raises(UsageError, match="already exists"):
        write_atomic(target, b"new", exclusive=True)
    assert target.read_text() == "keep"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot write"):
        write_atomic(tmp_path / "missing-dir" / "f.json", b"x")
    assert list(tmp_path.iterdir()) == []


def test_read_limited_refuses_more_than_the_limit(tmp_path: Path) -> None:
    target = tmp_path / "big"
    target.write_bytes(b"x" * 101)
    with pytest.raises(InvalidDocument, match="over the size limit of 100 bytes"):
        read_limited(str(target), 100)
    assert read_limited(str(target), 101) == b"x" * 101


# --- claim files must be regular files --------------------------------------------------------

CLAIM_SCRIPT = Path(sys.executable).with_name("claim")
# Generous for a loaded machine; what it guards against is waiting forever.
HANG_TIMEOUT_S = 20


def claim_script(
    *argv: str, cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(CLAIM_SCRIPT), *argv],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        check=False,
        timeout=HANG_TIMEOUT_S,
    )


READERS_OF_A_CLAIM = {
    "verify": ["verify", "SPECIAL"],
    "verify-json": ["verify", "SPECIAL", "--json"],
    "verify-batch": ["verify", "--batch", "SPECIAL"],
    "verify-policy": ["verify", "claim.json", "--policy", "SPECIAL"],
    "mutate": ["mutate", "SPECIAL", "--kind", "file_write", "--target", "calc.py"],
    "observe-endpoint": [
        *("observe", "endpoint", "SPECIAL", "http://127.0.0.1:9/health"),
        *("--expect-json", "/build=1"),
    ],
    "observe-readback": [
        *("observe", "readback", "SPECIAL", "sqlite:///store.db"),
        *("--query", "SELECT 1 AS one", "--expect", "one=1"),
    ],
    "check-verdict": ["check-verdict", "SPECIAL", "--public-key", CI.public.text],
}


def reader(name: str, path: str) -> list[str]:
    """The command line of one reader of a claim, reading ``path``."""
    return [path if arg == "SPECIAL" else arg for arg in READERS_OF_A_CLAIM[name]]


@pytest.mark.parametrize("name", READERS_OF_A_CLAIM)
def test_attack_10_fifo_claim_does_not_hang(tmp_path: Path, name: str) -> None:
    """A FIFO with no writer used to block open() for ever; now: one line, usage error (4)."""
    os.mkfifo(tmp_path / "claim.fifo")
    (tmp_path / "claim.json").write_text(json.dumps(claim_doc()))
    result = claim_script(*reader(name, "claim.fifo"), cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    problem = "cannot read claim.fifo: not a regular file (a FIFO)"
    if "--json" in READERS_OF_A_CLAIM[name]:
        assert json.loads(result.stderr) == {"error": problem, "exit_code": 4}
    else:
        assert result.stderr.decode() == f"claim: {problem}\n"
    assert result.stdout == b""


@pytest.mark.parametrize(
    ("special", "what"),
    [(".", "a directory"), ("/dev/zero", "a device"), ("claim.sock", "")],
    ids=["directory", "endless-device", "socket"],
)
def test_attack_10_other_special_files_are_refused_at_once(
    tmp_path: Path, special: str, what: str
) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "claim.sock"))
        for name in ("verify", "mutate"):
            result = claim_script(*reader(name, special), cwd=tmp_path)
            assert result.returncode == 4, result.stderr
            line = f"claim: cannot read {special}: not a regular file"
            assert result.stderr.decode() == (f"{line} ({what})\n" if what else f"{line}\n")


def test_a_regular_claim_file_and_stdin_are_read_as_before(tmp_path: Path) -> None:
    """Control: files and streams through stdin still serve every reader."""
    document = json.dumps(claim_doc()).encode()
    (tmp_path / "claim.json").write_bytes(document)
    decide = ["--at", "2026-08-27T18:00:20Z"]
    assert claim_script("verify", "claim.json", *decide, cwd=tmp_path).returncode == 0
    assert claim_script("verify", "-", *decide, cwd=tmp_path, stdin=document).returncode == 0
    batch = claim_script("verify", "--batch", "-", *decide, cwd=tmp_path, stdin=document)
    assert json.loads(batch.stdout)["state"] == "verified"
    assert claim_script(*reader("mutate", "claim.json"), cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "claim.json").read_text())["mutations"][-1]["target"] == "calc.py"
