"""``claim new`` and ``claim mutate``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from completion_claim import load_claim
from completion_claim.cli import run


def test_new_writes_a_valid_empty_claim_with_the_builtin_policy(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    assert (
        run(
            [
                "new",
                str(path),
                "--task-id",
                "t-1",
                "--outcome",
                "Fixed it",
                "--description",
                "Fix the bug",
            ]
        )
        == 0
    )
    claim = load_claim(path.read_bytes())
    assert (claim.task.id, claim.task.description) == ("t-1", "Fix the bug")
    assert claim.claimed_outcome == "Fixed it"
    assert claim.mutations == ()
    assert claim.evidence == ()
    assert claim.policy is not None
    assert claim.policy.id == "completion-claim/builtin"


def test_new_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.json"
    path.write_text("precious")
    assert run(["new", str(path), "--task-id", "t", "--outcome", "o"]) == 4
    assert "already exists" in capsys.readouterr().err
    assert path.read_text() == "precious"


def test_mutate_appends_with_default_ids_and_times(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    run(["new", str(path), "--task-id", "t", "--outcome", "o"])
    assert run(["mutate", str(path), "--kind", "file_write", "--target", "a.py"]) == 0
    assert (
        run(
            [
                "mutate",
                str(path),
                "--kind",
                "deploy",
                "--target",
                "web",
                "--at",
                "2026-08-27T18:00:00+02:00",
                "--digest",
                "sha256:ab",
            ]
        )
        == 0
    )
    claim = load_claim(path.read_bytes())
    assert [m.id for m in claim.mutations] == ["m1", "m2"]
    assert claim.mutations[1].digest == "sha256:ab"
    assert json.loads(path.read_text())["mutations"][1]["at"] == "2026-08-27T16:00:00Z"


def test_mutate_rejects_a_duplicate_id_and_keeps_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.json"
    run(["new", str(path), "--task-id", "t", "--outcome", "o"])
    run(["mutate", str(path), "--kind", "k", "--target", "x", "--id", "a"])
    before = path.read_bytes()
    assert run(["mutate", str(path), "--kind", "k", "--target", "y", "--id", "a"]) == 4
    assert "already in the claim" in capsys.readouterr().err
    assert path.read_bytes() == before


@pytest.mark.parametrize("option", ["--kind", "--target"])
def test_mutate_with_an_empty_option_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    """The option's value is wrong, not the claim file: exit 4, and the file is as it was."""
    path = tmp_path / "c.json"
    run(["new", str(path), "--task-id", "t", "--outcome", "o"])
    capsys.readouterr()
    before = path.read_bytes()
    given = {"--kind": "file_write", "--target": "calc.py", option: ""}
    assert run(["mutate", str(path), *(x for pair in given.items() for x in pair)]) == 4
    assert capsys.readouterr().err == f"claim: {option}: must not be empty\n"
    assert path.read_bytes() == before


def test_mutate_on_an_invalid_claim_exits_3_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"spec_version": "0.1"}')
    assert run(["mutate", str(path), "--kind", "k", "--target", "x"]) == 3
    assert path.read_text() == '{"spec_version": "0.1"}'


def test_concurrent_mutates_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    run(["new", str(path), "--task-id", "t", "--outcome", "o"])
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "completion_claim",
                "mutate",
                str(path),
                "--kind",
                "k",
                "--target",
                f"file{i}",
            ],
            stdout=subprocess.DEVNULL,
        )
        for i in range(8)
    ]
    assert [p.wait() for p in procs] == [0] * 8
    claim = load_claim(path.read_bytes())
    assert sorted(m.target for m in claim.mutations) == sorted(f"file{i}" for i in range(8))
    assert len({m.id for m in claim.mutations}) == 8
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_mutate_warns_of_a_kind_no_check_type_covers_and_strict_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.json"
    run(["new", str(path), "--task-id", "t", "--outcome", "o"])
    capsys.readouterr()
    assert run(["mutate", str(path), "--kind", "file_wrtie", "--target", "a.py"]) == 0
    warning = capsys.readouterr().err
    assert warning.startswith("claim: warning: --kind 'file_wrtie': the claim's policy maps it")
    assert "file_write" in warning
    before = path.read_bytes()
    strict = ["mutate", str(path), "--kind", "bogus", "--target", "b.py", "--strict"]
    assert run(strict) == 4
    assert capsys.readouterr().err.startswith("claim: --kind 'bogus': the claim's policy maps")
    assert path.read_bytes() == before
    # A kind the policy maps is recorded without a word on stderr.
    assert run(["mutate", str(path), "--kind", "deploy", "--target", "web", "--strict"]) == 0
    assert capsys.readouterr().err == ""
