"""``POST /v1/gate`` and ``/v1/gate/start`` over a real uvicorn on a Unix socket, and the service
run as its own user: the requester cannot read the key, and what is recorded is signed by it."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from completion_claim.gate.hooks import MAX_OUTCOME_CHARS
from completion_claim.service.client import ServiceClient, ServiceRefused
from completion_claim.service.tokens import add_token
from completion_claim.trust.dsse import Signers, decode_envelope
from completion_claim.trust.keys import SigningKey, load_signing_key
from tests.fixtures.gate_service import (
    TOKEN_NAME,
    GateService,
    buggy_project,
    gate_service,
    write_operator,
)
from tests.fixtures.installed import installed_python
from tests.fixtures.projects import CALC, GIT_ENV, write_files
from tests.fixtures.serve import ready_line
from tests.gate.payloads import DEFAULT_SESSIONS, documented_stop
from tests.gate.test_test_baseline import project as baseline_project
from tests.gate.test_test_baseline import skipping_add
from tests.needs import unavailable


@pytest.fixture
def service(tmp_path: Path) -> Iterator[GateService]:
    with gate_service(tmp_path) as running:
        yield running


def client(service: GateService, token: str | None = "own") -> ServiceClient:
    return ServiceClient(service.url, service.token if token == "own" else token)


def test_a_false_done_is_refuted_and_recorded_under_the_tokens_name(
    service: GateService,
) -> None:
    repo = buggy_project(service.observed / "repo")
    body = {"repo": str(repo), "outcome": "Done.", "session": "s-1", "task_id": "t-9"}

    with client(service, service.operator_token) as operator:
        operator.post_json("/v1/gate/start", {"repo": str(repo), "session": "s-1"})
    with client(service) as http:
        write_files(repo, {"README.md": "fixed\n"})
        answer = http.post_json("/v1/gate", body)
        entry = http.get_json(f"/v1/claims/{answer['index']}")

    assert answer["verdict"]["state"] == "refuted"
    assert answer["exit_code"] == 2
    assert answer["max_blocks"] == 2
    assert "failed" in answer["agent_reason"]
    assert answer["url"].endswith(f"/claims/{answer['index']}")
    assert (entry["via"], entry["submitted_by"]) == ("gate", TOKEN_NAME)
    assert entry["claim"]["task"]["id"] == "t-9"
    assert entry["policy"]["id"] == "ops/service-gate"


def test_an_honest_fix_is_verified_with_proven_independence(service: GateService) -> None:
    repo = buggy_project(service.observed / "repo")
    with client(service, service.operator_token) as operator:
        operator.post_json("/v1/gate/start", {"repo": str(repo)})
    with client(service) as http:
        write_files(repo, {"calc.py": CALC})
        answer = http.post_json("/v1/gate", {"repo": str(repo), "outcome": "Fixed add()."})
    assert answer["verdict"]["state"] == "verified"
    assert answer["verdict"]["independence"] == "proven"
    assert answer["exit_code"] == 0


def test_start_takes_the_baselines_for_the_session(service: GateService) -> None:
    repo = buggy_project(service.observed / "repo")
    with client(service, service.operator_token) as operator:
        started = operator.post_json("/v1/gate/start", {"repo": str(repo), "session": "s-1"})
    with client(service) as http:
        write_files(repo, {"calc.py": CALC})
        answer = http.post_json("/v1/gate", {"repo": str(repo), "session": "s-1"})
    assert started == {"repo": os.path.realpath(repo), "index": 0}
    assert "the start record" in answer["report"]


def test_attack_93_the_services_start_takes_the_test_baseline(tmp_path: Path) -> None:
    """The operator's start through the service runs the tests once: the test that passed then
    and that the agent's code now skips is required at the gate (calc.py allowed code that
    depends on being tested: the test-aware scan would name the skip first)."""
    with gate_service(tmp_path / "served", allowed=("calc.py",)) as service:
        repo = baseline_project(service.observed / "repo")
        with client(service, service.operator_token) as operator:
            operator.post_json("/v1/gate/start", {"repo": str(repo), "session": "s-1"})
        with client(service) as http:
            write_files(repo, {"calc.py": skipping_add("pytest")})
            answer = http.post_json("/v1/gate", {"repo": str(repo), "session": "s-1"})
    assert answer["verdict"]["state"] != "verified"
    assert (
        "tests/test_calc.py::test_add passed before you started and is now skipped"
        in (answer["agent_reason"])
    )


@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_without_a_known_token_nothing_runs(service: GateService, token: str | None) -> None:
    repo = buggy_project(service.observed / "repo")
    with client(service, token) as http, pytest.raises(ServiceRefused) as refused:
        http.post_json("/v1/gate", {"repo": str(repo)})
    assert refused.value.status == 401
    assert service.ledger.tree_head().size == 0


def test_a_repository_outside_the_root_is_403(service: GateService, tmp_path: Path) -> None:
    repo = buggy_project(tmp_path / "elsewhere")
    (service.observed / "link").symlink_to(repo)
    with client(service) as http:
        for path in (repo, service.observed / "link"):
            with pytest.raises(ServiceRefused) as refused:
                http.post_json("/v1/gate", {"repo": str(path)})
            assert refused.value.status == 403
            assert "observe root" in refused.value.error
    assert service.ledger.tree_head().size == 0


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"repo": "{observed}/plain"}, "not in a git work tree"),
        ({"repo": "relative"}, "not an absolute path"),
        ({"repo": "{observed}", "policy": {}}, "policy: unknown member"),
        ({}, "repo: required"),
    ],
)
def test_a_bad_request_is_422_naming_the_problem(
    service: GateService, body: dict[str, Any], problem: str
) -> None:
    (service.observed / "plain").mkdir()
    sent = {k: v.format(observed=service.observed) if isinstance(v, str) else v
            for k, v in body.items()}  # fmt: skip
    with client(service) as http, pytest.raises(ServiceRefused) as refused:
        http.post_json("/v1/gate", sent)
    assert refused.value.status == 422
    assert problem in refused.value.error


def test_a_body_that_is_not_json_is_400(service: GateService) -> None:
    import httpx

    transport = httpx.HTTPTransport(uds=service.url.removeprefix("unix://"))
    with httpx.Client(transport=transport, base_url="http://localhost") as raw:
        answer = raw.post(
            "/v1/gate",
            content=b'{"repo": "/a", "repo": "/b"}',
            headers={
                "content-type": "application/json",
                "authorization": f"Bearer {service.token}",
            },
        )
    assert answer.status_code == 400
    assert "duplicate key" in answer.json()["error"]


def test_the_gate_routes_are_in_the_openapi_document(service: GateService) -> None:
    with client(service) as http:
        paths = http.get_json("/openapi.json")["paths"]
    assert "post" in paths["/v1/gate"]
    assert "post" in paths["/v1/gate/start"]


# --- the service as its own user -------------------------------------------------------------

SERVE_START_S = 60.0
HOOK_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class User:
    uid: int
    gid: int
    home: Path

    def run(self, argv: list[str], *, groups: tuple[int, ...] = ()) -> list[str]:
        """``argv`` as this user (no supplementary groups but ``groups``), HOME its own."""
        ids = [f"--reuid={self.uid}", f"--regid={self.gid}"]
        ids.append(f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups")
        return ["setpriv", *ids, "env", f"HOME={self.home}", *argv]


def spare_ids(count: int) -> list[int]:
    """Ids no user or group on this machine has."""
    taken = {u.pw_uid for u in pwd.getpwall()} | {g.gr_gid for g in grp.getgrall()}
    return [i for i in range(61000, 65000) if i not in taken][:count]


def as_root_in_ci() -> None:
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("bwrap"):
        unavailable("running the service as another user needs root, setpriv and bwrap")


def own(path: Path, user: User, mode: int) -> None:
    os.chown(path, user.uid, user.gid)
    path.chmod(mode)


def test_attack_19_the_service_as_its_own_user_observes_and_signs_what_the_requester_cannot() -> (
    None
):
    as_root_in_ci()
    service_id, requester_id = spare_ids(2)
    base = Path(tempfile.mkdtemp(prefix="cc-own-"))  # short, for the socket's path
    base.chmod(0o755)
    try:
        python = installed_python()
        service_user = User(service_id, service_id, base / "svc-home")
        requester = User(requester_id, requester_id, base / "req-home")
        _run_own_user_case(base, python, service_user, requester)
    finally:
        shutil.rmtree(base)


def _run_own_user_case(base: Path, python: Path, service_user: User, requester: User) -> None:
    claim = [str(python), "-m", "completion_claim"]
    for user in (service_user, requester):
        user.home.mkdir()
        own(user.home, user, 0o700)
    ops = base / "ops"  # the operator's: config, key, ledger, runs, tokens
    ops.mkdir()
    config, key = write_operator(ops, python=str(python))
    tokens = ops / "tokens"
    token = add_token(tokens, "requester")
    starter = add_token(tokens, "orchestrator", ["start"])  # the operator's side starts sessions
    for path in (ops, *ops.rglob("*")):
        os.chown(path, service_user.uid, service_user.gid)
    ops.chmod(0o700)
    key.chmod(0o600)
    sockets = base / "sock"
    sockets.mkdir()
    own(sockets, service_user, 0o755)
    socket_path = sockets / "s.sock"
    observed = base / "observed"
    observed.mkdir()
    repo = buggy_project(observed / "repo")
    for path in (repo, *repo.rglob("*")):
        os.lchown(path, requester.uid, requester.gid)

    serve = service_user.run([
        *claim, "serve", "--socket", str(socket_path), "--observe-root", str(observed),
        "--gate-config", str(config), "--key", str(key), "--tokens", str(tokens),
        "--ledger", f"sqlite:///{ops / 'ledger.sqlite'}",
    ])  # fmt: skip
    log = base / "serve.log"  # a file, not a pipe: nobody reads the log while it runs
    with log.open("w") as log_file:
        process = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=log_file, text=True)
    try:
        line = ready_line(process, SERVE_START_S)
        assert "listening on" in line, line + log.read_text()
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert key.stat().st_uid == service_user.uid

        # The requester (in the socket's group, as an operator lets a requester in) cannot
        # read the key that signs the evidence.
        reading = subprocess.run(
            requester.run([str(python), "-c", f"open({str(key)!r}, 'rb')"],
                          groups=(service_user.gid,)),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert reading.returncode != 0
        assert "PermissionError" in reading.stderr

        def stop(outcome: str) -> dict[str, Any]:
            payload = {**documented_stop("claude-code", repo), "last_assistant_message": outcome}
            done = subprocess.run(
                requester.run([*claim, "hook", "stop", "--harness", "claude-code",
                               "--server", f"unix://{socket_path}"], groups=(service_user.gid,)),
                input=json.dumps(payload), capture_output=True, text=True, cwd=repo,
                env={**GIT_ENV, "CLAIM_TOKEN": token}, timeout=HOOK_TIMEOUT_S, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            answer: dict[str, Any] = json.loads(done.stdout)
            return answer

        started = subprocess.run(
            requester.run([*claim, "gate", "--start", "--repo", str(repo), "--session",
                           DEFAULT_SESSIONS["claude-code"], "--server", f"unix://{socket_path}"],
                          groups=(service_user.gid,)),
            capture_output=True, text=True, cwd=repo, env={**GIT_ENV, "CLAIM_TOKEN": starter},
            timeout=HOOK_TIMEOUT_S, check=False,
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        write_requester_file(requester, repo / "README.md", "fixed, trust me\n")
        blocked = stop("Done. All tests pass.")
        assert blocked.get("decision") == "block", blocked
        assert "refuted" in blocked["reason"]

        write_requester_file(requester, repo / "calc.py", CALC)
        allowed = stop("Fixed add().")
        assert "decision" not in allowed, allowed
        assert allowed["systemMessage"].startswith("completion-claim: verified"), allowed

        with ServiceClient(f"unix://{socket_path}") as http:
            entries = http.get_json("/v1/claims")["items"]
    finally:
        process.terminate()
        process.wait(SERVE_START_S)

    refuted, verified = sorted(entries, key=lambda e: e["index"])
    assert refuted["verdict"]["state"] == "refuted"
    assert verified["verdict"]["state"] == "verified"
    assert verified["verdict"]["independence"] == "proven"
    service_key = load_signing_key(str(key)).public
    for entry in (refuted, verified):
        assert (entry["via"], entry["submitted_by"]) == ("gate", "requester")
        (item,) = entry["claim"]["evidence"]
        # The tests ran in the sandbox as the service's user, in a user namespace of its own.
        assert f"uid {service_user.uid}, user namespace" in item["details"]["sandbox"]
        signers = Signers(decode_envelope(item["attestation"]))
        assert signers.signed(service_key)
        assert not signers.signed(SigningKey.generate().public)


def write_requester_file(requester: User, path: Path, text: str) -> None:
    """The agent's edit, as the agent's user (the file stays the requester's)."""
    write_files(path.parent, {path.name: text})
    os.chown(path, requester.uid, requester.gid)


# --- the published contract ------------------------------------------------------------------

FUZZ_EXAMPLES = 40


def test_the_gate_routes_keep_their_published_contract(tmp_path: Path) -> None:
    """Schemathesis fuzzes the two gate operations from /openapi.json: no 5xx, and every answer
    has a documented status and shape. The observe root holds no repository, so no example
    runs a gate for minutes; the paths it names are refused before any work."""
    import schemathesis
    from fastapi.testclient import TestClient
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import (
        content_type_conformance,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    from completion_claim.service.app import create_app
    from completion_claim.service.ledger import Ledger
    from completion_claim.service.settings import ServiceSettings

    ops = tmp_path / "ops"
    ops.mkdir()
    (tmp_path / "observed").mkdir()
    config, key = write_operator(ops)
    url = f"sqlite:///{ops / 'ledger.sqlite'}"
    checks = [not_a_server_error, status_code_conformance, content_type_conformance,
              response_schema_conformance]  # fmt: skip
    ledger = Ledger.open(url, load_signing_key(str(key)))
    try:
        app = create_app(
            ServiceSettings(url, key, observe_root=tmp_path / "observed", gate_config=config),
            ledger,
        )
        with TestClient(app) as http:
            schema = schemathesis.openapi.from_asgi("/openapi.json", http.app)
            for path in ("/v1/gate", "/v1/gate/start"):
                operation = schema[path]["POST"]

                @given(case=operation.as_strategy())
                @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
                          database=None, suppress_health_check=list(HealthCheck))  # fmt: skip
                def call(case: schemathesis.Case[Any]) -> None:
                    case.call_and_validate(checks=checks)

                call()
        assert ledger.tree_head().size == 0
    finally:
        ledger.close()


# ---- many gate runs at once


class _StallingEndpoint:
    """An endpoint the operator's check reads, which answers only once released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.arrived = threading.Semaphore(0)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stub.arrived.release()
                stub.release.wait(GATE_STALL_S)
                body = b'{"v": "1"}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


GATE_STALL_S = 120.0
FLOOD = 48  # more than the worker threads the service shares between its routes (40)


def test_attack_24_a_flood_of_gate_runs_does_not_stop_the_service_answering(
    service: GateService,
) -> None:
    """Any token holder can ask for gate runs, each as long as the operator's checks let it
    take: FLOOD at once took every worker thread, and every read, post and dashboard page hung
    until the runs ended (the hooks of other agents timing out meanwhile). Gate runs now have
    their own bounded share of the threads."""
    endpoint = _StallingEndpoint()
    config = service.settings.gate_config
    assert config is not None
    repo = buggy_project(service.observed / "repo")
    with ServiceClient(service.url, service.operator_token) as operator:
        # Under the test-run configuration, which probes nothing at the start.
        operator.post_json("/v1/gate/start", {"repo": str(repo)})
    config.write_text(
        f'[gate]\nruns_dir = "{config.parent / "runs"}"\n\n[[check]]\ntype = "endpoint_health"\n'
        f'url = "http://127.0.0.1:{endpoint.server.server_port}/"\ntarget = "svc"\n'
        f'timeout_s = {GATE_STALL_S}\nexpect_json = {{ "/v" = "1" }}\n',
        encoding="utf-8",
    )

    def ask() -> None:
        with ServiceClient(service.url, service.token, GATE_STALL_S * 2) as http:
            http.post_json("/v1/gate", {"repo": str(repo)})

    flood = [threading.Thread(target=ask, daemon=True) for _ in range(FLOOD)]
    try:
        for thread in flood:
            thread.start()
        assert endpoint.arrived.acquire(timeout=60), "no gate run reached the endpoint"
        with ServiceClient(service.url, timeout_s=20) as http:
            assert http.get_json("/v1/tree-head")["size"] == 1  # the start alone
    finally:
        endpoint.close()
        for thread in flood:
            thread.join(GATE_STALL_S * 2)
    assert service.ledger.tree_head().size == 1 + FLOOD


def test_attack_157_the_gate_route_takes_every_body_its_members_allow(tmp_path: Path) -> None:
    """The hook sends the agent's last message, cut to the longest outcome the route takes;
    an operator's smaller ``--max-bytes`` (meant for posted claims) refused that body (413), and
    the hook let the stop through unjudged. The gate route reads what its own members allow."""
    with gate_service(tmp_path, baseline=False, max_body_bytes=64 * 1024) as service:
        repo = buggy_project(service.observed / "repo")
        with client(service, service.operator_token) as operator:
            operator.post_json("/v1/gate/start", {"repo": str(repo)})
        write_files(repo, {"README.md": "fixed\n"})
        longest = "\U0001f600" * MAX_OUTCOME_CHARS  # escaped in JSON: 12 bytes a character
        body = json.dumps({"repo": str(repo), "outcome": longest}).encode()
        assert len(body) > 64 * 1024 * 12
        with client(service) as http:
            answer = http.post_json("/v1/gate", {"repo": str(repo), "outcome": longest})
        assert answer["verdict"]["state"] == "refuted"
        entry = service.ledger.get(answer["index"])
        assert entry is not None
        assert entry.outcome == longest
