"""The HTTP service facing a browser or a careless client (graphunified_query.server.guard).

Each case failed before: a foreign Host header was answered (DNS rebinding), NaN in a body gave
a 500 or a bare NaN in the answer, a lone surrogate a 500, a 21 MB body was echoed back, slow
clients held connections for a minute, and the 50th of 50 concurrent asks waited 93 s.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from graphunified_query.core.settings.server import ServerSettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.server.app import create_app
from graphunified_query.server.guard import RequestGuard, invalid_json_values
from tests.serving import serving


def _request(
    address: tuple[str, int],
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    connection = http.client.HTTPConnection(*address, timeout=60)
    try:
        connection.request(
            method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
        )
        reply = connection.getresponse()
        text = reply.read().decode()
        return reply.status, dict(reply.getheaders()), json.loads(text)  # always valid JSON
    finally:
        connection.close()


@pytest.fixture(scope="module")
def real(engine: QueryEngine) -> Iterator[tuple[str, int]]:
    with serving(create_app(engine)) as address:
        yield address


def test_a_foreign_host_header_is_refused_and_loopback_names_are_served(real: tuple[str, int]) -> None:
    status, _, body = _request(real, "GET", "/health", headers={"Host": "attacker.example.com"})
    assert status == 400 and "server.allowed_hosts" in body["detail"]
    for host in ("localhost", f"127.0.0.1:{real[1]}", f"[::1]:{real[1]}"):
        assert _request(real, "GET", "/health", headers={"Host": host})[0] == 200


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"question": "Who?", "params": {"alpha": NaN}}', ["body", "params", "alpha"]),
        (b'{"question": "Who?", "params": {"alpha": Infinity}}', ["body", "params", "alpha"]),
        (b'{"question": "Who?", "params": {"lambda_mult": -Infinity}}', ["body", "params", "lambda_mult"]),
        (b'{"question": "Who?", "params": {"alpha": 1e999}}', ["body", "params", "alpha"]),
        (b'{"question": "Who \\ud800 founded the mill?"}', ["body", "question"]),
    ],
)  # fmt: skip
def test_non_finite_numbers_and_lone_surrogates_are_a_422_naming_the_field(
    real: tuple[str, int], raw: bytes, field: list[str]
) -> None:
    status, _, body = _request(real, "POST", "/retrieve", raw)
    assert status == 422, body
    assert body["detail"][0]["loc"] == field


def test_a_body_over_the_limit_is_a_413_without_an_echo(real: tuple[str, int]) -> None:
    huge = json.dumps({"question": "x" * 300_000}).encode()
    status, _, body = _request(real, "POST", "/retrieve", huge)
    assert status == 413 and "server.max_body_bytes" in body["detail"]
    assert len(json.dumps(body)) < 1000


def _toy(settings: ServerSettings, *, seconds: float = 0.0) -> FastAPI:
    app = FastAPI()
    app.state.server_settings = settings
    app.add_middleware(RequestGuard, settings=settings)

    @app.post("/echo")
    async def echo(payload: dict[str, Any]) -> Any:
        await asyncio.sleep(seconds)
        return {"got": payload, "score": float("nan")}  # a NaN in an answer must become null

    return app


def test_responses_never_hold_a_bare_nan() -> None:
    with serving(_toy(ServerSettings())) as address:
        status, _, body = _request(address, "POST", "/echo", b'{"a": 1}')
        assert status == 200 and body == {"got": {"a": 1}, "score": None}


def test_a_full_queue_answers_503_with_retry_after_at_once() -> None:
    settings = ServerSettings(max_concurrent=1, max_queue=1)
    with serving(_toy(settings, seconds=1.5)) as address:
        results: list[tuple[int, dict[str, str]]] = []

        def ask() -> None:
            status, headers, _ = _request(address, "POST", "/echo", b"{}")
            results.append((status, headers))

        threads = [threading.Thread(target=ask) for _ in range(5)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join()
        rejected = [headers for status, headers in results if status == 503]
        assert len(rejected) == 3 and all(h.get("retry-after") for h in rejected)
        assert sorted(status for status, _ in results).count(200) == 2
        assert time.monotonic() - started < 6


def test_slow_headers_are_cut_off_and_a_slow_body_is_a_408() -> None:
    settings = ServerSettings(header_timeout_seconds=0.5, body_timeout_seconds=0.5)
    with serving(_toy(settings)) as address:
        slow = socket.create_connection(address, timeout=5)
        slow.sendall(b"POST /echo HTTP/1.1\r\nHost: localhost\r\n")  # headers never finished
        time.sleep(1.0)
        assert slow.recv(100) == b""  # closed by the server
        slow.close()
        body_late = socket.create_connection(address, timeout=5)
        body_late.sendall(
            b"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 20\r\n\r\n{"
        )
        reply = body_late.recv(1000)
        body_late.close()
        assert reply.startswith(b"HTTP/1.1 408")


def test_invalid_values_are_found_where_they_are() -> None:
    assert invalid_json_values(b'{"a": [1, {"b": NaN}]}') == (
        ["a", 1, "b"],
        "Input should be a finite number (NaN and Infinity are not allowed)",
    )
    assert invalid_json_values(b'{"a": 1.5, "b": "fine"}') is None
    assert invalid_json_values(b"not json") is None
