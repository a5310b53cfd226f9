"""Bearer tokens: stored hashed, one name each, checked against the file as it is now."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest

from completion_claim.service.tokens import (
    ScopeMissing,
    TokenFileError,
    TokenRejected,
    TokenStore,
    add_token,
    read_tokens,
    revoke_token,
)


def test_add_stores_only_the_hash_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    token = add_token(path, "ci-runner-1")
    assert len(token) >= 43
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert token not in text
    assert json.loads(text) == {
        "name": "ci-runner-1",
        "sha256": hashlib.sha256(token.encode()).hexdigest(),
        "scopes": ["gate"],
    }
    second = add_token(path, "agent-7")
    assert second != token
    assert [entry.name for entry in read_tokens(path)] == ["ci-runner-1", "agent-7"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_add_keeps_a_file_made_world_readable_private(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    add_token(path, "a")
    path.chmod(0o644)
    add_token(path, "b")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_names_are_unique_and_plain(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    add_token(path, "ci")
    with pytest.raises(TokenFileError, match=r"tokens.jsonl: the name 'ci' already has a token"):
        add_token(path, "ci")
    for bad in ("", "has space", "-leading", "x" * 65, "new\nline"):
        with pytest.raises(TokenFileError, match="is not 1 to 64 letters"):
            add_token(path, bad)
    assert [entry.name for entry in read_tokens(path)] == ["ci"]


def test_add_appends_after_a_last_line_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    add_token(path, "a")
    path.write_text(path.read_text().rstrip("\n"))
    add_token(path, "b")
    assert [entry.name for entry in read_tokens(path)] == ["a", "b"]


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (['{"name": "a", "sha256": "' + "0" * 64 + '"}', "{oops"], ":2: not JSON: "),
        (['{"name": "a"}'], ':1: expected {"name": "...", "sha256": "<64 hex digits>"}'),
        (['{"name": "a", "sha256": "' + "0" * 64 + '", "token": "x"}'], ":1: expected {"),
        (['{"name": 7, "sha256": "' + "0" * 64 + '"}'], ":1: name: expected a string"),
        (['{"name": "a", "sha256": "' + "G" * 64 + '"}'], ":1: sha256: expected 64 lowercase"),
        (['{"name": "a b", "sha256": "' + "0" * 64 + '"}'], ":1: token name 'a b' is not"),
        (
            [
                '{"name": "a", "sha256": "' + "0" * 64 + '"}',
                "",
                '{"name": "a", "sha256": "' + "1" * 64 + '"}',
            ],
            ":3: the name 'a' appears twice",
        ),
        (['{"name": "a", "name": "b", "sha256": "x"}'], ":1: not JSON: duplicate key 'name'"),
        (["[1]"], ":1: expected {"),
        (
            ['{"name": "a", "sha256": "' + "0" * 64 + '", "scopes": ["strat"]}'],
            ":1: scopes: unknown scope 'strat' (expected gate, start, post)",
        ),
        (['{"name": "a", "sha256": "' + "0" * 64 + '", "scopes": []}'], ":1: scopes: empty"),
        (
            ['{"name": "a", "sha256": "' + "0" * 64 + '", "scopes": "start"}'],
            ":1: scopes: expected a list of strings",
        ),
    ],
)
def test_a_bad_file_names_file_and_line(tmp_path: Path, lines: list[str], problem: str) -> None:
    path = tmp_path / "tokens.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TokenFileError) as caught:
        read_tokens(path)
    assert str(caught.value).startswith(f"{path}{problem}")
    with pytest.raises(TokenFileError):
        add_token(path, "new")  # never appends to a broken file


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TokenFileError, match=r"token file .*missing: cannot read"):
        read_tokens(tmp_path / "missing")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(TokenFileError, match="not UTF-8"):
        read_tokens(binary)
    with pytest.raises(TokenFileError, match="No such file"):
        TokenStore(tmp_path / "missing")


def test_the_store_names_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    first = add_token(path, "ci")
    second = add_token(path, "agent")
    store = TokenStore(path)
    assert store.authenticate(f"Bearer {first}") == "ci"
    assert store.authenticate(f"bearer   {second}  ") == "agent"
    with pytest.raises(TokenRejected, match="unknown bearer token"):
        store.authenticate(f"Bearer {first}x")
    with pytest.raises(TokenRejected, match="missing bearer token"):
        store.authenticate(None)
    with pytest.raises(TokenRejected, match="malformed"):
        store.authenticate(first)


def test_the_store_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    first = add_token(path, "ci")
    store = TokenStore(path)
    later = add_token(path, "late")
    assert store.authenticate(f"Bearer {later}") == "late"
    path.write_text(path.read_text().splitlines()[1] + "\n")  # the 'ci' line removed
    with pytest.raises(TokenRejected):
        store.authenticate(f"Bearer {first}")
    assert store.authenticate(f"Bearer {later}") == "late"
    path.write_text("{broken\n")
    for _ in range(2):  # a broken file stays an error until fixed, never an empty list
        with pytest.raises(TokenFileError, match=":1: not JSON"):
            store.authenticate(f"Bearer {later}")


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_token_file_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    """Whoever can write the file can give themselves a token under any name."""
    path = tmp_path / "tokens.jsonl"
    token = add_token(path, "ci")
    store = TokenStore(path)
    path.chmod(mode)
    with pytest.raises(
        TokenFileError, match=f"writable by others than its owner \\(mode {mode:o}\\)"
    ):
        store.authenticate(f"Bearer {token}")
    with pytest.raises(TokenFileError, match="writable by others"):
        TokenStore(path)
    path.chmod(0o600)
    assert store.authenticate(f"Bearer {token}") == "ci"


def test_a_token_may_do_what_its_scopes_say(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    hook = add_token(path, "agent-1")
    operator = add_token(path, "orchestrator", ["start"])
    poster = add_token(path, "ci", ["gate", "post"])
    store = TokenStore(path)
    assert [entry.scopes for entry in read_tokens(path)] == [
        ("gate",),
        ("start",),
        ("gate", "post"),
    ]
    assert store.authorize(f"Bearer {hook}", "gate") == "agent-1"
    assert store.authorize(f"Bearer {poster}", "post") == "ci"
    assert store.authorize(f"Bearer {operator}", "start") == "orchestrator"
    with pytest.raises(ScopeMissing) as refused:
        store.authorize(f"Bearer {hook}", "start")
    assert refused.value.scope == "start"
    assert str(refused.value).startswith("token 'agent-1' lacks the scope 'start': ")
    with pytest.raises(ScopeMissing, match="lacks the scope 'gate'"):
        store.authorize(f"Bearer {operator}", "gate")
    with pytest.raises(TokenRejected):  # unknown first: a scope is never named to a stranger
        store.authorize(f"Bearer {hook}x", "start")
    with pytest.raises(TokenFileError, match="unknown scope 'admin'"):
        add_token(path, "x", ["admin"])


def test_attack_54_a_token_from_a_file_written_before_scopes_cannot_start(
    tmp_path: Path,
) -> None:
    """A token file written before scopes holds the agents' hook tokens: read as allowing
    everything, each of them could start (and so restart) its own session, or post its own
    claims (attack 156). A line without ``scopes`` gets the default: ``gate`` alone."""
    path = tmp_path / "tokens.jsonl"
    token = "an-old-token-given-to-an-agents-hook-0123456789"
    digest = hashlib.sha256(token.encode()).hexdigest()
    path.write_text(json.dumps({"name": "agent-1", "sha256": digest}) + "\n")
    path.chmod(0o600)
    store = TokenStore(path)
    assert store.authorize(f"Bearer {token}", "gate") == "agent-1"
    with pytest.raises(ScopeMissing, match="lacks the scope 'start'"):
        store.authorize(f"Bearer {token}", "start")


def test_attack_156_a_token_from_before_scopes_cannot_post_and_is_told_how(
    tmp_path: Path,
) -> None:
    """An operator whose CI posted claims with a line written before scopes gets a refusal
    that names the missing scope and how to give it, in one line; given by name, it posts."""
    path = tmp_path / "tokens.jsonl"
    token = "an-old-token-a-ci-runner-posted-claims-with-0123456789"
    digest = hashlib.sha256(token.encode()).hexdigest()
    path.write_text(json.dumps({"name": "ci", "sha256": digest}) + "\n")
    path.chmod(0o600)
    with pytest.raises(ScopeMissing) as refused:
        TokenStore(path).authorize(f"Bearer {token}", "post")
    assert refused.value.scope == "post"
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("token 'ci' lacks the scope 'post': POST /v1/claims records")
    assert "claim token add NAME --scope post" in message
    assert "a line without scopes has gate only" in message
    given = {"name": "ci", "sha256": digest, "scopes": ["gate", "post"]}
    path.write_text(json.dumps(given) + "\n")
    assert TokenStore(path).authorize(f"Bearer {token}", "post") == "ci"


def test_revoke_removes_one_name_and_the_store_follows(tmp_path: Path) -> None:
    path = tmp_path / "tokens.jsonl"
    first = add_token(path, "ci", ["post"])
    second = add_token(path, "agent", ["gate"])
    store = TokenStore(path)
    assert store.authorize(f"Bearer {first}", "post") == "ci"
    revoke_token(path, "ci")
    assert [(e.name, e.scopes) for e in read_tokens(path)] == [("agent", ("gate",))]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(TokenRejected, match="unknown bearer token"):  # no restart needed
        store.authorize(f"Bearer {first}", "post")
    assert store.authorize(f"Bearer {second}", "gate") == "agent"
    with pytest.raises(TokenFileError, match="no token named 'ci'"):
        revoke_token(path, "ci")
    path.write_text(path.read_text() + "{broken\n")
    with pytest.raises(TokenFileError, match=":2: not JSON"):
        revoke_token(path, "agent")  # never rewrites a broken file
