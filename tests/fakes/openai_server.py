"""A loopback HTTP server speaking OpenAI's `/v1/chat/completions` (non-streaming) wire format, and
`/v1/embeddings` when given a function that embeds (other tools' embedding side: GraphRAG's query).

What Ollama, vLLM and llama.cpp's server expose. The real `openai` SDK talks to it over a
socket: point `base_url` at `server.base_url` (which ends in `/v1`). A test scripts it with a
queue of canned replies (`enqueue`) or a responder (request JSON -> `Reply`), injects HTTP faults
(`fail_next`), can refuse tools as a server without tool support does (`reject_tools`), and
asserts on `requests`: every request's headers and body, in arrival order.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.fakes.http_reply import send


@dataclass(frozen=True)
class Reply:
    """One assistant message: text and/or tool calls (arguments sent verbatim, even if malformed)."""

    content: str | None = None
    tool_calls: tuple[tuple[str, str], ...] = ()  # (function name, arguments string)
    finish_reason: str | None = None  # default: "tool_calls" with calls, else "stop"
    usage: bool = True  # False: no usage object, as some servers do


Responder = Callable[[dict[str, Any]], Reply]


def tool_call(name: str, arguments: Any, *, finish_reason: str | None = None) -> Reply:
    """A function call; a dict is JSON-encoded, a string is sent as it is (malformed on purpose)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(tool_calls=((name, raw),), finish_reason=finish_reason)


def text(value: str | None, *, finish_reason: str = "stop") -> Reply:
    return Reply(content=value, finish_reason=finish_reason)


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}.get(
        status, "server_error"
    )
    return {"error": {"message": message or f"HTTP {status}", "type": kind, "param": None, "code": None}}


class FakeOpenAIServer:
    def __init__(
        self,
        responder: Responder | None = None,
        *,
        api_key: str | None = None,
        reject_tools: bool = False,
        embed: Callable[[list[str]], list[list[float]]] | None = None,
    ) -> None:
        self.responder: Responder = responder or (lambda _: text("ok"))
        self.embed = embed  # None: no /v1/embeddings route
        self.api_key = api_key  # None: any bearer token, as local servers accept
        self.reject_tools = reject_tools
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._canned: deque[Reply] = deque()
        self._faults: deque[tuple[int, str | None, str | None]] = deque()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [body for _, body in self.requests]

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next completions with these replies, in order, before the responder."""
        with self._lock:
            self._canned.extend(replies)

    def fail_next(
        self, status: int, *, times: int = 1, retry_after: str | None = None, message: str | None = None
    ) -> None:
        with self._lock:
            self._faults.extend([(status, retry_after, message)] * times)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            reply = self._canned.popleft() if self._canned else None
        reply = reply or self.responder(body)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids):04d}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
                for name, arguments in reply.tool_calls
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        completion: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids):04d}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if reply.usage:
            prompt = max(1, len(json.dumps(body)) // 4)
            output = max(1, len(json.dumps(message)) // 4)
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": output,
                "total_tokens": prompt + output,
            }
        return completion

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        assert self.embed is not None
        vectors = self.embed([str(t) for t in texts])
        tokens = sum(max(1, len(str(t)) // 4) for t in texts)
        return {
            "object": "list",
            "model": body.get("model", ""),
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with fake._lock:
                    fake.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    fault = fake._faults.popleft() if fake._faults else None
                key = self.headers.get("authorization", "").removeprefix("Bearer ")
                if fault is not None:
                    status, retry_after, message = fault
                    send(self, status, error_body(status, message), retry_after=retry_after)
                elif fake.api_key is not None and key != fake.api_key:
                    send(self, 401, error_body(401, "Incorrect API key provided"))
                elif self.path == "/v1/embeddings" and fake.embed is not None:
                    send(self, 200, fake._embeddings(body))
                elif self.path != "/v1/chat/completions":
                    send(self, 404, error_body(404, f"no route {self.path}"))
                elif fake.reject_tools and body.get("tools"):
                    # Ollama's wording for a model without tool support
                    send(self, 400, error_body(400, f"{body.get('model')} does not support tools"))
                elif body.get("stream"):
                    send(self, 200, _event_stream(fake._completion(body)), content_type="text/event-stream")
                else:
                    send(self, 200, fake._completion(body))

            def log_message(self, *_: object) -> None:
                pass

        return Handler


def _event_stream(completion: dict[str, Any]) -> bytes:
    """``completion`` as `stream: true` sends it: server-sent `chat.completion.chunk` events (the
    role, the content, the finish reason) and `[DONE]` (GraphRAG's local and basic searches stream)."""
    choice = completion["choices"][0]
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas = [
        ({"role": "assistant", "content": ""}, None),
        ({"content": choice["message"]["content"] or ""}, None),
        ({}, choice["finish_reason"]),
    ]
    events = [
        head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        for delta, finish in deltas
    ]
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
