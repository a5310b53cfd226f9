"""Bounded reads and atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from completion_claim import InvalidDocument, UsageError
from completion_claim._files import read_limited, write_atomic


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
