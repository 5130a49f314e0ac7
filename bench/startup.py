"""Benchmark: how fast `serve` starts and answers its first query, on the sample corpus; prints JSON.

    python bench/startup.py [--home DIR] [--strategy hybrid] [--starts 2]

Builds an offline index of ``data/sample`` in a temporary home (or uses ``--home``), then starts
``python -m graphunified_query serve --port 0`` as a real subprocess ``--starts`` times. Each
start is timed from the process launch to the first 200 from ``/health``; the first start of a
generation also writes the snapshot cache (``cache/snapshot/``), later starts map it. After each
start the first and second ``/retrieve`` (two different questions, so no cache answers) report
the engine's own ``retrieval_latency_ms``, every core strategy's first retrieval is timed, and
``snapshot_rss_mb`` is the server process's resident memory after those queries.

``cli_first_ask_retrieval_ms``: a first question in a fresh ``python -m graphunified_query ask``
process with the default (routed) strategy, as a user types it: the engine's retrieval latency,
routing included (median of ``--cli-asks`` processes, each on another question).

The servers and ``ask`` processes run ``python -m`` from the current folder, which Python puts
first on the import path: to time another checkout (``PYTHONPATH=...``), run from a neutral folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data/sample"
QUESTIONS = (
    "Who founded the Hale Mill?",
    "Which river floods Millbrook?",
    "What connects the Kestrel Dam to Eastfold?",
    "Who designed the Harrowgate bridge?",
    "When was the archive catalogued?",
    "What do the people of Millbrook do?",
    "Which organizations worked on the flood defences?",
    "Where is the museum?",
)
OFFLINE_SETTINGS = "embedding:\n  provider: local\nllm:\n  provider: offline\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--home", type=Path, help="an indexed home (default: index data/sample into a temp one)"
    )
    parser.add_argument("--strategy", default="hybrid", help="strategy of the first and second retrieval")
    parser.add_argument("--starts", type=int, default=2, help="server starts (the first writes the cache)")
    parser.add_argument("--cli-asks", type=int, default=3, help="fresh `ask` processes timed (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as scratch:
        home = args.home.resolve() if args.home else build_sample(Path(scratch) / "home")
        starts = [start(home, args.strategy) for _ in range(max(args.starts, 1))]
        asks = [cli_first_ask(home, QUESTIONS[n % len(QUESTIONS)]) for n in range(args.cli_asks)]
    last = starts[-1]
    result = {
        "benchmark": "serve start-up and first queries on the sample corpus",
        "home": str(home) if args.home else "a temporary offline index of data/sample",
        "strategy": args.strategy,
        "serve_ready_s": last["serve_ready_s"],
        "first_retrieval_ms": last["first_retrieval_ms"],
        "second_retrieval_ms": last["second_retrieval_ms"],
        "snapshot_rss_mb": last["rss_mb"],
        "cli_first_ask_retrieval_ms": statistics.median(a["retrieval_ms"] for a in asks) if asks else None,
        "starts": starts,
        "cli_first_asks": asks,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end",
    }
    print(json.dumps(result, indent=2))


def build_sample(home: Path) -> Path:
    home.mkdir(parents=True)
    (home / "settings.yaml").write_text(OFFLINE_SETTINGS, encoding="utf-8")
    env = {**os.environ, "DAGSTER_HOME": str(home / "dagster")}
    command = [
        sys.executable,
        "-m",
        "graphunified_assets",
        "index",
        "--input",
        str(SAMPLE),
        "--home",
        str(home),
    ]
    _say(f"indexing {SAMPLE} into {home}")
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return home


def start(home: Path, strategy: str) -> dict[str, Any]:
    """One server start: time to the first /health 200, the first queries, the process's RSS."""
    command = [sys.executable, "-m", "graphunified_query", "serve", "--home", str(home), "--port", "0"]
    launched = time.perf_counter()
    server = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        base = _address(server)
        while True:  # the socket listens before the first request is answered: poll until 200
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=30) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                time.sleep(0.01)
        ready = time.perf_counter() - launched
        first, second = (_retrieve(base, q, strategy) for q in QUESTIONS[:2])
        per_strategy = {}
        for question, name in zip(
            QUESTIONS[2:], ("naive", "graphrag_local", "lightrag", "hipporag", "expanded"), strict=False
        ):
            per_strategy[name] = _retrieve(base, question, name)
        routed = _retrieve(base, QUESTIONS[-1], "auto")
        return {
            "serve_ready_s": round(ready, 2),
            "first_retrieval_ms": first["retrieval_ms"],
            "first_request_ms": first["request_ms"],
            "second_retrieval_ms": second["retrieval_ms"],
            "first_retrieval_ms_per_strategy": {k: v["retrieval_ms"] for k, v in per_strategy.items()},
            "first_auto_retrieval_ms": routed["retrieval_ms"],
            "rss_mb": _rss_mb(server.pid),
        }
    finally:
        server.terminate()
        server.wait(30)


def cli_first_ask(home: Path, question: str) -> dict[str, Any]:
    """One `ask` in a fresh process, default strategy, retrieval only: its reported retrieval time,
    and whether the process imported spaCy (``-X importtime`` lists every module imported)."""
    command = [
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "graphunified_query",
        "ask",
        question,
        "--home",
        str(home),
    ]
    launched = time.perf_counter()
    done = subprocess.run(
        [*command, "--retrieve-only", "--json"], capture_output=True, text=True, check=False, timeout=300
    )
    wall = time.perf_counter() - launched
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    response = json.loads(done.stdout)  # one strategy: the response itself
    meta = response["metadata"]
    return {
        "question": question,
        "strategy": response["strategy"],
        "retrieval_ms": meta["retrieval_latency_ms"],
        "process_s": round(wall, 2),
        "router_rule": meta.get("router_features", {}).get("rule"),
        "spacy_imported": re.search(r"\|\s+spacy$", done.stderr, re.MULTILINE) is not None,
    }


def _address(server: subprocess.Popen[str]) -> str:
    """The URL the server prints once it listens ("serving HOME on http://127.0.0.1:PORT")."""
    assert server.stderr is not None
    for line in server.stderr:
        found = re.search(r"on (http://\S+) ", line)
        if found:
            return found.group(1)
    raise SystemExit(f"serve exited ({server.wait()}) before listening")


def _retrieve(base: str, question: str, strategy: str) -> dict[str, float]:
    body = json.dumps({"question": question, "strategy": strategy}).encode()
    request = urllib.request.Request(f"{base}/retrieve", body, {"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer = json.load(reply)
    return {
        "retrieval_ms": answer["metadata"]["retrieval_latency_ms"],
        "request_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
