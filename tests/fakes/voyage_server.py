"""A loopback HTTP server speaking Voyage AI's embeddings and rerank wire format.

The real `voyageai` SDK talks to it over a socket, so tests exercise the provider code as
shipped. Vectors are hashed bags of words: texts sharing words get similar vectors.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np

from tests.fakes.faults import Fault, FaultKind, reset_connection, send_malformed_json, send_truncated, stall
from tests.fakes.http_reply import send


def bag_of_words_vector(text: str, dimension: int) -> list[float]:
    vector = np.zeros(dimension)
    for word in text.lower().split():
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dimension] += 1.0
    if not vector.any():
        vector[0] = 1.0  # the real API never returns a zero vector
    return vector.tolist()


class FakeVoyageServer:
    """`with FakeVoyageServer() as server:` then point the SDK at `server.base_url`."""

    def __init__(self, *, dimension: int = 32, api_key: str = "test-key") -> None:
        self.dimension = dimension
        self.api_key = api_key
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._failures: deque[Fault] = deque()
        self._closing = threading.Event()  # cuts injected stalls short at shutdown
        self._standing: list[tuple[Callable[[dict[str, Any]], bool], Fault]] = []
        self.outcomes: dict[int, str] = {}  # request index -> "ok", or the fault it met
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, 0.5 s by default, per test.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def fail_next(self, status: int, times: int = 1, retry_after: float | str | None = None) -> None:
        """Answer the next `times` requests with `status` (and a retry-after header if given)."""
        header = None if retry_after is None else str(retry_after)
        with self._lock:
            self._failures.extend([Fault(status, header)] * times)

    def inject(self, kind: FaultKind, *, times: int = 1, stall_seconds: float = 2.0) -> None:
        """The next ``times`` requests meet this fault (see `tests.fakes.faults`)."""
        with self._lock:
            self._failures.extend([Fault(kind=kind, stall_seconds=stall_seconds)] * times)

    def fail_matching(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        status: int = 0,
        kind: FaultKind | None = None,
        retry_after: str | None = None,
    ) -> None:
        """Every request whose JSON body satisfies ``predicate`` meets this fault until cleared."""
        with self._lock:
            self._standing.append((predicate, Fault(status, retry_after, kind=kind, stall_seconds=2.0)))

    def clear_faults(self) -> None:
        """Forget every fault not yet played, and every standing one."""
        with self._lock:
            self._failures.clear()
            self._standing.clear()

    def __enter__(self) -> FakeVoyageServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_failure(self, body: dict[str, Any]) -> Fault | None:
        with self._lock:
            if self._failures:
                return self._failures.popleft()
            return next((f for match, f in self._standing if match(body)), None)

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"]
        data = [
            {"object": "embedding", "embedding": bag_of_words_vector(t, self.dimension), "index": i}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": tokens}}

    def _rerank(self, body: dict[str, Any]) -> dict[str, Any]:
        query = set(body["query"].lower().split())
        scores = [len(query & set(d.lower().split())) / (len(query) or 1) for d in body["documents"]]
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])[: body.get("top_k") or len(scores)]
        tokens = len(query) + sum(len(d.split()) for d in body["documents"])
        return {
            "object": "list",
            "data": [{"relevance_score": scores[i], "index": i} for i in ranked],
            "model": body["model"],
            "usage": {"total_tokens": tokens},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self
        routes = {"/v1/embeddings": fake._embeddings, "/v1/rerank": fake._rerank}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    index = len(fake.requests) - 1
                failure = fake._next_failure(body)
                fake.outcomes[index] = "ok" if failure is None else failure.kind or str(failure.status)
                route = routes.get(self.path.rstrip("/"))
                if failure is not None:
                    self._play(failure, body, route)
                elif self.headers.get("authorization", "") != f"Bearer {fake.api_key}":
                    self._send(401, {"detail": "Provided API key is invalid."})
                elif route is None:
                    self._send(404, {"detail": "Not Found"})
                else:
                    self._send(200, route(body))

            def _play(
                self,
                fault: Fault,
                body: dict[str, Any],
                route: Callable[[dict[str, Any]], dict[str, Any]] | None,
            ) -> None:
                if fault.kind is None:
                    self._send(fault.status, {"detail": "injected failure"}, fault.retry_after)
                elif fault.kind == "reset":
                    reset_connection(self)
                elif fault.kind == "timeout":
                    stall(self, fault.stall_seconds, fake._closing)
                elif fault.kind == "truncated":
                    send_truncated(self, json.dumps(route(body) if route else {}).encode())
                elif fault.kind == "malformed_json":
                    send_malformed_json(self)
                else:  # empty_completion (malformed_tool_input has no Voyage meaning: an empty reply too)
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [],
                            "model": body.get("model"),
                            "usage": {"total_tokens": 0},
                        },
                    )

            def _send(self, status: int, payload: dict[str, Any], retry_after: str | None = None) -> None:
                send(self, status, payload, retry_after=retry_after)

            def log_message(self, *_: object) -> None:
                pass  # keep pytest output clean

        return Handler
