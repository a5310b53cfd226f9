"""A scripted stand-in for the Anthropic Messages API, so the real Claude Code CLI runs offline.

The CLI posts every model turn to ``POST /v1/messages?beta=true`` with ``stream: true`` and reads
server-sent events back. Here each turn of the *agent's conversation* (a request that offers
tools) is answered by the next step of a script; the CLI's side requests (no tools: titles,
summaries) get a short text so they never consume a step. Every request is recorded, so a test
can assert on exactly what the CLI sent, e.g. that a ``Stop hook feedback:`` message arrived.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STOP_HOOK_FEEDBACK = "Stop hook feedback:"


@dataclass(frozen=True)
class ToolUse:
    """A tool call the scripted model makes: ``ToolUse("Write", {"file_path": ..., ...})``."""

    name: str
    input: dict[str, Any]


Block = str | ToolUse  # a text block or a tool call
Turn = Sequence[Block]


@dataclass(frozen=True)
class Request:
    """One request the CLI sent, as JSON."""

    path: str
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    @property
    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self.body.get("tools", [])]

    @property
    def is_agent_turn(self) -> bool:
        """The agent's conversation offers tools; the CLI's side requests do not."""
        return bool(self.body.get("tools"))

    def texts(self, role: str = "user") -> list[str]:
        """Every text the messages of ``role`` carry: text blocks and tool results alike."""
        return [
            text
            for message in self.messages
            if message["role"] == role
            for text in _texts(message["content"])
        ]

    def last_user_texts(self) -> list[str]:
        return _texts(self.messages[-1]["content"]) if self.messages else []

    def feedback(self) -> list[str]:
        """The stop hook's reasons the CLI passed back to the model, oldest first."""
        return [text for text in self.texts() if text.startswith(STOP_HOOK_FEEDBACK)]


def _texts(content: str | list[dict[str, Any]]) -> list[str]:
    if isinstance(content, str):
        return [content]
    found: list[str] = []
    for block in content:
        if block.get("type") == "text":
            found.append(block["text"])
        elif block.get("type") == "tool_result":
            found.extend(_texts(block.get("content") or []))
    return found


Step = Turn | Callable[[Request], Turn]


@dataclass
class Script:
    """The agent's turns in order: each step answers one agent request (a fixed turn, or a
    function of the request that returns it). When the steps run out, ``then`` answers every
    further turn, which is how an agent that "never fixes it" keeps claiming success."""

    steps: Sequence[Step]
    then: Turn = ("Done. All tests pass.",)
    requests: list[Request] = field(default_factory=list)
    _answered: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: Request) -> Turn:
        with self._lock:
            self.requests.append(request)
            if not request.is_agent_turn:
                return ("ok",)
            index, self._answered = self._answered, self._answered + 1
        if index >= len(self.steps):
            return self.then
        step = self.steps[index]
        return step(request) if callable(step) else step

    @property
    def agent_requests(self) -> list[Request]:
        with self._lock:
            return [request for request in self.requests if request.is_agent_turn]


def events(turn: Turn, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of one assistant message, in the Messages API's order."""
    message_id = f"msg_{uuid.uuid4().hex[:24]}"
    usage = {"input_tokens": 1, "output_tokens": 1}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    for index, block in enumerate(turn):
        if isinstance(block, ToolUse):
            start = {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:24]}",
                "name": block.name,
                "input": {},
            }
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.input)}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block}
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": start,
            },
        )
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop_reason = "tool_use" if any(isinstance(b, ToolUse) for b in turn) else "end_turn"
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def whole_message(turn: Turn, model: str) -> dict[str, Any]:
    """The same message for a request that does not stream."""
    message: dict[str, Any] = {}
    for name, event in events(turn, model):
        if name == "message_start":
            message = event["message"]
        elif name == "content_block_start":
            message["content"].append(event["content_block"])
        elif name == "content_block_delta":
            block = message["content"][event["index"]]
            if event["delta"]["type"] == "text_delta":
                block["text"] += event["delta"]["text"]
            else:
                block["input"] = json.loads(event["delta"]["partial_json"])
        elif name == "message_delta":
            message.update(event["delta"])
    return message


class ScriptedHandler(BaseHTTPRequestHandler):
    """What every scripted model server's handler shares: HTTP/1.1, whole bodies, no log."""

    protocol_version = "HTTP/1.1"

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on the recorded requests, not on an access log."""


@contextmanager
def running(handler: type[ScriptedHandler]) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 (an ephemeral port); yields ``http://127.0.0.1:PORT``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve(script: Script) -> Iterator[str]:
    """Run ``script`` behind a Messages API on 127.0.0.1 (ephemeral port); yield its base URL."""

    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if self.path.partition("?")[0] != "/v1/messages":
                self._send(404, "application/json", b'{"type":"error"}')
                return
            body = json.loads(raw)
            turn = script.answer(Request(self.path, body))
            model = str(body.get("model", "scripted"))
            if not body.get("stream"):
                payload = json.dumps(whole_message(turn, model)).encode()
                self._send(200, "application/json", payload)
                return
            stream = b"".join(
                f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()
                for name, event in events(turn, model)
            )
            self._send(200, "text/event-stream", stream)

        def do_GET(self) -> None:
            self._send(404, "application/json", b'{"type":"error"}')

    with running(Handler) as url:
        yield url
