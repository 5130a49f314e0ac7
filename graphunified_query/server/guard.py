"""What stands between the HTTP service and a browser or a careless client (settings.server).

A loopback service is reachable from any page the user opens once that page's name resolves to
127.0.0.1 (DNS rebinding), so the Host header must be one of `server.allowed_hosts`. A body is
read whole, within `max_body_bytes` (413) and `body_timeout_seconds` (408), and checked before
any route sees it: NaN/Infinity (which Python's JSON parser accepts) and lone surrogates are a
422 naming the field, not a 500 or a NaN echoed back. At most `max_concurrent` requests run and
`max_queue` wait; the next one is answered 503 with Retry-After at once instead of waiting
minutes. `/health` is answered outside that queue: a monitor asking whether the service is up
must not wait behind (or be refused for) the queries. A JSON body nested deeper than
`MAX_JSON_DEPTH` is a 422 before any parser recurses into it (2,000 levels were a 500).
Every response stays valid JSON: a non-finite number in one is written as null.
A connection that does not finish its next request's headers within `header_timeout_seconds`
(the first request's, or the next one's on a kept-alive connection) is closed
(`GuardedH11Protocol`), so slow or idle clients cannot hold the server's connections.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from itertools import accumulate
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from graphunified_query.core.settings.server import ServerSettings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
RETRY_AFTER_SECONDS = 2
# Requests bodies are a question and a few parameters; Python's parser recurses per level.
MAX_JSON_DEPTH = 64
UNQUEUED = frozenset({("GET", "/health")})  # cheap, and what monitors poll under load
# A string, or an unclosed one to the end: every match succeeds, so the scan stays linear.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class RequestGuard:
    """ASGI middleware applying `ServerSettings` to every HTTP request."""

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self._hosts = {host.lower().strip("[]") for host in settings.allowed_hosts}
        self._slots: asyncio.Semaphore | None = None  # created in the server's event loop
        self._waiting = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _host(scope)
        if "*" not in self._hosts and host not in self._hosts:
            await _reply(send, 400, f"Host {host!r} is not served here; add it to server.allowed_hosts")
            return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            rejected, body = await self._read_body(scope, receive)
            if rejected is not None:
                await _reply(send, *rejected)
                return
            depth = json_depth(body) if _is_json(scope) else 0
            if depth > MAX_JSON_DEPTH:
                deep = f"JSON nested {depth} levels deep; at most {MAX_JSON_DEPTH} are accepted"
                await _reply(
                    send, 422, [{"type": "value_error", "loc": ["body"], "msg": deep, "input": None}]
                )
                return
            invalid = invalid_json_values(body) if _is_json(scope) else None
            if invalid is not None:
                await _reply(send, 422, [{"type": "value_error", "loc": ["body", *invalid[0]],
                                          "msg": invalid[1], "input": None}])  # fmt: skip
                return
            receive = _replay(body, receive)
        if (scope["method"], scope["path"]) in UNQUEUED:
            await self.app(scope, receive, _finite_json(send))
            return
        slots = self._slots = self._slots or asyncio.Semaphore(self.settings.max_concurrent)
        if slots.locked() and self._waiting >= self.settings.max_queue:
            await _reply(
                send,
                503,
                f"{self.settings.max_concurrent} requests are running and {self._waiting} waiting "
                f"(server.max_queue); retry in {RETRY_AFTER_SECONDS} s",
                [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())],
            )
            return
        self._waiting += 1
        try:
            await slots.acquire()
        finally:
            self._waiting -= 1
        try:
            await self.app(scope, receive, _finite_json(send))
        finally:
            slots.release()

    async def _read_body(self, scope: Scope, receive: Receive) -> tuple[tuple[int, str] | None, bytes]:
        limit = self.settings.max_body_bytes
        too_large = (413, f"the request body is over {limit} bytes (server.max_body_bytes)")
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return too_large, b""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.body_timeout_seconds
        parts: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0))
            except TimeoutError:
                slow = f"the request body did not arrive within {self.settings.body_timeout_seconds} s"
                return (408, f"{slow} (server.body_timeout_seconds)"), b""
            if message["type"] == "http.disconnect":
                return (400, "the client disconnected before sending the whole body"), b""
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return too_large, b""
            parts.append(chunk)
            if not message.get("more_body", False):
                return None, b"".join(parts)


def json_depth(body: bytes) -> int:
    """How deep a JSON body's arrays and objects nest, in linear time without parsing it."""
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(accumulate(1 if c in b"[{" else -1 for c in brackets), default=0)


class _NonFinite(float):
    """A NaN or infinite number as parsed, marked so its place in the document can be named."""


def invalid_json_values(body: bytes) -> tuple[list[str | int], str] | None:
    """(path, reason) of the first NaN/Infinity or lone surrogate in a JSON body; None if none.

    A body that is not JSON at all is left to the route's own validation (422 json_invalid).
    """

    def number(text: str) -> float:
        value = float(text)
        return value if math.isfinite(value) else _NonFinite(value)

    try:
        document = json.loads(body, parse_constant=lambda c: _NonFinite(c), parse_float=number)
    except ValueError:
        return None
    return _first_invalid(document, [])


def _first_invalid(value: Any, path: list[str | int]) -> tuple[list[str | int], str] | None:
    if isinstance(value, _NonFinite):
        return path, "Input should be a finite number (NaN and Infinity are not allowed)"
    if isinstance(value, str) and _has_lone_surrogate(value):
        return path, "String contains a lone surrogate (an unpaired \\ud800-\\udfff escape)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and _has_lone_surrogate(key):
            return [*path, key.encode("utf-8", "replace").decode()], "Key contains a lone surrogate"
        if (found := _first_invalid(item, [*path, key])) is not None:
            return found
    return None


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _finite_json(send: Send) -> Send:
    """Rewrite a JSON response holding NaN/Infinity (invalid JSON) with null in their place."""
    start: Message | None = None
    parts: list[bytes] = []

    async def wrapped(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            if b"json" not in headers.get(b"content-type", b""):
                await send(message)
                return
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        parts.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = b"".join(parts)
        if b"NaN" in body or b"Infinity" in body:
            body = _without_non_finite(body)
        kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({**start, "headers": [*kept, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    return wrapped


def _without_non_finite(body: bytes) -> bytes:
    try:
        document = json.loads(body, parse_constant=lambda _: None)
    except ValueError:
        return body
    return json.dumps(_finite(document)).encode("utf-8")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _host(scope: Scope) -> str:
    raw = (_header(scope, b"host") or "").strip().lower()
    if raw.startswith("["):  # [::1]:8765
        return raw[1 : raw.find("]")] if "]" in raw else raw
    return raw.rsplit(":", 1)[0] if raw.count(":") == 1 else raw


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _is_json(scope: Scope) -> bool:
    return "json" in (_header(scope, b"content-type") or "application/json")


def _replay(body: bytes, then: Receive) -> Receive:
    """The body already read, once; afterwards the connection's own events (a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await then()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _reply(
    send: Send, status: int, detail: object, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"detail": detail}).encode("utf-8")
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    *(headers or [])],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def guarded_protocol(header_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol closing a connection whose request headers take too long.

    uvicorn's own keep-alive timer stops at the first byte of the next request, so a client
    sending a byte now and then held a connection for ever: the deadline here runs from the
    connection's start and from each response's end until the next request's headers are in.
    """

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_header_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_header_deadline()

        def _arm_header_deadline(self) -> None:
            if not self.transport.is_closing():
                self.loop.call_later(header_timeout, self._headers_overdue, self.cycle)

        def _headers_overdue(self, cycle_then: object) -> None:
            # Still the cycle of then (none, or the finished one): no new request's headers arrived.
            if self.cycle is cycle_then and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
