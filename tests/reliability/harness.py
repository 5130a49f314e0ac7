"""Shared by the reliability tests and bench/reliability/crash.py: a small corpus indexed on
Claude (the loopback fake) in a child process that can be killed at a chosen moment.

Kills need no hook in production code: "after N answered calls" is decided by the fake server
(it holds every later request), "while a table is written" by an audit hook (KILL_HOOK below)
every process of the child's run installs, which SIGKILLs the process when an atomic write is
about to rename its finished temporary file over a chosen table.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pyarrow.parquet as pq

from tests.fakes.anthropic_server import FakeAnthropicServer, cooccurrence_extraction, text, tool_use

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "test-key"
NAMES = {
    "Thomas Hale": "PERSON",
    "Hale Mill": "ORGANIZATION",
    "River Harrow": "LOCATION",
    "Eastfold": "LOCATION",
    "Ada Whitlock": "PERSON",
    "Whitlock Observatory": "ORGANIZATION",
    "Millbrook": "LOCATION",
}
CORPUS = {
    "mill.md": "# Hale Mill\n\nThe Hale Mill was founded by Thomas Hale in 1862 on the River Harrow.\n",
    "hale.md": "# Thomas Hale\n\nThomas Hale was born in Eastfold in 1831. He founded the Hale Mill.\n",
    "flood.txt": "The Great Flood\nIn 1894 the River Harrow flooded Eastfold and Millbrook.\n",
    "ada.md": "# Ada Whitlock\n\nAda Whitlock founded the Whitlock Observatory near Millbrook.\n",
    "observatory.md": "# Whitlock Observatory\n\nThe Whitlock Observatory stands above the River Harrow.\n",
    "eastfold.md": "# Eastfold\n\nEastfold lies on the River Harrow, upstream of Millbrook.\n",
}

# Runs `python -m graphunified_assets ARGS`; with GU_KILL_ON_RENAME=<table> a process of it SIGKILLs
# itself when a finished temporary file of that table is about to be renamed into place (mid-write):
# the audit hook is in KILL_HOOK's sitecustomize, which every Python process of the run loads.
LAUNCHER = """
import runpy, sys
sys.argv = ["graphunified_assets", *sys.argv[1:]]
runpy.run_module("graphunified_assets", run_name="__main__", alter_sys=True)
"""
KILL_HOOK = Path(__file__).resolve().parent / "kill_on_rename"


def respond(body: dict[str, Any]) -> Any:
    tool = (body.get("tools") or [{}])[0].get("name", "")
    content = str(body["messages"][0]["content"])
    if tool == "community_report":
        first = (sorted(n for n in NAMES if n in content) or ["the valley"])[0]
        report = {
            "title": f"About {first}",
            "summary": f"A community around {first}.",
            "rating": 5,
            "rating_explanation": "Fixture.",
            "findings": [{"summary": first, "explanation": "From the fixture."}],
        }
        return tool_use(tool, report)
    if not tool:
        return text("A summary of the descriptions.")
    extraction = cooccurrence_extraction(content, NAMES)
    return tool_use(tool, extraction)


class GatedServer(FakeAnthropicServer):
    """Answers the first ``open_for`` requests, then holds every later one until `release`."""

    def __init__(self, open_for: int | None = None) -> None:
        super().__init__(self._gated, api_key=API_KEY)
        self.open_for = open_for
        self.answered: list[str] = []  # canonical bodies whose reply was produced, in order
        self.reached = threading.Event()
        self._release = threading.Event()
        self._count = 0
        self._gate = threading.Lock()

    def _gated(self, body: dict[str, Any]) -> Any:
        with self._gate:
            self._count += 1
            held = self.open_for is not None and self._count > self.open_for
        if held:
            self.reached.set()
            self._release.wait(120)
            return respond(body)  # not "answered": its client may be gone (killed) by now
        reply = respond(body)
        with self._gate:
            self.answered.append(canonical(body))
        return reply

    def release(self) -> None:
        self._release.set()

    def sent_bodies(self) -> list[str]:
        return [canonical(body) for body in self.bodies]


def canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def make_corpus(folder: Path) -> Path:
    for name, content in CORPUS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content, encoding="utf-8")
    return folder


def write_settings(home: Path, server: FakeAnthropicServer) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.yaml").write_text(
        f"embedding:\n  provider: local\nllm:\n  provider: anthropic\n  base_url: {server.base_url}\n"
        # Every community reported by the LLM, however small: the report calls are what crashes hit.
        "  max_gleanings: 0\n  max_retries: 0\n  summarize_above_tokens: 0\n",
        encoding="utf-8",
    )


def child_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VOYAGE_API_KEY", "DAGSTER_HOME")}
    env.update(ANTHROPIC_API_KEY=API_KEY, PYTHONPATH=os.pathsep.join([str(ROOT), str(KILL_HOOK)]), **extra)
    return env


def start_index(home: Path, input_dir: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "index", "--home", str(home), "--input", str(input_dir), *args],
        env=child_env(home, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def run_index(
    home: Path, input_dir: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    process = start_index(home, input_dir, *args)
    stdout, stderr = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def cached_calls(home: Path) -> int:
    path = home / "cache" / "llm.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
        try:
            return int(db.execute("select count(*) from responses").fetchone()[0])
        except sqlite3.OperationalError:  # the table is not created yet
            return 0


def kill_after_answers(process: subprocess.Popen[str], server: GatedServer, home: Path) -> int:
    """SIGKILL once the gate holds a request and every answered call is in the child's cache
    (waiting at most 20 s: a cache written only at the end never gets there). Returns the
    number of answered calls."""
    if not server.reached.wait(240):
        process.kill()
        raise AssertionError("the child never reached the gated request")
    deadline = time.monotonic() + 20
    while cached_calls(home) < len(server.answered) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    server.release()
    return len(server.answered)


def table_contents(home: Path) -> dict[str, list[str]]:
    """Every Parquet table (per-document ones merged) and LanceDB table as sorted row strings."""
    tables: dict[str, pa.Table] = {}
    root = home / "tables"
    for path in sorted(root.glob("*.parquet")):
        tables[path.stem] = pq.read_table(path)
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(folder.glob("*.parquet"))
        tables[folder.name] = pa.concat_tables([pq.read_table(f) for f in files]) if files else pa.table({})
    db = lancedb.connect(str(home / "lancedb"))
    for path in sorted((home / "lancedb").glob("*.lance")):
        tables[f"lance:{path.stem}"] = db.open_table(path.stem).to_arrow()
    return {name: sorted(_row(r) for r in table.to_pylist()) for name, table in tables.items()}


# When a row was written: differs between any two runs, interrupted or not.
VOLATILE_COLUMNS = {"indexed_at"}


def _row(row: dict[str, Any]) -> str:
    kept = {k: _stable(v) for k, v in row.items() if k not in VOLATILE_COLUMNS}
    return json.dumps(kept, sort_keys=True, default=str)


def _stable(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 5)  # vectors from the same text and model; summation order may differ
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items()}
    return value


def rows_lost(expected: dict[str, list[str]], actual: dict[str, list[str]]) -> int:
    """Rows of the uninterrupted run missing from (or changed in) the resumed one, plus extras."""
    lost = 0
    for name in expected.keys() | actual.keys():
        want, got = expected.get(name, []), actual.get(name, [])
        lost += len(set(want) ^ set(got)) + abs(len(want) - len(got))
    return lost


def visible_leftovers(home: Path) -> list[Path]:
    """Temporary or half-written files a reader could pick up (a dot-less *.tmp, say)."""
    found = [p for p in (home / "tables").rglob("*") if ".tmp" in p.name]
    found += [p for p in (home / "indexes").rglob("*") if ".tmp" in p.name or p.name.endswith(".old")]
    return found


@contextmanager
def gated_server(open_for: int | None = None) -> Iterator[GatedServer]:
    server = GatedServer(open_for)
    with server:
        try:
            yield server
        finally:
            server.release()
