"""``claim serve`` as a real process on a real port or Unix socket, and ``claim token``."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from completion_claim.cli import EXIT_USAGE, run
from completion_claim.cli.serve_cmd import is_loopback
from completion_claim.timefmt import format_time
from completion_claim.trust.keys import SigningKey, write_private_key
from tests.builders import claim_doc, evidence, mutation
from tests.fixtures.gate_service import false_done_for_a_tokenless_service
from tests.fixtures.serve import CLAIM, served

JSON = {"Content-Type": "application/json"}


def fresh_claim() -> dict[str, Any]:
    """A claim whose read-back is half a minute old: verified under the built-in policy."""
    now = datetime.now(UTC)
    return claim_doc(
        [mutation(at=format_time(now - timedelta(seconds=60)))],
        [evidence(at=format_time(now - timedelta(seconds=30)))],
    )


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "service-key.pem"
    write_private_key(str(path), SigningKey.generate())
    return path


def ledger_in(folder: Path) -> str:
    return f"sqlite:///{folder / 'ledger.sqlite'}"


def test_serve_on_a_free_port_verifies_and_records(tmp_path: Path, key: Path) -> None:
    args = ("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0", "--access-log")
    with served(*args) as service:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", service.url)
        assert not service.url.endswith(":0")
        assert service.ledger == ledger_in(tmp_path)
        with httpx.Client(base_url=service.url, timeout=10) as client:
            answer = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
            assert answer.status_code == 201, answer.text
            assert answer.json()["url"] == f"{service.url}/claims/0"
            assert client.get("/v1/claims/0").json()["submitted_by"] == "anonymous"
            # The proof waits for the entry's integration (within the merge delay).
            assert client.get("/v1/proof/0").json()["tree_head"]["size"] == 1
            assert client.get("/v1/tree-head").json()["size"] == 1
            assert client.get("/openapi.json").status_code == 200
        code, err = service.stop()
    assert code == 0
    assert "Traceback" not in err
    assert service.rest_of_stdout == ""  # the ready line alone: the access log is on stderr
    assert re.search(r"^INFO: +POST /v1/claims 201 \d+\.\dms$", err, re.MULTILINE), err


def test_concurrent_posts_each_get_one_entry(tmp_path: Path, key: Path) -> None:
    clients, each = 4, 10
    with served("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0") as service:

        def post_some() -> list[int]:
            with httpx.Client(base_url=service.url, timeout=30) as client:
                answers = [
                    client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
                    for _ in range(each)
                ]
            assert all(answer.status_code == 201 for answer in answers)
            return [answer.json()["index"] for answer in answers]

        with ThreadPoolExecutor(clients) as pool:
            indexes = [
                i for batch in pool.map(lambda _: post_some(), range(clients)) for i in batch
            ]
        assert sorted(indexes) == list(range(clients * each))
        with httpx.Client(base_url=service.url, timeout=10) as client:
            last = clients * each - 1
            assert client.get(f"/v1/proof/{last}").json()["tree_head"]["size"] == clients * each
        assert service.stop()[0] == 0


def test_sigint_is_a_clean_stop_too(tmp_path: Path, key: Path) -> None:
    with served("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0") as service:
        code, err = service.stop(signal.SIGINT)
    assert code == 0
    assert "Traceback" not in err


def test_serve_on_a_unix_socket(tmp_path: Path, key: Path) -> None:
    path = tmp_path / "claim.sock"
    with served(
        "--ledger", ledger_in(tmp_path), "--key", str(key), "--socket", str(path)
    ) as service:
        assert service.url == f"unix://{path}"
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.stat().st_mode) == 0o660
        transport = httpx.HTTPTransport(uds=str(path))
        with httpx.Client(transport=transport, base_url="http://claim", timeout=10) as client:
            answer = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
            assert answer.status_code == 201, answer.text
            assert client.get("/v1/claims/0").status_code == 200
        code, _ = service.stop()
    assert code == 0
    assert not path.exists()


def test_a_leftover_socket_is_replaced_but_not_a_live_one_nor_a_file(
    tmp_path: Path, key: Path
) -> None:
    path = tmp_path / "claim.sock"
    with socket.socket(socket.AF_UNIX) as stale:
        stale.bind(str(path))  # as a service killed without cleaning up leaves it
    args = ["serve", "--ledger", ledger_in(tmp_path), "--key", str(key), "--socket", str(path)]
    with served(*args[1:]):
        assert run(args) == EXIT_USAGE  # a live service's socket is never taken over
        assert stat.S_ISSOCK(path.stat().st_mode)
    regular = tmp_path / "notes.txt"
    regular.write_text("keep me")
    args[-1] = str(regular)
    assert run(args) == EXIT_USAGE
    assert regular.read_text() == "keep me"


def test_tokens_guard_posting(tmp_path: Path, key: Path) -> None:
    tokens = tmp_path / "tokens.jsonl"
    added = subprocess.run(
        [str(CLAIM), "token", "add", "ci-runner", "--tokens", str(tokens), "--scope", "post"],
        capture_output=True,
        text=True,
        check=True,
    )
    token = added.stdout.strip()
    assert token
    assert token not in tokens.read_text()
    assert "shown only this once" in added.stderr
    args = ("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0")
    with served(*args, "--tokens", str(tokens)) as service:
        with httpx.Client(base_url=service.url, timeout=10) as client:
            body = json.dumps(fresh_claim())
            refused = client.post("/v1/claims", content=body, headers=JSON)
            assert refused.status_code == 401
            assert refused.json() == {
                "error": "missing bearer token: send 'Authorization: Bearer <token>'"
            }
            allowed = client.post(
                "/v1/claims", content=body, headers={**JSON, "Authorization": f"Bearer {token}"}
            )
            assert allowed.status_code == 201
            assert client.get("/v1/claims/0").json()["submitted_by"] == "ci-runner"
        assert service.stop()[0] == 0


def test_the_operator_policy_decides(tmp_path: Path, key: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"id": "ops", "requires": ["endpoint_health"], "max_age_s": 300}))
    args = ("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0")
    with served(*args, "--policy", str(policy)) as service:
        with httpx.Client(base_url=service.url, timeout=10) as client:
            answer = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
            assert answer.json()["verdict"]["state"] == "unverified"
            assert answer.json()["verdict"]["policy_id"] == "ops"
        assert service.stop()[0] == 0


def test_with_no_ledger_it_makes_its_own_under_xdg_data_home(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"XDG_DATA_HOME": str(data)}
    folder = data / "completion-claim"
    with served("--port", "0", env=env) as service:
        assert service.ledger == f"sqlite:///{folder / 'ledger.sqlite'}"
        with httpx.Client(base_url=service.url, timeout=10) as client:
            assert (
                client.post(
                    "/v1/claims", content=json.dumps(fresh_claim()), headers=JSON
                ).status_code
                == 201
            )
            first_head = client.get("/v1/tree-head").json()
        assert service.stop()[0] == 0
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    key_file = folder / "service-key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    pem = key_file.read_bytes()
    with served("--port", "0", env=env) as service:  # the second start keeps its key and log
        with httpx.Client(base_url=service.url, timeout=10) as client:
            head = client.get("/v1/tree-head").json()
        assert service.stop()[0] == 0
    assert key_file.read_bytes() == pem
    assert head["log_key"] == first_head["log_key"]
    assert head["size"] == 1


# --- refusals: one line, exit 4, nothing served ------------------------------------------------


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert run(list(args)) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    return err


def test_no_network_listening_without_tokens(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(
        capsys, "serve", "--host", "0.0.0.0", "--ledger", ledger_in(tmp_path), "--key", str(key)
    )
    assert err == (
        "claim: --host 0.0.0.0: refusing to accept claims from the network without --tokens FILE\n"
    )


def test_a_ledger_url_needs_its_key(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(capsys, "serve", "--ledger", ledger_in(tmp_path))
    assert "--ledger needs --key FILE" in err
    err = refused(capsys, "serve", "--ledger", ledger_in(tmp_path), "--key", str(tmp_path / "no"))
    assert "cannot read key" in err


def test_the_gate_needs_both_its_root_and_its_config(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "claim.toml"
    config.write_text('[policy]\nid = "ops"\n')
    base = ("serve", "--ledger", ledger_in(tmp_path), "--key", str(key))
    for args in (("--observe-root", str(tmp_path)), ("--gate-config", str(config))):
        err = refused(capsys, *base, *args)
        assert "--observe-root and --gate-config go together" in err


def test_a_gate_config_the_gate_could_not_run_stops_the_start(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    observed = tmp_path / "agents"
    observed.mkdir()
    config = tmp_path / "claim.toml"
    base = ("serve", "--ledger", ledger_in(tmp_path), "--key", str(key), "--observe-root")
    config.write_text('[gate]\nmax_blocks = "three"\n')
    err = refused(capsys, *base, str(observed), "--gate-config", str(config))
    assert err.startswith("claim: claim.toml:2: ")
    config.write_text(f'[gate]\nruns_dir = "{observed / "runs"}"\n')
    err = refused(capsys, *base, str(observed), "--gate-config", str(config))
    assert "runs" in err
    assert "observe root" in err


def test_the_gate_steps_are_logged_on_stderr(tmp_path: Path) -> None:
    repo, args = false_done_for_a_tokenless_service(tmp_path)
    with served(*args) as service:
        answer = httpx.post(
            f"{service.url}/v1/gate",
            json={"repo": str(repo), "outcome": "fixed add()"},
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["verdict"]["state"] == "refuted"
        code, err = service.stop()
    assert code == 0
    assert f"gate {repo}: verdict: refuted" in err
    assert service.rest_of_stdout == ""


def test_a_port_in_use_is_one_line(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        err = refused(
            capsys, "serve", "--ledger", ledger_in(tmp_path), "--key", str(key), "--port", port
        )
    assert f"cannot listen on 127.0.0.1:{port}" in err


def test_a_broken_token_file_stops_the_start(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens = tmp_path / "tokens.jsonl"
    tokens.write_text("not json\n")
    err = refused(
        capsys, "serve", "--ledger", ledger_in(tmp_path), "--key", str(key), "--tokens", str(tokens)
    )
    assert f"{tokens}:1: not JSON" in err


def test_token_add_refuses_a_taken_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = tmp_path / "tokens.jsonl"
    assert run(["token", "add", "ci", "--tokens", str(tokens)]) == 0
    capsys.readouterr()
    err = refused(capsys, "token", "add", "ci", "--tokens", str(tokens))
    assert "the name 'ci' already has a token" in err


def test_token_list_and_revoke_take_effect_on_a_running_service(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens = tmp_path / "tokens.jsonl"

    def claim_token(*args: str) -> str:
        done = subprocess.run([str(CLAIM), "token", *args, "--tokens", str(tokens)],
                              capture_output=True, text=True, check=True)  # fmt: skip
        return done.stdout

    ci = claim_token("add", "ci", "--scope", "post").strip()
    claim_token("add", "orchestrator", "--scope", "start", "--scope", "gate")
    assert claim_token("list") == "ci\tpost\norchestrator\tgate,start\n"
    listed = json.loads(claim_token("list", "--json"))
    assert listed["tokens"] == [
        {"name": "ci", "scopes": ["post"]},
        {"name": "orchestrator", "scopes": ["gate", "start"]},
    ]
    digests = [json.loads(line)["sha256"] for line in tokens.read_text().splitlines()]
    assert not any(digest in claim_token("list") for digest in digests)

    args = ("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0")
    with served(*args, "--tokens", str(tokens)) as service:
        with httpx.Client(base_url=service.url, timeout=10) as client:
            body = json.dumps(fresh_claim())
            as_ci = {**JSON, "Authorization": f"Bearer {ci}"}
            assert client.post("/v1/claims", content=body, headers=as_ci).status_code == 201
            assert "revoked token 'ci'" in claim_token("revoke", "ci")
            refused = client.post("/v1/claims", content=body, headers=as_ci)
            assert refused.status_code == 401  # the service reread the file: no restart
        assert service.stop()[0] == 0
    assert claim_token("list") == "orchestrator\tgate,start\n"
    err = refused_line(capsys, "token", "revoke", "ci", "--tokens", str(tokens))
    assert f"{tokens}: no token named 'ci'" in err


def refused_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert run(list(args)) == EXIT_USAGE
    return capsys.readouterr().err


def test_a_token_without_the_post_scope_cannot_post(tmp_path: Path, key: Path) -> None:
    tokens = tmp_path / "tokens.jsonl"
    added = subprocess.run(
        [str(CLAIM), "token", "add", "gate-only", "--scope", "gate", "--tokens", str(tokens)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    args = ("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0")
    with served(*args, "--tokens", str(tokens)) as service:
        with httpx.Client(base_url=service.url, timeout=10) as client:
            headers = {**JSON, "Authorization": f"Bearer {added.stdout.strip()}"}
            answer = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=headers)
            assert answer.status_code == 403
            assert answer.json()["error"].startswith("token 'gate-only' lacks the scope 'post'")
            assert 'error="insufficient_scope", scope="post"' in answer.headers["www-authenticate"]
            assert client.get("/v1/tree-head").json()["size"] == 0
        assert service.stop()[0] == 0


def test_loopback() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("localhost")
    assert is_loopback("::1")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("no-such-host.invalid")


# --- the key without --ledger (issue 21, defect 2) ---------------------------------------------


def test_a_key_without_a_ledger_signs_the_default_ledger(tmp_path: Path) -> None:
    signing = SigningKey.generate()
    key_file = tmp_path / "operator-key.pem"
    write_private_key(str(key_file), signing)
    data = tmp_path / "data"
    with served("--key", str(key_file), "--port", "0", env={"XDG_DATA_HOME": str(data)}) as service:
        with httpx.Client(base_url=service.url, timeout=10) as client:
            assert client.get("/v1/tree-head").json()["log_key"] == signing.public.text
        assert service.stop()[0] == 0
    assert not (data / "completion-claim" / "service-key.pem").exists()  # none made beside it
    other = tmp_path / "other-key.pem"
    write_private_key(str(other), SigningKey.generate())
    done = subprocess.run(
        [str(CLAIM), "serve", "--key", str(other), "--port", "0"],
        capture_output=True, text=True, timeout=30, check=False,
        env={**os.environ, "XDG_DATA_HOME": str(data)},
    )  # fmt: skip
    assert done.returncode != 0  # a ledger is signed by one key only
    assert done.stderr.count("\n") == 1
    assert f"signed by {signing.public.text}, not by the key given" in done.stderr


def test_a_missing_key_without_a_ledger_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-key.pem"
    done = subprocess.run(
        [str(CLAIM), "serve", "--key", str(missing), "--port", "0"],
        capture_output=True, text=True, timeout=30, check=False,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")},
    )  # fmt: skip
    assert done.returncode == EXIT_USAGE
    assert done.stdout == ""  # nothing served
    assert done.stderr.count("\n") == 1
    assert "cannot read key" in done.stderr
    assert str(missing) in done.stderr


# --- logs (issue 21, defect 8) -----------------------------------------------------------------


def post_one(url: str) -> None:
    answer = httpx.post(f"{url}/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
    assert answer.status_code == 201, answer.text


def test_no_line_per_request_unless_asked(tmp_path: Path, key: Path) -> None:
    with served("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0") as service:
        post_one(service.url)
        code, err = service.stop()
    assert code == 0
    assert "/v1/claims" not in err
    assert "Started server process" in err  # the default level, info, keeps the start


def test_the_log_level_drops_what_is_below_it(tmp_path: Path, key: Path) -> None:
    args = ("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0")
    with served(*args, "--log-level", "warning") as service:
        post_one(service.url)
        code, err = service.stop()
    assert code == 0
    assert err == ""


def test_json_logs_with_the_access_log(tmp_path: Path, key: Path) -> None:
    args = ("--ledger", ledger_in(tmp_path), "--key", str(key), "--port", "0")
    with served(*args, "--access-log", "--log-format", "json") as service:
        post_one(service.url)
        assert httpx.get(f"{service.url}/v1/claims/9").status_code == 404
        code, err = service.stop()
    assert code == 0
    lines = [json.loads(line) for line in err.splitlines()]
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys()
        assert datetime.fromisoformat(line["time"]).tzinfo is not None
    access = [line for line in lines if "method" in line]
    assert [(a["method"], a["path"], a["status"]) for a in access] == [
        ("POST", "/v1/claims", 201),
        ("GET", "/v1/claims/9", 404),
    ]
    assert all(isinstance(a["duration_ms"], float) and a["duration_ms"] >= 0 for a in access)
    assert any(line["message"].startswith("Started server process") for line in lines)
    assert service.rest_of_stdout == ""  # stdout: the ready line alone
