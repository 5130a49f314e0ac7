"""A loopback HTTP server speaking Voyage AI's embeddings and rerank wire format.

The real `voyageai` SDK talks to it over a socket, so tests exercise the provider code as
shipped. Vectors are hashed bags of words: texts sharing words get similar vectors.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np


def bag_of_words_vector(text: str, dimension: int) -> list[float]:
    vector = np.zeros(dimension)
    for word in text.lower().split():
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dimension] += 1.0
    return vector.tolist()


class FakeVoyageServer:
    def __init__(self, *, dimension: int = 32) -> None:
        self.dimension = dimension
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._failures: deque[tuple[int, str | None]] = deque()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def fail_next(self, status: int, *, times: int = 1, retry_after: str | None = None) -> None:
        self._failures.extend([(status, retry_after)] * times)

    def __enter__(self) -> FakeVoyageServer:
        self._thread.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _respond(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/embeddings"):
            data = [
                {"object": "embedding", "embedding": bag_of_words_vector(t, self.dimension), "index": i}
                for i, t in enumerate(body["input"])
            ]
            tokens = sum(len(t.split()) for t in body["input"])
            return {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": tokens}}
        query = set(body["query"].lower().split())
        scores = [len(query & set(d.lower().split())) / (len(query) or 1) for d in body["documents"]]
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])[: body.get("top_k") or len(scores)]
        return {
            "object": "list",
            "data": [{"relevance_score": scores[i], "index": i} for i in ranked],
            "model": body["model"],
            "usage": {"total_tokens": len(query)},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if fake._failures:
                    status, retry_after = fake._failures.popleft()
                    self._send(status, {"detail": "injected failure"}, retry_after)
                elif self.headers.get("authorization", "") != "Bearer test-key":
                    self._send(401, {"detail": "Provided API key is invalid."})
                else:
                    self._send(200, fake._respond(self.path, body))

            def _send(self, status: int, payload: dict[str, Any], retry_after: str | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if retry_after is not None:
                    self.send_header("retry-after", retry_after)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:
                pass

        return Handler
