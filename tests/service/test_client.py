"""The service client against real servers: a tiny HTTP server on loopback and one on a Unix
socket, each recording what it was sent and answering what the test asks."""

from __future__ import annotations

import json
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from completion_claim.errors import UsageError
from completion_claim.service.client import (
    ServiceClient,
    ServiceError,
    ServiceRefused,
    ServiceUnavailable,
)

from ..fixtures.gate_service import buggy_project, gate_service
from ..fixtures.projects import GIT_ENV, write_files
from ..gate.payloads import documented_stop

CLAIM = Path(sys.executable).parent / "claim"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Stub:
    """What the server answers next, and every request it was sent."""

    status: int = 200
    body: bytes = b'{"ok": true}'
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    stall: threading.Event | None = None  # when set: wait on it, then close unanswered
    seen: list[Seen] = field(default_factory=list)
    url: str = ""


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            stub.seen.append(
                Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            if stub.stall is not None:
                # Never answered: the client has given up by then, and writing to it would
                # print a BrokenPipeError from this thread into whatever test runs next.
                stub.stall.wait(10)
                return
            self.send_response(stub.status)
            for name, value in stub.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(stub.body)))
            self.end_headers()
            self.wfile.write(stub.body)

        do_GET = _answer
        do_POST = _answer

        def address_string(self) -> str:
            """A Unix socket's peer has no address to show."""
            return "local"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests assert on what the server was sent."""

    return Handler


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _serve(server: socketserver.BaseServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    return thread


@pytest.fixture(params=["tcp", "unix"])
def stub(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stub]:
    state = Stub()
    server: socketserver.BaseServer
    if request.param == "tcp":
        tcp = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
        tcp.daemon_threads = True
        state.url = f"http://127.0.0.1:{tcp.server_address[1]}"
        server = tcp
    else:
        path = tmp_path / "s.sock"
        server = _UnixHTTPServer(str(path), _handler(state))
        state.url = f"unix://{path}"
    _serve(server)
    try:
        yield state
    finally:
        if state.stall is not None:
            state.stall.set()
        server.shutdown()
        server.server_close()


def test_get_sends_path_query_and_token_and_reads_json(stub: Stub) -> None:
    stub.body = b'{"items": [], "next": null}'
    with ServiceClient(stub.url, token="tok-123") as client:
        answer = client.get_json("/v1/claims", {"state": "refuted", "before": None, "limit": 5})
    assert answer == {"items": [], "next": None}
    (seen,) = stub.seen
    assert seen.method == "GET"
    assert seen.path == "/v1/claims?state=refuted&limit=5"
    assert seen.headers["authorization"] == "Bearer tok-123"


def test_post_sends_json_body(stub: Stub) -> None:
    stub.status = 201
    stub.body = b'{"index": 7}'
    with ServiceClient(stub.url) as client:
        answer = client.post_json("v1/claims", {"task": {"id": "t-1"}})
    assert answer == {"index": 7}
    (seen,) = stub.seen
    assert (seen.method, seen.path) == ("POST", "/v1/claims")
    assert json.loads(seen.body) == {"task": {"id": "t-1"}}
    assert seen.headers["content-type"] == "application/json"
    assert "authorization" not in seen.headers


def test_error_status_carries_the_status_and_the_services_line(stub: Stub) -> None:
    stub.status = 422
    stub.body = b'{"error": "claim.task.id: required\\nsecond line"}'
    with ServiceClient(stub.url) as client, pytest.raises(ServiceRefused) as raised:
        client.post_json("/v1/claims", {})
    assert raised.value.status == 422
    assert raised.value.error == "claim.task.id: required second line"
    assert "422" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_error_status_without_a_json_error_names_the_reason(stub: Stub) -> None:
    stub.status = 502
    stub.body = b"<html>bad gateway</html>"
    stub.headers = {"content-type": "text/html"}
    with ServiceClient(stub.url) as client, pytest.raises(ServiceRefused) as raised:
        client.get_json("/v1/tree-head")
    assert raised.value.status == 502
    assert raised.value.error == "Bad Gateway"


def test_redirect_is_not_followed(stub: Stub) -> None:
    """Following it would hand the bearer token to wherever the answer points."""
    stub.status = 302
    stub.headers = {"location": "http://elsewhere.invalid/steal"}
    with ServiceClient(stub.url, token="secret") as client, pytest.raises(ServiceRefused) as err:
        client.get_json("/v1/tree-head")
    assert err.value.status == 302
    assert "elsewhere.invalid" in err.value.error
    assert len(stub.seen) == 1


def test_an_answer_that_is_not_json_is_an_error(stub: Stub) -> None:
    stub.body = b'{"a": 1, "a": 2}'
    with ServiceClient(stub.url) as client, pytest.raises(ServiceError) as raised:
        client.get_json("/v1/tree-head")
    assert not isinstance(raised.value, ServiceRefused | ServiceUnavailable)
    assert "duplicate key" in str(raised.value)


def test_timeout_is_unavailable_and_names_the_url(stub: Stub) -> None:
    stub.stall = threading.Event()
    with ServiceClient(stub.url, timeout_s=0.2) as client, pytest.raises(ServiceUnavailable) as err:
        client.get_json("/v1/tree-head")
    assert str(err.value).startswith(f"GET {stub.url}/v1/tree-head: no answer within 0.2s")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize("where", ["tcp", "unix"])
def test_nothing_listening_is_unavailable(where: str, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}" if where == "tcp" else f"unix://{tmp_path}/no.sock"
    with ServiceClient(url) as client, pytest.raises(ServiceUnavailable) as raised:
        client.get_json("/v1/tree-head")
    message = str(raised.value)
    assert message.startswith(f"GET {url}/v1/tree-head: cannot reach the service")
    assert "\n" not in message


def test_url_password_is_not_shown(tmp_path: Path) -> None:
    url = f"http://user:hunter2@127.0.0.1:{_closed_port()}"
    with ServiceClient(url) as client, pytest.raises(ServiceUnavailable) as raised:
        client.get_json("/v1/tree-head")
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize("stub", ["tcp"], indirect=True)  # a socket URL has no path prefix
def test_base_url_with_a_prefix_keeps_it(stub: Stub) -> None:
    with ServiceClient(f"{stub.url}/claims-service") as client:
        client.get_json("/v1/tree-head")
    assert stub.seen[0].path == "/claims-service/v1/tree-head"


@pytest.mark.parametrize("stub", ["unix"], indirect=True)
def test_the_socket_url_claim_serve_prints_is_accepted(stub: Stub) -> None:
    """``claim serve --socket PATH`` prints ``unix:PATH``; both spellings reach the socket."""
    with ServiceClient(stub.url.replace("unix://", "unix:")) as client:
        assert client.get_json("/v1/tree-head") == {"ok": True}


@pytest.mark.parametrize(
    "url", ["ftp://host/", "unix://relative.sock", "unix:rel.sock", "127.0.0.1:8080", "http://", ""]
)
def test_bad_url_is_a_usage_error(url: str) -> None:
    with pytest.raises(UsageError):
        ServiceClient(url)


@pytest.mark.parametrize("token", ["", "  ", "a\nb", "t\u00e9"])
def test_bad_token_is_a_usage_error(token: str) -> None:
    with pytest.raises(UsageError, match="token"):
        ServiceClient("http://127.0.0.1:1", token=token)


# ---- the gate's client, with the real service and the real hook


@pytest.mark.parametrize(
    "outcome",
    ["x" * 70_000, "All done.\0", "All done \ud800"],
    ids=["over-the-services-limit", "nul", "lone-surrogate"],
)
def test_attack_20_an_outcome_the_service_refuses_does_not_let_a_false_done_through(
    outcome: str, tmp_path: Path
) -> None:
    """The agent writes its last message (the outcome) so that the service would refuse the
    request (too long, a NUL) or the client could not send it (a lone surrogate, which JSON
    allows): the hook then let the stop through unjudged. The outcome is only what the agent
    says, so the client sends a form the service takes, and the broken work is sent back."""
    with gate_service(tmp_path / "svc") as service:
        repo = buggy_project(service.observed / "repo")
        with ServiceClient(service.url, service.operator_token) as operator:
            operator.post_json("/v1/gate/start", {"repo": str(repo), "session": "s-1"})
        write_files(repo, {"README.md": "fixed, promise\n"})  # the false done's only change
        payload = {**documented_stop("claude-code", repo, "s-1"), "last_assistant_message": outcome}
        done = subprocess.run(
            [str(CLAIM), "hook", "stop", "--harness", "claude-code", "--server", service.url],
            cwd=repo,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env={**GIT_ENV, "CLAIM_TOKEN": service.token},
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["decision"] == "block"
        entry = service.ledger.get(1)  # 0 is the session's start
        assert entry is not None
        assert entry.state == "refuted"
        # Over the bound, the hook keeps the message's end, after a note saying so.
        assert outcome[:9].rstrip("\0") in entry.claim["claimed_outcome"]
