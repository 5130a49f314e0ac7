"""`python -m graphunified_query serve`: load the index once, then serve it over HTTP with uvicorn."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Mapping

import uvicorn
from fastapi import FastAPI

from graphunified_query.core.settings.model import SettingsError
from graphunified_query.core.settings.server import ServerSettings
from graphunified_query.core.stores.parquet import StoreError  # IndexNotBuilt, StoreDamaged, ObjectStoreError
from graphunified_query.server.guard import guarded_protocol

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def serve(
    home: str | os.PathLike[str] = "data",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    environ: Mapping[str, str] = os.environ,
) -> int:
    """Serve until interrupted; 2 with the CLI's one-line error when the index cannot be loaded."""
    from graphunified_query.engine.query_engine import (
        QueryEngine,  # numpy, spaCy: only once the arguments parse
    )
    from graphunified_query.server.app import create_app

    try:
        app = create_app(QueryEngine.open(home, environ=environ))
        listener = bind(host, port)
    except (StoreError, SettingsError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not is_loopback(host):
        print(
            f"warning: serving on {host}, beyond this machine: whoever reaches it can query the index "
            "and spend its LLM budget; there is no authentication.",
            file=sys.stderr,
        )
    app.state.service.warm_router()
    address, bound_port = listener.getsockname()[:2]
    print(
        f"serving {home} on http://{_url_host(address)}:{bound_port} (the web page: /, the API: /docs)",
        file=sys.stderr,
    )
    make_server(app).run(sockets=[listener])
    return 0


def bind(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A listening socket; bound here rather than by uvicorn so port 0 reports the port it got."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((host, port), family=family)


def make_server(app: FastAPI, log_level: str = "info") -> uvicorn.Server:
    settings: ServerSettings = getattr(app.state, "server_settings", ServerSettings())
    config = uvicorn.Config(
        app,
        log_level=log_level,
        timeout_graceful_shutdown=10,
        http=guarded_protocol(settings.header_timeout_seconds),  # slow headers: connection closed
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=16_384,  # request line and headers
    )
    return uvicorn.Server(config)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: assume it reaches beyond this machine
        return False


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address
