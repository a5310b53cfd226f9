"""Editing a claim in place: the lock, and what the claim path may be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from completion_claim import UsageError, claimfile
from completion_claim.claimfile import RawClaim, edit_claim

from .builders import claim_doc
from .test_files import claim_script, reader


def add_description(raw: RawClaim, _: object) -> None:
    raw["task"]["description"] = "edited"


def test_attack_10_a_symlink_at_the_claim_path_is_not_followed_by_an_edit(tmp_path: Path) -> None:
    """The edit replaces the path: through a link it would lock and read whatever the link names,
    then silently turn the link into a file."""
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps(claim_doc()))
    before = real.read_bytes()
    link = tmp_path / "claim.json"
    link.symlink_to(real)
    with pytest.raises(UsageError, match=r"claim\.json: a symbolic link, which is not followed"):
        edit_claim(link, add_description)
    assert link.is_symlink()
    assert real.read_bytes() == before


def test_attack_10_a_symlink_to_a_fifo_does_not_hang_an_edit(tmp_path: Path) -> None:
    """Opening the lock through the link used to block for ever on the FIFO's open."""
    os.mkfifo(tmp_path / "elsewhere")
    (tmp_path / "claim.json").symlink_to(tmp_path / "elsewhere")
    result = claim_script(*reader("mutate", "claim.json"), cwd=tmp_path)
    assert result.returncode == 4
    assert result.stderr.decode() == (
        "claim: cannot read claim.json: a symbolic link, which is not followed here\n"
    )


def test_a_regular_claim_file_is_edited_in_place(tmp_path: Path) -> None:
    """Control: the same edit on the file itself."""
    path = tmp_path / "claim.json"
    path.write_text(json.dumps(claim_doc()))
    edit_claim(path, add_description)
    assert json.loads(path.read_text())["task"]["description"] == "edited"


def test_attack_10_a_lock_held_by_a_leftover_process_does_not_hang_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process the agent leaves behind may hold the claim's lock for ever."""
    path = tmp_path / "claim.json"
    path.write_text(json.dumps(claim_doc()))
    before = path.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        monkeypatch.setattr(claimfile, "LOCK_TIMEOUT_S", 0.3)
        with pytest.raises(UsageError, match=r"stayed locked by another process for 0\.3 s"):
            edit_claim(path, add_description)
    finally:
        holder.kill()
        holder.wait()
    assert path.read_bytes() == before
    edit_claim(path, add_description)  # once the holder is gone, the edit goes through
    assert json.loads(path.read_text())["task"]["description"] == "edited"


HOLD_LOCK = (
    "import fcntl, sys, time\n"
    "handle = open(sys.argv[1], 'rb')\n"
    "fcntl.flock(handle.fileno(), fcntl.LOCK_EX)\n"
    "print('locked', flush=True)\n"
    "time.sleep(60)\n"
)
