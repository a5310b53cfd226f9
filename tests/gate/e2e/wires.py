"""Scripted stand-ins for the other model APIs the harnesses speak, so their real CLIs run
offline: OpenAI's Responses API (Codex, Copilot), Chat Completions (OpenHands, through LiteLLM)
and Gemini's ``generateContent`` (Gemini CLI). One ``Script`` (model_server.py) drives them all:
each agent turn (a request that offers tools) takes the script's next step; a side request
(titles, summaries, routing) gets a short answer and never consumes one. Every request is
recorded, so a test asserts on what the model was told.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .model_server import Request, Script, ScriptedHandler, ToolUse, Turn, running

GATE_REASON = "completion-claim gate:"
"""How every reason the gate sends an agent begins, whatever the harness wraps it in."""


def _strings(value: object) -> Iterator[str]:
    """Every string inside a JSON value (the wire formats nest texts differently)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


class WireRequest(Request):
    """A request in another wire format: what the model was given, as plain strings."""

    @property
    def conversation(self) -> object:
        raise NotImplementedError

    @property
    def is_agent_turn(self) -> bool:
        return bool(self.body.get("tools"))

    @property
    def tool_names(self) -> list[str]:
        raise NotImplementedError

    def tool_parameters(self, name: str) -> set[str]:
        """The argument names the tool ``name`` offers."""
        raise NotImplementedError

    def texts(self, role: str = "user") -> list[str]:
        return list(_strings(self.conversation))

    def feedback(self) -> list[str]:
        """The gate's reasons in what the model was given, oldest first (each harness wraps
        them in its own words, so matched inside any text)."""
        return [text for text in self.texts() if GATE_REASON in text]


class ResponsesRequest(WireRequest):
    @property
    def conversation(self) -> object:
        return self.body.get("input", [])

    @property
    def tool_names(self) -> list[str]:
        return [tool.get("name", tool.get("type", "")) for tool in self.body.get("tools", [])]

    def tool_parameters(self, name: str) -> set[str]:
        (tool,) = [tool for tool in self.body["tools"] if tool.get("name") == name]
        return set(tool["parameters"]["properties"])


class ChatRequest(WireRequest):
    @property
    def conversation(self) -> object:
        return [m for m in self.body.get("messages", []) if m.get("role") != "system"]

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.body.get("tools", [])]

    def tool_parameters(self, name: str) -> set[str]:
        (tool,) = [t["function"] for t in self.body["tools"] if t["function"]["name"] == name]
        return set(tool["parameters"]["properties"])


class GeminiRequest(WireRequest):
    @property
    def conversation(self) -> object:
        return self.body.get("contents", [])

    @property
    def tool_names(self) -> list[str]:
        return [
            declaration["name"]
            for tool in self.body.get("tools", [])
            for declaration in tool.get("functionDeclarations", [])
        ]

    def tool_parameters(self, name: str) -> set[str]:
        (declaration,) = [
            declaration
            for tool in self.body["tools"]
            for declaration in tool.get("functionDeclarations", [])
            if declaration["name"] == name
        ]
        schema = declaration.get("parametersJsonSchema") or declaration["parameters"]
        return set(schema["properties"])


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


# --- the Responses API --------------------------------------------------------------------------


def responses_output(turn: Turn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in turn:
        if isinstance(block, ToolUse):
            items.append({
                "type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}",
                "call_id": _call_id(), "name": block.name,
                "arguments": json.dumps(block.input), "status": "completed",
            })  # fmt: skip
        else:
            items.append({
                "type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": block, "annotations": []}],
            })  # fmt: skip
    return items


def responses_events(turn: Turn, model: str) -> Iterator[dict[str, Any]]:
    """The server-sent events of one response, in the Responses API's order."""
    response: dict[str, Any] = {
        "id": f"resp_{uuid.uuid4().hex[:24]}", "object": "response",
        "created_at": int(time.time()), "model": model, "status": "in_progress", "output": [],
    }  # fmt: skip
    yield {"type": "response.created", "response": dict(response)}
    yield {"type": "response.in_progress", "response": dict(response)}
    output = responses_output(turn)
    for index, item in enumerate(output):
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        else:
            added["arguments"] = ""
        yield {"type": "response.output_item.added", "output_index": index, "item": added}
        if item["type"] == "message":
            part = item["content"][0]
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield {"type": "response.content_part.added", **ids,
                   "part": {**part, "text": ""}}  # fmt: skip
            yield {"type": "response.output_text.delta", **ids, "delta": part["text"]}
            yield {"type": "response.output_text.done", **ids, "text": part["text"]}
            yield {"type": "response.content_part.done", **ids, "part": part}
        else:
            ids = {"item_id": item["id"], "output_index": index}
            yield {"type": "response.function_call_arguments.delta", **ids,
                   "delta": item["arguments"]}  # fmt: skip
            yield {"type": "response.function_call_arguments.done", **ids,
                   "arguments": item["arguments"]}  # fmt: skip
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    usage = {
        "input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }  # fmt: skip
    done = {**response, "status": "completed", "output": output, "usage": usage}
    yield {"type": "response.completed", "response": done}


# --- Chat Completions ---------------------------------------------------------------------------


def chat_message(turn: Turn) -> dict[str, Any]:
    texts = [block for block in turn if isinstance(block, str)]
    calls = [
        {"id": _call_id(), "type": "function",
         "function": {"name": block.name, "arguments": json.dumps(block.input)}}
        for block in turn
        if isinstance(block, ToolUse)
    ]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def chat_completion(turn: Turn, model: str) -> dict[str, Any]:
    message = chat_message(turn)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


def chat_chunks(turn: Turn, model: str) -> Iterator[dict[str, Any]]:
    whole = chat_completion(turn, model)
    message, finish = whole["choices"][0]["message"], whole["choices"][0]["finish_reason"]
    base = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"],
            "model": model}  # fmt: skip
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
           "usage": whole["usage"]}  # fmt: skip


# --- Gemini -------------------------------------------------------------------------------------


def gemini_response(turn: Turn, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"functionCall": {"name": block.name, "args": block.input}}
        if isinstance(block, ToolUse)
        else {"text": block}
        for block in turn
    ]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                          "totalTokenCount": 2},
        "modelVersion": model,
    }  # fmt: skip


def _gemini_side_answer(body: dict[str, Any]) -> Turn:
    """Gemini CLI's side requests (how complex the task is, who speaks next) ask for JSON of a
    schema: an object of its properties, the user to speak next."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") != "application/json":
        return ("ok",)
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    samples = {"STRING": "scripted", "INTEGER": 1, "NUMBER": 1, "BOOLEAN": False}
    answer = {
        name: "user" if name == "next_speaker" else samples.get(str(spec.get("type")).upper())
        for name, spec in (schema.get("properties") or {}).items()
    }
    return (json.dumps(answer),)


# --- the server ---------------------------------------------------------------------------------

Route = Callable[[str, dict[str, Any]], tuple[str, bytes]]


@contextmanager
def serve_wire(wire: str, script: Script) -> Iterator[str]:
    """Run ``script`` behind ``wire`` ("responses", "chat" or "gemini") on 127.0.0.1; yield the
    base URL (for OpenAI's wires it ends in /v1)."""

    def route(path: str, body: dict[str, Any]) -> tuple[str, bytes] | None:
        model = str(body.get("model", "scripted"))
        if wire == "responses" and path.endswith("/responses"):
            turn = script.answer(ResponsesRequest(path, body))
            if not body.get("stream"):
                whole = list(responses_events(turn, model))[-1]["response"]
                return "application/json", json.dumps(whole).encode()
            return "text/event-stream", b"".join(
                f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                for event in responses_events(turn, model)
            )
        if wire == "chat" and path.endswith("/chat/completions"):
            turn = script.answer(ChatRequest(path, body))
            if not body.get("stream"):
                return "application/json", json.dumps(chat_completion(turn, model)).encode()
            return "text/event-stream", b"".join(
                f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chat_chunks(turn, model)
            ) + b"data: [DONE]\n\n"
        if wire == "gemini" and ":" in path.rsplit("/", 1)[-1]:
            name, _, method = path.rsplit("/", 1)[-1].partition(":")
            if method == "countTokens":
                return "application/json", b'{"totalTokens": 1}'
            request = GeminiRequest(path, body)
            turn = script.answer(request) if request.is_agent_turn else _gemini_side_answer(body)
            if not request.is_agent_turn:
                with script._lock:
                    script.requests.append(request)
            answer = gemini_response(turn, name)
            if method == "streamGenerateContent":
                return "text/event-stream", f"data: {json.dumps(answer)}\n\n".encode()
            return "application/json", json.dumps(answer).encode()
        return None

    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            path = self.path.partition("?")[0]
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            found = route(path, body) if isinstance(body, dict) else None
            if found is None:
                self._send(404, "application/json", b'{"error": {"message": "not scripted"}}')
            else:
                self._send(200, *found)

        def do_GET(self) -> None:
            if self.path.partition("?")[0].endswith("/models"):
                self._send(200, "application/json", b'{"object": "list", "data": []}')
            else:
                self._send(404, "application/json", b'{"error": {"message": "not scripted"}}')

    with running(Handler) as base:
        yield base if wire == "gemini" else f"{base}/v1"
