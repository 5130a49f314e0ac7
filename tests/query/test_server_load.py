"""The HTTP service under load and hostile bodies (graphunified_query.server.guard).

Each case failed before: `/health` waited in the query queue (503 in bursts, 4.6-7.2 s
otherwise); a kept-alive connection sending its next request a byte at a time was never closed
(3,000 of them held the server 60 s); a 2,000-deep JSON body was an HTTP 500.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
from typing import Annotated, Any

from fastapi import Body, FastAPI

from graphunified_query.core.settings.server import ServerSettings
from graphunified_query.server.guard import MAX_JSON_DEPTH, RequestGuard, json_depth
from tests.serving import serving


def _toy(settings: ServerSettings, seconds: float = 0.0) -> FastAPI:
    app = FastAPI()
    app.state.server_settings = settings
    app.add_middleware(RequestGuard, settings=settings)

    @app.post("/echo")
    async def echo(payload: Annotated[Any, Body()]) -> Any:
        await asyncio.sleep(seconds)
        return {"got": payload}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _post(address: tuple[str, int], path: str, body: bytes) -> tuple[int, Any]:
    connection = http.client.HTTPConnection(*address, timeout=30)
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        connection.close()


def test_a_2000_deep_json_body_is_a_422_naming_the_depth() -> None:
    with serving(_toy(ServerSettings())) as address:
        status, body = _post(address, "/echo", b"[" * 2000 + b"]" * 2000)
        assert status == 422, body
        assert body["detail"][0]["loc"] == ["body"] and "2000 levels deep" in body["detail"][0]["msg"]
        nested = b'{"a": ' * MAX_JSON_DEPTH + b"1" + b"}" * MAX_JSON_DEPTH
        assert _post(address, "/echo", nested)[0] == 200  # as deep as allowed still passes


def test_json_depth_skips_brackets_inside_strings_in_linear_time() -> None:
    assert json_depth(b'{"a": "[[[\\"{", "b": [[1]]}') == 3
    started = time.perf_counter()
    assert json_depth(b'"' + b'\\"' * 500_000) == 0  # one unclosed string: no rescan from each quote
    assert time.perf_counter() - started < 2.0


def test_health_is_answered_while_the_query_queue_is_full() -> None:
    settings = ServerSettings(max_concurrent=1, max_queue=0)
    with serving(_toy(settings, seconds=3.0)) as address:
        slow = threading.Thread(target=_post, args=(address, "/echo", b"{}"))
        slow.start()
        time.sleep(0.5)  # the one slot is taken, no queue: a queued request would be a 503
        assert _post(address, "/echo", b"{}")[0] == 503
        started = time.monotonic()
        connection = http.client.HTTPConnection(*address, timeout=30)
        connection.request("GET", "/health")
        assert connection.getresponse().status == 200
        assert time.monotonic() - started < 2.0  # not after the 3 s query
        connection.close()
        slow.join()


def test_a_kept_alive_connection_trickling_its_next_request_is_closed() -> None:
    settings = ServerSettings(header_timeout_seconds=0.5)
    with serving(_toy(settings)) as address:
        client = socket.create_connection(address, timeout=5)
        client.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert client.recv(1000).startswith(b"HTTP/1.1 200")
        closed = False
        try:
            for byte in b"GET /health HTTP/1.1\r\n":  # the next request, one byte at a time
                client.sendall(bytes([byte]))
                time.sleep(0.05)
            time.sleep(1.0)
            closed = client.recv(100) == b""
        except (BrokenPipeError, ConnectionResetError):  # closed while trickling
            closed = True
        client.close()
        assert closed
