"""Benchmark: `serve` under load from 8, 16 and 32 clients; prints JSON.

    python bench/serve_load.py --home DIR [--clients 8,16,32] [--seconds 10] [--max-requests 2000]

Starts ``python -m graphunified_query serve --home DIR --port 0`` on loopback as a real
subprocess, then for each client count runs that many threads, each on its own kept-alive
connection, for ``--seconds`` (or until ``--max-requests`` in all), cycling through a mix:
``/retrieve`` (4 in 10), ``/ask`` with generation (2 in 10), ``/health`` (1 in 10) and three bad
requests (a 2,000-deep JSON body, an unknown strategy, a body that is not JSON). Per level:
requests and successful (2xx) requests per second, p50/p95/p99 latency of successful requests
and of ``/health``, the count of each status code (``error`` for a connection failure), and the
server's resident memory after the level. The home must be built (``python -m graphunified_assets
index --home DIR``); an offline home (embedding.provider: local, llm.provider: offline) measures
the service, not a provider. Quote ``uptime``'s load average with the figures.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

QUESTIONS = (
    "Who founded the Hale Mill?",
    "Where was Thomas Hale born?",
    "Which rivers flooded in 1894?",
    "What did the mill make for the railway?",
)
BAD = {
    "deep": b"[" * 2000 + b"]" * 2000,
    "unknown_strategy": json.dumps({"question": "x", "strategy": "no-such-strategy"}).encode(),
    "not_json": b"{question: x",
}
MIX = (
    "retrieve",
    "ask",
    "retrieve",
    "health",
    "retrieve",
    "deep",
    "ask",
    "retrieve",
    "unknown_strategy",
    "not_json",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--clients", default="8,16,32")
    parser.add_argument("--seconds", type=float, default=10.0, help="per client count")
    parser.add_argument("--max-requests", type=int, default=2000, help="per client count, at most")
    args = parser.parse_args()
    server, port = _start(args.home)
    try:
        for kind in ("retrieve", "ask"):  # first queries load models and caches: not part of a level
            _send(http.client.HTTPConnection("127.0.0.1", port, timeout=300), kind, QUESTIONS[0])
        levels = [
            _level(port, int(n), args.seconds, args.max_requests, server.pid) for n in args.clients.split(",")
        ]
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(json.dumps({"home": str(args.home), "load_average": os.getloadavg(), "levels": levels}, indent=2))
    return 0


def _start(home: Path) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "graphunified_query", "serve", "--home", str(home), "--port", "0"]
    # stdout (uvicorn's access log) is dropped: this script's stdout is its JSON.
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    deadline = time.monotonic() + 300
    for line in server.stderr:
        if found := re.search(r"http://127\.0\.0\.1:(\d+)", line):
            threading.Thread(target=server.stderr.read, daemon=True).start()  # drain the log
            return server, int(found.group(1))
        if time.monotonic() > deadline:
            break
    server.kill()
    raise SystemExit(f"serve did not start: {server.stderr.read()[-2000:]}")


def _level(port: int, clients: int, seconds: float, max_requests: int, pid: int) -> dict[str, Any]:
    results: list[tuple[str, int | str, float]] = []
    budget = itertools.count()
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for step in itertools.count(offset):
            if time.monotonic() > stop or next(budget) >= max_requests:
                break
            kind = MIX[step % len(MIX)]
            question = QUESTIONS[step % len(QUESTIONS)]
            started = time.perf_counter()
            try:
                status: int | str = _send(connection, kind, question)
            except (OSError, http.client.HTTPException):
                status = "error"
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            with lock:
                results.append((kind, status, time.perf_counter() - started))
        connection.close()

    began = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    ok = [s for _, status, s in results if isinstance(status, int) and 200 <= status < 300]
    health = [s for kind, status, s in results if kind == "health" and status == 200]
    return {
        "clients": clients,
        "requests": len(results),
        "seconds": round(wall, 2),
        "requests_per_second": round(len(results) / wall, 2),
        "successful_per_second": round(len(ok) / wall, 2),
        "latency_ms": _percentiles(ok),
        "health_latency_ms": _percentiles(health),
        "status_codes": dict(sorted(Counter(str(status) for _, status, _ in results).items())),
        "by_kind": {
            kind: dict(Counter(str(status) for k, status, _ in results if k == kind))
            for kind in sorted(set(MIX))
        },
        "server_rss_mb": _rss_mb(pid),
    }


def _send(connection: http.client.HTTPConnection, kind: str, question: str) -> int:
    headers = {"Content-Type": "application/json"}
    if kind == "health":
        connection.request("GET", "/health")
    elif kind in BAD:
        connection.request("POST", "/retrieve", body=BAD[kind], headers=headers)
    else:
        body = json.dumps({"question": question}).encode()
        connection.request("POST", f"/{kind}", body=body, headers=headers)
    reply = connection.getresponse()
    reply.read()
    return reply.status


def _percentiles(seconds: list[float]) -> dict[str, float | None]:
    if len(seconds) < 2:
        return {"p50": None, "p95": None, "p99": None}
    cuts = statistics.quantiles([s * 1000 for s in seconds], n=100, method="inclusive")
    return {"p50": round(cuts[49], 1), "p95": round(cuts[94], 1), "p99": round(cuts[98], 1)}


def _rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return round(int(found.group(1)) / 1024, 1) if found else None


if __name__ == "__main__":
    raise SystemExit(main())
