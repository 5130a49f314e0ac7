"""A loopback HTTP server speaking the Anthropic Messages API wire format.

The real `anthropic` SDK (built on httpx2, which mocking libraries do not intercept) talks to it
over a socket. A test scripts it with a responder (request JSON -> content blocks) and can
inject faults; every request is recorded with its headers.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.fakes.http_reply import send

Content = list[dict[str, Any]]
Responder = Callable[[dict[str, Any]], Content]

_ERROR_TYPES = {
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
    400: "invalid_request_error",
}


def tool_use(name: str, payload: Any) -> Content:
    return [{"type": "tool_use", "id": "toolu_01", "name": name, "input": payload}]


def text(value: str) -> Content:
    return [{"type": "text", "text": value}]


class FakeAnthropicServer:
    def __init__(self, responder: Responder | None = None, *, api_key: str = "test-key") -> None:
        self.responder: Responder = responder or (lambda _: text("ok"))
        self.api_key = api_key
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._faults: deque[tuple[int, str | None]] = deque()
        self._ids = itertools.count(1)
        self.batches: dict[str, dict[str, Any]] = {}  # id -> {"requests": [...], "polls": n}
        self.errored_in_batch: set[str] = set()  # custom_ids whose batch result is "errored"
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [body for _, body in self.requests]

    def fail_next(self, status: int, *, times: int = 1, retry_after: str | None = None) -> None:
        with self._lock:
            self._faults.extend([(status, retry_after)] * times)

    def __enter__(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        content = self.responder(body)
        system = body.get("system", "")
        # As the real API reports it: blocks marked cache_control are read from the cache (after
        # the first call), and input_tokens counts only the rest.
        cached_text = (
            "".join(b["text"] for b in system if "cache_control" in b) if isinstance(system, list) else ""
        )
        cached = len(cached_text) // 4
        prompt = len(json.dumps(body)) // 4 - cached
        return {
            "id": f"msg_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt,
                "output_tokens": len(json.dumps(content)) // 4,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": cached,
            },
        }

    def _batch(self, batch_id: str) -> dict[str, Any]:
        state = self.batches[batch_id]
        ended = state["polls"] >= 2  # "in_progress" on create and on the first poll
        n = len(state["requests"])
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else n, "succeeded": n if ended else 0, "errored": 0,
                               "canceled": 0, "expired": 0},
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:05:00Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.base_url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }  # fmt: skip

    def _batch_results(self, batch_id: str) -> bytes:
        lines = []
        for request in self.batches[batch_id]["requests"]:
            if request["custom_id"] in self.errored_in_batch:
                result: dict[str, Any] = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "internal"}}}  # fmt: skip
            else:
                result = {"type": "succeeded", "message": self._message(request["params"])}
            lines.append(json.dumps({"custom_id": request["custom_id"], "result": result}))
        return ("\n".join(lines) + "\n").encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with fake._lock:
                    fake.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    fault = fake._faults.popleft() if fake._faults else None
                key = self.headers.get("x-api-key") or self.headers.get("authorization", "").removeprefix(
                    "Bearer "
                )
                if fault is not None:
                    self._error(*fault)
                elif self.path == "/v1/messages/batches" and key == fake.api_key:
                    batch_id = f"msgbatch_{next(fake._ids):04d}"
                    fake.batches[batch_id] = {"requests": body["requests"], "polls": 0}
                    self._send(200, fake._batch(batch_id))
                elif self.path != "/v1/messages":
                    self._error(404)
                elif key != fake.api_key:
                    self._send(
                        401,
                        {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}},
                    )
                else:
                    self._send(200, fake._message(body))

            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")  # v1 messages batches <id> [results]
                if len(parts) < 4 or parts[3] not in fake.batches:
                    self._error(404)
                elif len(parts) == 5 and parts[4] == "results":
                    send(self, 200, fake._batch_results(parts[3]), content_type="application/binary")
                else:
                    fake.batches[parts[3]]["polls"] += 1
                    self._send(200, fake._batch(parts[3]))

            def _error(self, status: int, retry_after: str | None = None) -> None:
                kind = _ERROR_TYPES.get(status, "api_error")
                self._send(status, {"type": "error", "error": {"type": kind, "message": kind}}, retry_after)

            def _send(self, status: int, payload: dict[str, Any], retry_after: str | None = None) -> None:
                send(self, status, payload, retry_after=retry_after)

            def log_message(self, *_: object) -> None:
                pass

        return Handler
