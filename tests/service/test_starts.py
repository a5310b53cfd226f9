"""A session's start: taken once, only with a token that has the ``start`` scope, and logged in
the ledger, through a real service on a Unix socket and the real ``claim`` command."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import EXIT_USAGE, EXIT_VERIFIED
from completion_claim.service.client import ServiceClient, ServiceRefused
from tests.fixtures.gate_service import (
    OPERATOR_TOKEN_NAME,
    TOKEN_NAME,
    GateService,
    buggy_project,
    gate_service,
    write_operator,
)
from tests.fixtures.projects import CALC, CALC_BUGGY, GIT_ENV, calc_project, git, write_files
from tests.fixtures.serve import CLAIM
from tests.gate.payloads import documented_stop

HOOK_TIMEOUT_S = 300
WEAKENED_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == -1\n"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[GateService]:
    # No test baseline at its starts: a sandboxed run more, and test_gate_api tests that one.
    with gate_service(tmp_path, baseline=False) as running:
        yield running


def token_file(folder: Path, token: str, name: str) -> Path:
    path = folder / name
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path


def claim(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIM), *args], capture_output=True, text=True, cwd=cwd,
        env={**GIT_ENV, **(env or {})}, timeout=HOOK_TIMEOUT_S, check=False,
    )  # fmt: skip


def gate(service: GateService, repo: Path, session: str, tokens: Path) -> dict[str, Any]:
    """``claim gate --server --json`` as the agent runs it, with its own token."""
    done = claim("gate", "--server", service.url, "--token-file", str(tokens), "--repo",
                 str(repo), "--session", session, "--outcome", "Done.", "--json",
                 cwd=repo)  # fmt: skip
    assert done.returncode in (0, 1, 2), done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_attack_43_the_agents_token_cannot_restart_its_session(
    service: GateService, tmp_path: Path
) -> None:
    """The agent commits broken code with a weakened test: the gate measures from the start
    the operator took, sees the test change, and says unverified. The agent then started its
    session again itself (POST /v1/gate/start accepted any token and replaced the start), so
    the broken commit became the base, and after a touch of calc.py the next gate was verified,
    independence proven. Now its token may not start (403), a start is taken once (409 even
    for the operator's token), and the session still measures from the operator's start."""
    repo = calc_project(service.observed / "repo")
    agent = token_file(tmp_path, service.token, "agent-token")
    operator = token_file(tmp_path, service.operator_token, "operator-token")
    started = claim("gate", "--server", service.url, "--token-file", str(operator), "--repo",
                    str(repo), "--start", "--session", "s1", cwd=repo)  # fmt: skip
    assert started.returncode == EXIT_VERIFIED, started.stderr
    assert "ledger index 0" in started.stdout

    write_files(repo, {"calc.py": CALC_BUGGY, "tests/test_calc.py": WEAKENED_TEST})
    git(repo, "commit", "-qam", "simplify")
    assert gate(service, repo, "s1", agent)["verdict"] == "unverified"

    for session in ("s1", "s2"):
        again = claim("gate", "--server", service.url, "--token-file", str(agent), "--repo",
                      str(repo), "--start", "--session", session, cwd=repo)  # fmt: skip
        assert again.returncode == EXIT_USAGE
        assert again.stderr.count("\n") == 1
        assert "this token may not start sessions (it lacks the scope 'start')" in again.stderr
    with (
        ServiceClient(service.url, service.operator_token) as http,
        pytest.raises(ServiceRefused) as refused,
    ):
        http.post_json("/v1/gate/start", {"repo": str(repo), "session": "s1"})
    assert refused.value.status == 409
    assert refused.value.error == (
        f"session 's1' was started already ({os.path.realpath(repo)}, ledger entry 0); "
        "a start is taken once: begin a new session"
    )

    write_files(repo, {"calc.py": CALC_BUGGY + "# touched\n"})
    after = gate(service, repo, "s1", agent)
    assert after["verdict"] == "unverified"
    unstarted = gate(service, repo, "s2", agent)  # s2 has no start: no trusted base, no start
    assert unstarted["verdict"] == "unverified"
    with ServiceClient(service.url) as http:
        entry = http.get_json(f"/v1/claims/{after['ledger_index']}")
        start = http.get_json("/v1/starts/0")
        assert "start_index" not in http.get_json(f"/v1/claims/{unstarted['ledger_index']}")
    assert entry["start_index"] == 0
    assert "tests/test_calc.py" in json.dumps(entry["claim"]["mutations"])
    assert (start["start"]["session"], start["submitted_by"]) == ("s1", OPERATOR_TOKEN_NAME)
    # One start in the log, the operator's: the refused ones left nothing.
    size = service.ledger.tree_head().size
    assert [i for i in range(size) if service.ledger.get_start(i) is not None] == [0]


def test_the_operator_starts_and_the_agents_honest_fix_is_verified_through_its_hook(
    service: GateService, tmp_path: Path
) -> None:
    """The honest control: the hook's own start attempt (its token cannot start) says so in one
    line and does not break the session; the operator's start counts; the hook's gate says
    verified, proven, and its ledger entry names the start's index."""
    repo = buggy_project(service.observed / "repo")
    env = {"CLAIM_TOKEN": service.token, "XDG_STATE_HOME": str(tmp_path / "state")}
    with ServiceClient(service.url, service.operator_token) as operator:
        begun = operator.post_json("/v1/gate/start", {"repo": str(repo), "session": "s1"})
    assert begun == {"repo": os.path.realpath(repo), "index": 0}

    payload = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "SessionStart",
               "source": "startup"}  # fmt: skip
    hook_start = subprocess.run(
        [str(CLAIM), "hook", "start", "--harness", "claude-code", "--server", service.url],
        input=json.dumps(payload), capture_output=True, text=True, cwd=repo,
        env={**GIT_ENV, **env}, timeout=HOOK_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert hook_start.returncode == 0
    assert hook_start.stdout == ""
    assert hook_start.stderr.count("\n") == 1
    assert hook_start.stderr.startswith(
        "claim hook start: the service took no start: this token may not start sessions"
    )

    write_files(repo, {"calc.py": CALC})
    stop = {**documented_stop("claude-code", repo, "s1"), "last_assistant_message": "Fixed."}
    done = subprocess.run(
        [str(CLAIM), "hook", "stop", "--harness", "claude-code", "--server", service.url],
        input=json.dumps(stop), capture_output=True, text=True, cwd=repo,
        env={**GIT_ENV, **env}, timeout=HOOK_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    allowed = json.loads(done.stdout)
    assert "decision" not in allowed, allowed
    assert allowed["systemMessage"].startswith("completion-claim: verified"), allowed

    with ServiceClient(service.url) as http:
        (entry,) = http.get_json("/v1/claims")["items"]
        start = http.get_json("/v1/starts/0")
        with pytest.raises(ServiceRefused) as not_a_claim:
            http.get_json("/v1/claims/0")
    assert entry["verdict"]["state"] == "verified"
    assert entry["verdict"]["independence"] == "proven"
    assert (entry["submitted_by"], entry["start_index"]) == (TOKEN_NAME, 0)
    assert start["start"]["base"] == git(repo, "rev-parse", "HEAD").strip()
    assert start["start"]["repo"] == os.path.realpath(repo)
    assert not_a_claim.value.status == 404
    assert "a session's start: GET /v1/starts/0" in not_a_claim.value.error
    import httpx

    uds = httpx.HTTPTransport(uds=service.url.removeprefix("unix://"))
    with httpx.Client(transport=uds, base_url="http://localhost") as raw:
        page = raw.get(f"/claims/{entry['index']}").text
    assert 'ledger entry 0 (<a href="/v1/starts/0">the start</a>)' in page
    for index in ("0", str(entry["index"])):  # the start is proven in the log like a claim
        proved = claim("ledger", "prove", service.url, index, cwd=tmp_path)
        assert proved.returncode == 0, proved.stderr
    service.ledger.audit()


def test_attack_55_a_service_without_tokens_lets_nobody_start(tmp_path: Path) -> None:
    """Without a token file anyone who can connect is anonymous, the agent on the same machine
    included: it could start (and, before starts were written once, restart) its own
    session. A start now needs a token with the start scope, so such a service takes none."""
    from fastapi.testclient import TestClient

    from completion_claim.service.app import create_app
    from completion_claim.service.ledger import Ledger
    from completion_claim.service.settings import ServiceSettings
    from completion_claim.trust.keys import load_signing_key

    ops = tmp_path / "ops"
    ops.mkdir()
    observed = tmp_path / "observed"
    repo = buggy_project(observed / "repo")
    config, key = write_operator(ops)
    url = f"sqlite:///{ops / 'ledger.sqlite'}"
    ledger = Ledger.open(url, load_signing_key(str(key)))
    try:
        app = create_app(
            ServiceSettings(url, key, observe_root=observed, gate_config=config), ledger
        )
        with TestClient(app) as http:
            answer = http.post("/v1/gate/start", json={"repo": str(repo), "session": "s1"})
        assert answer.status_code == 403
        assert answer.json()["error"].startswith("this service has no token file: starting")
        assert 'scope="start"' in answer.headers["www-authenticate"]
        assert ledger.tree_head().size == 0
        assert not (ops / "runs").exists()
    finally:
        ledger.close()


def test_two_starts_at_once_one_wins(service: GateService) -> None:
    repo = buggy_project(service.observed / "repo")
    answers: list[object] = []

    def start() -> None:
        with ServiceClient(service.url, service.operator_token) as http:
            try:
                answers.append(
                    http.post_json("/v1/gate/start", {"repo": str(repo), "session": "x"})
                )
            except ServiceRefused as refused:
                answers.append(refused.status)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(answers, key=str) == [409, 409, 409, {"repo": os.path.realpath(repo), "index": 0}]
    assert service.ledger.tree_head().size == 1


def test_locally_a_start_is_taken_once_unless_restarted(tmp_path: Path) -> None:
    """``claim gate --start`` runs as the agent's user here, so ``--restart`` is the agent's to
    pass too (docs/threat-model.md says so); what it stops is a start taken again by mistake,
    or by a hook that fires twice."""
    repo = calc_project(tmp_path / "repo")
    ops = tmp_path / "ops"
    ops.mkdir()
    config, _ = write_operator(ops)
    start = ("gate", "--config", str(config), "--repo", str(repo), "--start", "--session", "s1")
    first = claim(*start, cwd=repo)
    assert first.returncode == 0, first.stderr
    (record,) = (ops / "runs").glob("*/start/session-*.json")
    taken = json.loads(record.read_text())
    write_files(repo, {"calc.py": CALC_BUGGY})
    git(repo, "commit", "-qam", "broken")

    again = claim(*start, cwd=repo)
    assert again.returncode == EXIT_USAGE
    assert again.stderr == (
        f"claim: session 's1' was started already ({record}); a start is taken once: "
        "claim gate --start --restart replaces it\n"
    )
    assert json.loads(record.read_text()) == taken
    for refused, problem in (
        (("gate", "--config", str(config), "--repo", str(repo), "--restart"),
         "--restart is for --start"),
        (("gate", "--server", "unix:///nowhere.sock", "--start", "--restart"),
         "never replaces a start"),
    ):  # fmt: skip
        done = claim(*refused, cwd=repo)
        assert done.returncode == EXIT_USAGE
        assert problem in done.stderr

    restarted = claim(*start, "--restart", cwd=repo)
    assert restarted.returncode == 0, restarted.stderr
    assert json.loads(record.read_text())["base"] == git(repo, "rev-parse", "HEAD").strip()
    assert json.loads(record.read_text())["base"] != taken["base"]


def test_a_hook_token_without_the_gate_scope_is_refused_as_a_token_not_as_the_work_tree(
    service: GateService, tmp_path: Path
) -> None:
    """A 403 for a missing scope is the token's (the stop goes through, saying why, as for an
    unknown token); only a 403 about the work tree sends the agent back."""
    from completion_claim.service.tokens import add_token

    assert service.settings.tokens_path is not None
    poster = add_token(service.settings.tokens_path, "poster", ["post"])
    repo = buggy_project(service.observed / "repo")
    write_files(repo, {"README.md": "done\n"})
    done = subprocess.run(
        [str(CLAIM), "hook", "stop", "--harness", "claude-code", "--server", service.url],
        input=json.dumps(documented_stop("claude-code", repo)), capture_output=True, text=True,
        cwd=repo, env={**GIT_ENV, "CLAIM_TOKEN": poster, "XDG_STATE_HOME": str(tmp_path)},
        timeout=HOOK_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    body = json.loads(done.stdout)
    assert "decision" not in body
    assert "the gate service could not judge" in body["systemMessage"]
    assert "token 'poster' lacks the scope 'gate'" in done.stderr
    assert service.ledger.tree_head().size == 0


def test_a_local_start_is_logged_when_the_gate_has_a_ledger(tmp_path: Path) -> None:
    from completion_claim.service.ledger import Ledger

    repo = buggy_project(tmp_path / "repo")
    ops = tmp_path / "ops"
    ops.mkdir()
    config, key = write_operator(ops)
    url = f"sqlite:///{ops / 'ledger.sqlite'}"
    gate_args = ("gate", "--config", str(config), "--repo", str(repo), "--session", "s1",
                 "--ledger", url, "--ledger-key", str(key))  # fmt: skip
    started = claim(*gate_args, "--start", cwd=repo)
    assert started.returncode == 0, started.stderr
    assert started.stdout.endswith("ledger index 0\n")
    write_files(repo, {"calc.py": CALC})
    gated = claim(*gate_args, "--json", cwd=repo)
    assert gated.returncode == 0, gated.stderr
    ledger = Ledger.open(url)
    try:
        start = ledger.get_start(0)
        entry = ledger.get(json.loads(gated.stdout)["ledger_index"])
    finally:
        ledger.close()
    assert start is not None
    assert (start.repo, start.session) == (os.path.realpath(repo), "s1")
    assert start.submitted_by.startswith("gate@")
    assert entry is not None
    assert entry.start_index == 0
