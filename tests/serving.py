"""Serving an app with the service's own uvicorn setup (`run.make_server`) on a free loopback port."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI
from fastapi.testclient import TestClient

from graphunified_query.server import run


@contextmanager
def serving(app: FastAPI, log_level: str = "warning") -> Iterator[tuple[str, int]]:
    """(host, port) of the running server; stopped on exit."""
    listener = run.bind(port=0)
    server = run.make_server(app, log_level=log_level)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield listener.getsockname()[:2]
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def loopback_client(app: FastAPI) -> TestClient:
    """A TestClient whose requests carry a loopback Host header, which `server.allowed_hosts`
    admits by default (TestClient's own 'testserver' is refused, as any foreign name is)."""
    return TestClient(app, base_url="http://127.0.0.1")
