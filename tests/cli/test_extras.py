"""Without an extra, every command that needs it says in one line which extra to install (exit 4);
the core commands need none of them. Each case runs the real command in a new interpreter where
the extra's package cannot be imported (``tests/blocked.py``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from completion_claim._optional import DISTRIBUTIONS

from ..blocked import EVERY_OPTIONAL, missing_extra_line, run_without
from ..builders import claim_doc, evidence, mutation
from ..signing import CI, policy_doc

SERVE_ONLY = ("alembic", "fastapi", "jinja2", "sqlalchemy", "starlette", "uvicorn")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A claim, a signing key, a signed policy and a SQLite table, as the commands read them."""
    (tmp_path / "claim.json").write_text(
        json.dumps(claim_doc(mutations=[mutation()], evidence=[evidence()]))
    )
    (tmp_path / "ci.key").write_bytes(CI.pem())
    (tmp_path / "policy.json").write_text(json.dumps(policy_doc()))
    with sqlite3.connect(tmp_path / "app.db") as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, verified INTEGER)")
        db.execute("INSERT INTO users VALUES (1, 1)")
    db.close()
    return tmp_path


def assert_names_the_extra(
    folder: Path, blocked: tuple[str, ...], args: list[str], extra: str, starts: str
) -> None:
    result = run_without(blocked, args, folder)
    lines = result.err.splitlines()
    distribution = DISTRIBUTIONS[blocked[0]]
    assert lines == [f"claim: {starts} {missing_extra_line(extra, distribution)}"], result.err
    assert result.code == 4


SIGN_COMMANDS = {
    "keygen": ["keygen", "--out", "new.key"],
    "pubkey": ["pubkey", "ci.key"],
    "export": ["export", "claim.json", "--sign-key", "ci.key"],
    "check-verdict": ["check-verdict", "claim.json", "--public-key", CI.public.text],
    "verify --sign-key": ["verify", "claim.json", "--sign-key", "ci.key", "--out", "v.json"],
    "verify in signed mode": ["verify", "claim.json", "--policy", "policy.json"],
    "observe --sign-key": [
        "observe", "readback", "claim.json", "sqlite:///app.db", "--table", "users",
        "--key", "id=1", "--expect", "verified=1", "--sign-key", "ci.key",
    ],
}  # fmt: skip


@pytest.mark.parametrize("command", SIGN_COMMANDS)
def test_without_the_sign_extra_signing_commands_name_it(folder: Path, command: str) -> None:
    assert_names_the_extra(
        folder, ("cryptography",), SIGN_COMMANDS[command], "sign", "signing or checking signatures"
    )


OBSERVE_COMMANDS = {
    "endpoint": (
        ("httpx",),
        ["observe", "endpoint", "claim.json", "http://127.0.0.1:9/", "--expect-json", "/a=1"],
        "an HTTP observation",
    ),
    "gate --server": (
        ("httpx",),
        ["gate", "--server", "http://127.0.0.1:9", "--outcome", "done"],
        "talking to a claim serve",
    ),
    "ledger on a service": (
        ("httpx",),
        ["ledger", "verify", "http://127.0.0.1:9"],
        "talking to a claim serve",
    ),
}


@pytest.mark.parametrize("command", OBSERVE_COMMANDS)
def test_without_the_observe_extra_observers_name_it(folder: Path, command: str) -> None:
    blocked, args, starts = OBSERVE_COMMANDS[command]
    assert_names_the_extra(folder, blocked, args, "observe", starts)


SERVE_COMMANDS = {
    "serve": (["serve", "--port", "0"], "claim serve"),
    "ledger on a database": (["ledger", "verify", "ledger.sqlite"], "claim ledger on a database"),
    "report": (["report", "--ledger", "ledger.sqlite", "--html", "stats.html"], "claim report"),
}


@pytest.mark.parametrize("command", SERVE_COMMANDS)
def test_without_the_serve_extra_service_commands_name_it(folder: Path, command: str) -> None:
    args, starts = SERVE_COMMANDS[command]
    result = run_without(SERVE_ONLY, args, folder)
    (line,) = result.err.splitlines()
    assert line.startswith(f"claim: {starts} needs "), line
    assert line.endswith("which is not installed: pip install 'completion-claim[serve]'"), line
    assert result.code == 4


def test_the_core_commands_need_no_extra(folder: Path) -> None:
    """new, mutate, verify (declared mode), schema: click and the standard library only."""
    steps = [
        ["new", "fresh.json", "--task-id", "t-1", "--outcome", "done"],
        ["mutate", "fresh.json", "--kind", "file_write", "--target", "calc.py"],
        ["schema"],
    ]
    for args in steps:
        result = run_without(EVERY_OPTIONAL, args, folder)
        assert (result.code, result.err) == (0, ""), args
    verified = run_without(EVERY_OPTIONAL, ["verify", "claim.json", "--json"], folder)
    assert json.loads(verified.out)["state"] in ("verified", "unverified")
    assert verified.err == ""
