"""How commands print: one JSON object with ``--json`` (and a JSON error on stderr), colour,
``-q`` and ``-v``. Every command runs for real: real files, a real git repository, a real
SQLite store, a real HTTP server on loopback, the real sandboxed test run."""

from __future__ import annotations

import http.server
import json
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run
from completion_claim.cli._output import use_color

from ..builders import claim_doc, evidence, mutation
from ..service._dashboard import ledger_with_entries

Json = Any
EXAMPLES = Path(__file__).parents[2] / "examples"
CLAIM = Path(sys.executable).parent / "claim"
DECIDE = "2026-08-27T18:04:10Z"


def json_out(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> Json:
    """Runs ``claim`` with ``args``; it must exit ``code`` and print exactly one JSON object."""
    assert run(list(args)) == code
    captured = capsys.readouterr()
    return json.loads(captured.out)


def json_error(capsys: pytest.CaptureFixture[str], *args: str) -> Json:
    code = run(list(args))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    error = json.loads(captured.err)
    assert error["exit_code"] == code
    assert set(error) == {"error", "exit_code"}
    return error


def write(path: Path, doc: Json) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def claim_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    path = str(tmp_path / "c.json")
    assert run(["new", path, "--task-id", "t-1", "--outcome", "done"]) == 0
    capsys.readouterr()
    return path


# --- --json: one object per command -------------------------------------------------------------


def test_new_and_mutate_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "c.json")
    assert json_out(capsys, "new", path, "--task-id", "t-1", "--outcome", "o", "--json") == {
        "path": path,
        "task_id": "t-1",
    }
    at = "2026-08-27T18:00:00Z"
    printed = json_out(
        capsys, "mutate", path, "--kind", "deploy", "--target", "web", "--at", at, "--json"
    )
    assert printed == {
        "path": path,
        "mutation": {"id": "m1", "kind": "deploy", "target": "web", "at": at},
    }
    assert json.loads(Path(path).read_text())["mutations"] == [printed["mutation"]]


def test_capture_git_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    (repo / "a.py").write_text("x = 2\n")
    path = str(tmp_path / "c.json")
    run(["new", path, "--task-id", "t", "--outcome", "o"])
    capsys.readouterr()
    printed = json_out(capsys, "capture-git", path, "--repo", str(repo), "--json")
    (recorded,) = printed["mutations"]
    assert printed["path"] == path
    assert (recorded["id"], recorded["kind"], recorded["target"]) == ("m1", "file_write", "a.py")
    assert recorded["digest"].startswith("sha256:")
    again = json_out(capsys, "capture-git", path, "--repo", str(repo), "--json")
    assert again == {"path": path, "mutations": []}


def sqlite_store(tmp_path: Path) -> str:
    database = tmp_path / "shop.db"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, zip TEXT)")
        conn.execute("INSERT INTO accounts VALUES (4471, '94107')")
    conn.close()
    return f"sqlite:///{database}"


def test_observe_readback_json(
    tmp_path: Path, claim_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["mutate", claim_path, "--kind", "state_write", "--target", "accounts/4471"])
    capsys.readouterr()
    lookup = [sqlite_store(tmp_path), "--table", "accounts", "--key", "id=4471"]
    printed = json_out(
        capsys, "observe", "readback", claim_path, *lookup, "--expect", "zip=10001", "--json"
    )
    assert set(printed) == {"path", "recorded", "evidence", "as_expected"}
    assert (printed["path"], printed["recorded"], printed["as_expected"]) == (
        claim_path,
        True,
        False,
    )
    assert json.loads(Path(claim_path).read_text())["evidence"] == [printed["evidence"]]
    # --print writes nothing and prints the one object alone.
    printed = json_out(
        capsys,
        "observe",
        "readback",
        claim_path,
        *lookup,
        "--expect",
        "zip=94107",
        "--print",
        "--json",
    )
    assert (printed["recorded"], printed["as_expected"], printed["evidence"]["id"]) == (
        False,
        True,
        "e2",
    )
    assert len(json.loads(Path(claim_path).read_text())["evidence"]) == 1


class _Build(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"build": "42"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Build)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/version"
    server.shutdown()
    server.server_close()


def test_observe_endpoint_json(
    site: str, claim_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["mutate", claim_path, "--kind", "deploy", "--target", "web"])
    capsys.readouterr()
    printed = json_out(
        capsys, "observe", "endpoint", claim_path, site, "--expect-json", "/build=42", "--json"
    )
    assert (printed["recorded"], printed["as_expected"]) == (True, True)
    assert printed["evidence"]["check_type"] == "endpoint_health"
    assert printed["evidence"]["covers"] == ["m1"]


def test_observe_test_run_json(
    tmp_path: Path, claim_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    printed = json_out(
        capsys,
        "observe",
        "test-run",
        claim_path,
        "--cwd",
        str(project),
        "--json",
        "--",
        "python",
        "-c",
        "print('--json')",
    )
    assert (printed["recorded"], printed["as_expected"]) == (True, True)
    assert printed["evidence"]["observed_value"] == {"exit_code": 0}


def test_keygen_pubkey_and_check_verdict_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = str(tmp_path / "gate.key")
    made = json_out(capsys, "keygen", "--out", key, "--json")
    assert made["path"] == key
    assert made["public_key"].startswith("ed25519:")
    assert json_out(capsys, "pubkey", key, "--json") == {
        "public_key": made["public_key"],
        "keyid": made["keyid"],
    }
    claim = write(tmp_path / "claim.json", claim_doc())
    signed = str(tmp_path / "verdict.json")
    assert (
        run(["verify", claim, "--at", "2026-08-27T18:00:20Z", "--sign-key", key, "--out", signed])
        == 0
    )
    capsys.readouterr()
    checked = json_out(
        capsys, "check-verdict", signed, "--public-key", made["public_key"], "--json", code=1
    )
    assert checked == {
        "valid": True,
        "accepted": False,
        "reason": "independence was not proven",
        "verdict": {
            "state": "verified",
            "independence": "declared",
            "decided_at": "2026-08-27T18:00:20Z",
            "policy_id": "completion-claim/builtin",
        },
        "keyid": made["keyid"],
    }
    document = json.loads(Path(signed).read_text())
    document["claimed_outcome"] = "something else"
    write(Path(signed), document)
    checked = json_out(
        capsys, "check-verdict", signed, "--public-key", made["public_key"], "--json", code=1
    )
    assert (checked["valid"], checked["accepted"]) == (False, False)
    assert checked["reason"].startswith("the claim is not the one signed")


def test_report_init_hooks_and_token_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ledger_with_entries(tmp_path)
    html = str(tmp_path / "stats.html")
    assert json_out(capsys, "report", "--ledger", url, "--html", html, "--json") == {"path": html}

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    made = json_out(capsys, "init", "--repo", str(repo), "--json")
    assert made == {"path": str(repo / "claim.toml"), "found": []}

    # The hooks name the claim executable, so they are installed by running it, as a user does.
    def hooks(*args: str) -> Json:
        done = subprocess.run(
            [str(CLAIM), "hooks", *args, "--harness", "claude-code", "--json"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    installed = hooks("install")
    assert installed == {
        "path": str(repo / ".claude" / "settings.json"),
        "harness": "claude-code",
        "installed": True,
        "trusted": [],  # Claude Code asks no trust step of a project's hooks
        "missing": [],
    }
    assert hooks("install")["installed"] is False
    assert hooks("uninstall")["removed"] > 0

    tokens = str(tmp_path / "tokens.jsonl")
    added = json_out(capsys, "token", "add", "ci", "--tokens", tokens, "--json")
    assert (added["name"], added["path"]) == ("ci", tokens)
    assert added["token"] not in Path(tokens).read_text()


# --- --json: errors are one JSON object on stderr -----------------------------------------------


def test_errors_with_json_are_one_object_on_stderr(
    tmp_path: Path, claim_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    error = json_error(capsys, "new", claim_path, "--task-id", "t", "--outcome", "o", "--json")
    assert error["exit_code"] == 4
    assert "already exists" in error["error"]
    broken = write(tmp_path / "bad.json", claim_doc(evidence_items=[evidence(at="yesterday")]))
    error = json_error(capsys, "verify", broken, "--json")
    assert error["exit_code"] == 3
    assert error["error"].startswith(f"{broken}: evidence[0].at")
    assert (
        json_error(capsys, "mutate", claim_path, "--kind", "", "--target", "x", "--json")[
            "exit_code"
        ]
        == 4
    )
    # Found before the command reads its options: still JSON.
    assert json_error(capsys, "show", claim_path, "--bogus", "--json")["exit_code"] == 4


def test_errors_without_json_stay_one_line_of_prose(
    claim_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["mutate", claim_path, "--kind", "", "--target", "x"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("claim: --kind: ")
    assert err.count("\n") == 1


def test_a_json_after_double_dash_belongs_to_the_command_run(
    tmp_path: Path, claim_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``observe test-run ... -- CMD --json``: the flag is CMD's, so errors stay prose."""
    missing = str(tmp_path / "no-such-dir")
    code = run(["observe", "test-run", claim_path, "--cwd", missing, "--", "tool", "--json"])
    assert code != 0
    assert capsys.readouterr().err.startswith("claim: ")


# --- colour, -q, -v -----------------------------------------------------------------------------


def test_use_color_follows_the_choice_the_terminal_and_no_color() -> None:
    assert use_color("auto", True, {}) is True
    assert use_color("auto", False, {}) is False
    assert use_color("auto", True, {"NO_COLOR": "1"}) is False
    assert use_color("auto", True, {"NO_COLOR": ""}) is True  # empty: not set (no-color.org)
    assert use_color("always", False, {"NO_COLOR": "1"}) is True
    assert use_color("never", True, {}) is False


@pytest.mark.parametrize(
    ("example", "code", "ansi"),
    [
        ("unverified.claim.json", 1, "\x1b[33m\x1b[1mUNVERIFIED\x1b[0m"),
        ("refuted.claim.json", 2, "\x1b[31m\x1b[1mREFUTED\x1b[0m"),
    ],
)
def test_color_always_paints_the_verdict_and_never_is_the_plain_report(
    example: str, code: int, ansi: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(EXAMPLES / example)
    assert run(["verify", path, "--at", DECIDE]) == code
    plain = capsys.readouterr().out
    assert "\x1b[" not in plain
    assert run(["--color", "never", "verify", path, "--at", DECIDE]) == code
    assert capsys.readouterr().out == plain
    assert run(["--color", "always", "verify", path, "--at", DECIDE]) == code
    painted = capsys.readouterr().out
    assert painted.startswith(ansi)
    assert painted[len(ansi) :] == plain[plain.index(" ") :]


def test_verified_is_green(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "c.json", claim_doc())
    assert run(["--color", "always", "verify", path, "--at", "2026-08-27T18:00:20Z"]) == 0
    assert capsys.readouterr().out.startswith("\x1b[32m\x1b[1mVERIFIED\x1b[0m")


def test_quiet_verify_prints_the_verdict_line_alone(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "unverified.claim.json")
    assert run(["-q", "verify", path, "--at", DECIDE]) == 1
    assert capsys.readouterr().out == f"UNVERIFIED  {path}\n"


def test_quiet_commands_print_nothing_on_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "c.json")
    assert run(["-q", "new", path, "--task-id", "t", "--outcome", "o"]) == 0
    assert run(["--quiet", "mutate", path, "--kind", "deploy", "--target", "web"]) == 0
    assert capsys.readouterr() == ("", "")
    assert run(["-q", "new", path, "--task-id", "t", "--outcome", "o"]) == 4
    assert "already exists" in capsys.readouterr().err


def test_verbose_verify_adds_every_rule_per_item(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "unverified.claim.json")
    assert run(["verify", path, "--at", DECIDE]) == 1
    plain = capsys.readouterr().out
    assert run(["-v", "verify", path, "--at", DECIDE]) == 1
    verbose = capsys.readouterr().out
    assert verbose.startswith(plain + "\nRules\n")
    row = r"\| ci-run \(does not count\) +\| test_run, matches +\| independent +\| pass +\|"
    assert re.search(row, verbose)
    assert re.search(r"\| not superseded +\| fail +\| superseded by mutation m2", verbose)


def test_quiet_and_verbose_together_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["-q", "-v", "schema"]) == 4
    assert capsys.readouterr().err == "claim: -q and -v: choose one\n"


def test_plain_verify_output_is_unchanged_by_the_new_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report scripts and the README pin, byte for byte, when colour is off."""
    doc = claim_doc([mutation()], [evidence(id="e1")])
    path = write(tmp_path / "c.json", doc)
    assert run(["verify", path, "--at", "2026-08-27T18:00:20Z"]) == 0
    assert capsys.readouterr().out == (
        f"VERIFIED  {path}\n"
        "  task deploy-4471: Updated the billing address on account 4471.\n"
        "  policy completion-claim/builtin, independence declared, "
        "decided at 2026-08-27T18:00:20Z\n"
        "  Verified: 1 qualifying observation supports the claim, covering 1 mutation; "
        "the policy's requirements are met.\n"
        "\n"
        "Mutations\n"
        "  m1  state_write accounts/4471 at 2026-08-27T18:00:00Z\n"
        "      covered by e1 (state_readback)\n"
    )
