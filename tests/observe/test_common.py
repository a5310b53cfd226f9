"""What every observer shares: by default a check covers only the mutations it can speak for."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from completion_claim.cli import run

from .conftest import last_evidence, verdict_of

MakeClaim = Callable[..., Path]


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = tmp_path / "accounts.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, zip TEXT)")
        db.execute("INSERT INTO accounts VALUES (4471, '94107')")
    return f"sqlite:///{path}"


def readback(claim: Path, store: str, *options: str) -> int:
    args = ["--table", "accounts", "--key", "id=4471", "--expect", "zip=94107", *options]
    return run(["observe", "readback", str(claim), store, *args])


def test_attack_07_a_readback_does_not_cover_code_edits_by_default(
    make_claim: MakeClaim, store: str
) -> None:
    claim = make_claim(kind="file_write", target="src/calc.py")
    assert run(["mutate", str(claim), "--kind", "state_write", "--target", "accounts/4471"]) == 0
    assert readback(claim, store) == 0
    assert last_evidence(claim)["covers"] == ["m2"]
    assert verdict_of(claim) == "unverified"


def test_attack_07_control_a_readback_covers_the_record_write(
    make_claim: MakeClaim, store: str
) -> None:
    claim = make_claim(kind="state_write", target="accounts/4471")
    assert readback(claim, store) == 0
    assert last_evidence(claim)["covers"] == ["m1"]
    assert verdict_of(claim) == "verified"


def test_explicit_covers_is_kept_for_the_verifier_to_judge(
    make_claim: MakeClaim, store: str
) -> None:
    claim = make_claim(kind="file_write", target="src/calc.py")
    assert readback(claim, store, "--covers", "m1") == 0
    assert last_evidence(claim)["covers"] == ["m1"]
    assert verdict_of(claim) == "unverified"
