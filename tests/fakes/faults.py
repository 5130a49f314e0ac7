"""Wire-level faults the fake provider servers inject: what a flaky network or API really does.

Each fault is played on one request. HTTP-status faults answer with the API's error body; the
others break the exchange below or inside the body, as a dropped connection, a stalled server
or a proxy that cut the reply short would:

- ``reset``: the socket is closed with an RST and no reply at all;
- ``timeout``: the server stalls (``stall_seconds``) past the client's timeout, then hangs up;
- ``truncated``: a 200 whose body stops half-way although content-length promised all of it;
- ``malformed_json``: a complete 200 whose body is not JSON;
- ``malformed_tool_input``: (Anthropic) a well-formed message whose tool_use input breaks the schema;
- ``empty_completion``: a well-formed success with nothing in it (Anthropic ``content: []``,
  Voyage ``data: []``).
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Literal

FaultKind = Literal[
    "reset", "timeout", "truncated", "malformed_json", "malformed_tool_input", "empty_completion"
]
FAULT_KINDS: tuple[FaultKind, ...] = (
    "reset",
    "timeout",
    "truncated",
    "malformed_json",
    "malformed_tool_input",
    "empty_completion",
)


@dataclass(frozen=True)
class Fault:
    """One injected fault: an HTTP status (with its headers), or a broken exchange (``kind``)."""

    status: int = 0
    retry_after: str | None = None
    message: str | None = None
    kind: FaultKind | None = None
    stall_seconds: float = 2.0


def reset_connection(handler: BaseHTTPRequestHandler) -> None:
    """Close the client's socket with an RST (SO_LINGER 0), without a byte of reply."""
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.close_connection = True
    handler.connection.close()


def stall(handler: BaseHTTPRequestHandler, seconds: float, closing: threading.Event) -> None:
    """Say nothing for ``seconds`` (cut short when the server shuts down), then hang up."""
    closing.wait(seconds)
    reset_connection(handler)


def send_truncated(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    """A 200 promising ``len(data)`` bytes that delivers half of them, then closes."""
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data[: len(data) // 2])
    handler.wfile.flush()
    handler.close_connection = True
    handler.connection.shutdown(socket.SHUT_WR)


def send_malformed_json(handler: BaseHTTPRequestHandler) -> None:
    data = b'{"id": "broken", "content": [{"type": '  # complete per content-length, but not JSON
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
