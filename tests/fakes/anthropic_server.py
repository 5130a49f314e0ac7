"""A loopback HTTP server speaking the Anthropic Messages API wire format.

The real `anthropic` SDK (built on httpx2, which mocking libraries do not intercept) talks to it
over a socket: point `base_url` at `server.base_url` (no `/v1`). A test scripts it with a queue
of canned replies (`enqueue`) or a responder (request JSON -> content blocks), injects faults
(`fail_next` for an HTTP error status, `inject` for the others in `tests.fakes.faults`), and
asserts on `requests`: every request with its headers, in arrival order.

Usage is reported as the API does: blocks up to the last `cache_control` mark of `system`
(with the tools before them) are written to the prompt cache on first sight and read after.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.fakes.faults import (
    Fault,
    FaultKind,
    reset_connection,
    send_malformed_json,
    send_truncated,
    stall,
)
from tests.fakes.http_reply import send

Content = list[dict[str, Any]]
Responder = Callable[[dict[str, Any]], Content]
_CUT = "_cut_at_max_tokens"  # a block marked so makes the reply's stop_reason "max_tokens"

_ERRORS = {  # status -> (error.type, error.message) as the API sends them
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    404: ("not_found_error", "Not found"),
    429: ("rate_limit_error", "Rate limited"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def tool_use(name: str, payload: Any, *, tool_id: str | None = None, cut: bool = False) -> Content:
    """A tool call; without ``tool_id`` the server gives it a fresh `toolu_...` id; ``cut``: the
    reply stops at max_tokens (``stop_reason: "max_tokens"``), as a reply too long for the limit."""
    block = {"type": "tool_use", "name": name, "input": payload} | ({_CUT: True} if cut else {})
    return [block | {"id": tool_id}] if tool_id else [block]


def text(value: str) -> Content:
    return [{"type": "text", "text": value}]


def cooccurrence_extraction(chunk: str, names: Mapping[str, str]) -> dict[str, Any]:
    """A `record_extraction` payload: every known name (→ type) in the chunk is an entity, and
    every pair of them is related, as a plausible model answer the tests can predict."""
    found = [n for n in names if n in chunk]
    return {
        "entities": [
            {"name": n, "type": names[n], "description": f"{n} appears in the text."} for n in found
        ],
        "relationships": [
            {
                "source": a,
                "target": b,
                "type": "RELATED",
                "description": f"{a} relates to {b}.",
                "strength": 1,
                "keywords": ["shared mention"],  # LightRAG's high-level keywords of the relation
            }
            for i, a in enumerate(found)
            for b in found[i + 1 :]
        ],
        "facts": [],
    }


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind, default = _ERRORS.get(status, ("api_error", "Internal server error"))
    return {"type": "error", "error": {"type": kind, "message": message or default}}


class FakeAnthropicServer:
    def __init__(self, responder: Responder | None = None, *, api_key: str = "test-key") -> None:
        self.responder: Responder = responder or (lambda _: text("ok"))
        self.api_key = api_key
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._canned: deque[tuple[Content, Mapping[str, int] | None]] = deque()
        self._faults: deque[Fault] = deque()
        self._closing = threading.Event()  # cuts injected stalls short at shutdown
        self._standing: list[tuple[Callable[[dict[str, Any]], bool], Fault]] = []
        self.outcomes: dict[int, str] = {}  # request index -> "ok", or the fault it met
        self._ids = itertools.count(1)
        self._cached_prefixes: set[str] = set()
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

    def enqueue(self, content: Content, *, usage: Mapping[str, int] | None = None) -> None:
        """Answer the next message with ``content`` (before the responder), and this usage if given."""
        with self._lock:
            self._canned.append((content, usage))

    def fail_next(
        self, status: int, *, times: int = 1, retry_after: str | None = None, message: str | None = None
    ) -> None:
        """The next ``times`` requests get this HTTP status and the API's error body."""
        with self._lock:
            self._faults.extend([Fault(status, retry_after, message)] * times)

    def inject(self, kind: FaultKind, *, times: int = 1, stall_seconds: float = 2.0) -> None:
        """The next ``times`` requests meet this fault (see `tests.fakes.faults`)."""
        with self._lock:
            self._faults.extend([Fault(kind=kind, stall_seconds=stall_seconds)] * times)

    def fail_matching(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        status: int = 0,
        kind: FaultKind | None = None,
        retry_after: str | None = None,
    ) -> None:
        """Every request whose JSON body satisfies ``predicate`` meets this fault until cleared:
        a persistent fault aimed at one document's chunks while the others are served."""
        with self._lock:
            self._standing.append((predicate, Fault(status, retry_after, kind=kind, stall_seconds=2.0)))

    def clear_faults(self) -> None:
        """Forget every fault not yet played, and every standing one."""
        with self._lock:
            self._faults.clear()
            self._standing.clear()

    def ok_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the requests that got a clean answer."""
        return [body for i, body in enumerate(self.bodies) if self.outcomes.get(i) == "ok"]

    def __enter__(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def _message(self, body: dict[str, Any], content: Content | None = None) -> dict[str, Any]:
        usage = None
        if content is None:
            with self._lock:
                content, usage = self._canned.popleft() if self._canned else (None, None)
        if content is None:
            content = self.responder(body)
        cut = any(b.get(_CUT) for b in content)
        content = [
            {**b, "id": f"toolu_{next(self._ids):04d}"}
            if b.get("type") == "tool_use" and "id" not in b
            else b
            for b in ({k: v for k, v in b.items() if k != _CUT} for b in content)
        ]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return {
            "id": f"msg_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "max_tokens" if cut else stop,
            "stop_sequence": None,
            "usage": dict(usage) if usage is not None else self._usage(body, content),
        }

    def _usage(self, body: dict[str, Any], content: Content) -> dict[str, int]:
        system = body.get("system", "")
        blocks = system if isinstance(system, list) else []
        marked = [i for i, b in enumerate(blocks) if "cache_control" in b]
        prefix = ""
        if marked:  # the tools come before the system prompt in the cached prefix
            prefix = json.dumps(body.get("tools", [])) + "".join(b["text"] for b in blocks[: marked[-1] + 1])
        cacheable = len(prefix) // 4
        with self._lock:
            digest = hashlib.sha256(prefix.encode()).hexdigest()
            seen = digest in self._cached_prefixes
            self._cached_prefixes.add(digest)
        return {
            "input_tokens": max(1, len(json.dumps(body)) // 4 - cacheable),  # the uncached rest only
            "output_tokens": max(1, len(json.dumps(content)) // 4),
            "cache_creation_input_tokens": 0 if seen else cacheable,
            "cache_read_input_tokens": cacheable if seen else 0,
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
                result: dict[str, Any] = {"type": "errored", "error": error_body(500)}
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
                    index = len(fake.requests) - 1
                    fault = fake._faults.popleft() if fake._faults else None
                    if fault is None:
                        fault = next((f for match, f in fake._standing if match(body)), None)
                fake.outcomes[index] = "ok" if fault is None else fault.kind or str(fault.status)
                key = self.headers.get("x-api-key") or self.headers.get("authorization", "").removeprefix(
                    "Bearer "
                )
                if fault is not None:
                    self._play(fault, body)
                elif key != fake.api_key:
                    send(self, 401, error_body(401))
                elif not self.headers.get("anthropic-version"):
                    send(self, 400, error_body(400, "anthropic-version: header is required"))
                elif self.path == "/v1/messages/batches":
                    batch_id = f"msgbatch_{next(fake._ids):04d}"
                    fake.batches[batch_id] = {"requests": body["requests"], "polls": 0}
                    send(self, 200, fake._batch(batch_id))
                elif self.path != "/v1/messages":
                    send(self, 404, error_body(404))
                else:
                    send(self, 200, fake._message(body))

            def _play(self, fault: Fault, body: dict[str, Any]) -> None:
                if fault.kind is None:
                    send(
                        self,
                        fault.status,
                        error_body(fault.status, fault.message),
                        retry_after=fault.retry_after,
                    )
                elif fault.kind == "reset":
                    reset_connection(self)
                elif fault.kind == "timeout":
                    stall(self, fault.stall_seconds, fake._closing)
                elif fault.kind == "truncated":
                    send_truncated(self, json.dumps(fake._message(body, fake.responder(body))).encode())
                elif fault.kind == "malformed_json":
                    send_malformed_json(self)
                elif fault.kind == "malformed_tool_input":
                    # Some gateways pass the arguments as a JSON string; this one is cut short too.
                    name = (body.get("tools") or [{"name": "tool"}])[0]["name"]
                    send(self, 200, fake._message(body, tool_use(name, '{"entities": [{"name": ')))
                else:  # empty_completion
                    send(self, 200, fake._message(body, []))

            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")  # v1 messages batches <id> [results]
                if len(parts) < 4 or parts[3] not in fake.batches:
                    send(self, 404, error_body(404))
                elif len(parts) == 5 and parts[4] == "results":
                    send(self, 200, fake._batch_results(parts[3]), content_type="application/binary")
                else:
                    fake.batches[parts[3]]["polls"] += 1
                    send(self, 200, fake._batch(parts[3]))

            def log_message(self, *_: object) -> None:
                pass

        return Handler
