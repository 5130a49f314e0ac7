"""Writing an HTTP reply from a BaseHTTPRequestHandler, shared by the fake provider servers."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    payload: dict[str, Any] | bytes,
    *,
    retry_after: str | None = None,
    content_type: str = "application/json",
) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("content-type", content_type)
    handler.send_header("content-length", str(len(data)))
    if retry_after is not None:
        handler.send_header("retry-after", retry_after)
    handler.end_headers()
    handler.wfile.write(data)
