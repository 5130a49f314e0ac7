"""Crash, concurrency and damaged-store scenarios against real data homes (one row each).

Each scenario indexes the harness corpus (tests/reliability/harness.py) on Claude through the
loopback fake, injects its fault, recovers the way a user would (re-run `index`, or the command
the error names), and compares every Parquet and LanceDB table with an uninterrupted run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graphunified_query.core.layout import HomeLayout  # noqa: E402
from graphunified_query.core.stores.errors import StoreDamaged  # noqa: E402
from graphunified_query.core.stores.publication import current  # noqa: E402
from graphunified_query.snapshot.loader import load_snapshot  # noqa: E402
from tests.reliability.harness import (  # noqa: E402
    gated_server,
    kill_after_answers,
    make_corpus,
    rows_lost,
    run_index,
    start_index,
    table_contents,
    write_settings,
)

Row = dict[str, Any]


def run(workdir: Path) -> list[Row]:
    corpus = make_corpus(workdir / "corpus")
    baseline = workdir / "uninterrupted"
    with gated_server() as server:
        write_settings(baseline, server)
        _must(run_index(baseline, corpus))
    expected = table_contents(baseline)
    scenarios: list[Callable[[Path, Path, dict[str, list[str]]], Row]] = [
        _kill_during_extraction,
        _kill_during_table_write,
        _two_concurrent_rebuilds,
        _ask_during_rebuild,
        _truncated_parquet,
        _deleted_lance_table,
    ]
    rows = []
    for scenario in scenarios:
        home = workdir / scenario.__name__.strip("_")
        started = time.perf_counter()
        row = scenario(home, corpus, expected)
        rows.append({**row, "seconds": round(time.perf_counter() - started, 1)})
    return rows


def _kill_during_extraction(home: Path, corpus: Path, expected: dict[str, list[str]]) -> Row:
    with gated_server(open_for=3) as server:
        write_settings(home, server)
        child = start_index(home, corpus)
        answered = set(server.answered[: kill_after_answers(child, server, home)])
        before = len(server.bodies)
        result = run_index(home, corpus)
        repeated = sum(b in answered for b in server.sent_bodies()[before:])
    return _row("SIGKILL during extraction (after 3 answered calls)", 1, result, home, expected, repeated)


def _kill_during_table_write(home: Path, corpus: Path, expected: dict[str, list[str]]) -> Row:
    with gated_server() as server:
        write_settings(home, server)
        mark = str(home.parent / "killed-at")
        child = start_index(home, corpus, GU_KILL_ON_RENAME="entities", GU_KILL_MARK=mark)
        child.communicate(timeout=600)
        answered = set(server.sent_bodies())
        before = len(server.bodies)
        result = run_index(home, corpus)
        repeated = sum(b in answered for b in server.sent_bodies()[before:])
    injected = int(child.returncode == -9)
    return _row("SIGKILL while writing entities.parquet", injected, result, home, expected, repeated)


def _two_concurrent_rebuilds(home: Path, corpus: Path, expected: dict[str, list[str]]) -> Row:
    with gated_server(open_for=0) as server:
        write_settings(home, server)
        first = start_index(home, corpus)
        server.reached.wait(600)
        second = run_index(home, corpus)
        refused = second.returncode == 1 and f"pid {first.pid}" in second.stderr
        server.release()
        stdout, stderr = first.communicate(timeout=600)
    result = subprocess.CompletedProcess(first.args, first.returncode, stdout, stderr)
    row = _row("second `index` while one runs", 1, result, home, expected, 0)
    return {**row, "recovered": row["recovered"] and refused and "Traceback" not in second.stderr}


def _ask_during_rebuild(home: Path, corpus: Path, expected: dict[str, list[str]]) -> Row:
    """Readers load snapshots in a loop while `index --refresh` rewrites every global file."""
    with gated_server() as server:
        write_settings(home, server)
        _must(run_index(home, corpus))
        old = _signature(home)
        rebuild = start_index(home, corpus, "--refresh")
        seen = []
        while rebuild.poll() is None:
            seen.append(_signature(home))
        stdout, stderr = rebuild.communicate()
    new = _signature(home)
    mixed = sum(s[1:] not in (old[1:], new[1:]) for s in seen)
    result = subprocess.CompletedProcess(rebuild.args, rebuild.returncode, stdout, stderr)
    row = _row(f"reader during a rebuild ({len(seen)} loads)", len(seen), result, home, expected, 0)
    return {**row, "recovered": row["recovered"] and mixed == 0, "mixed_snapshots": mixed}


def _truncated_parquet(home: Path, corpus: Path, expected: dict[str, list[str]]) -> Row:
    def damage(h: Path) -> Path:
        generation = current(HomeLayout.at(h), rebuild_hint="")
        path = generation.table_path("entities")
        with path.open("r+b") as handle:  # the live file is the same inode: both are damaged
            handle.truncate(path.stat().st_size // 2)
        return path

    return _damaged_store("truncated entities.parquet", home, corpus, expected, damage)


def _deleted_lance_table(home: Path, corpus: Path, expected: dict[str, list[str]]) -> Row:
    def damage(h: Path) -> Path:
        path = h / "lancedb" / "fact_vectors.lance"
        shutil.rmtree(path)
        return path

    return _damaged_store("deleted LanceDB table fact_vectors", home, corpus, expected, damage)


def _damaged_store(
    fault: str, home: Path, corpus: Path, expected: dict[str, list[str]], damage: Callable[[Path], Path]
) -> Row:
    """The reader's error must name the file and the command; running that command repairs it."""
    with gated_server() as server:
        write_settings(home, server)
        _must(run_index(home, corpus))
        calls = len(server.bodies)
        damaged = damage(home)
        try:
            load_snapshot(home)
            message = ""
        except StoreDamaged as error:
            message = str(error)
        named = str(damaged) in message and f"index --home {home} --refresh" in message
        result = run_index(home, corpus, "--refresh")
        repeated = len(server.bodies) - calls  # every call was answered before: all are repeats
    row = _row(fault, 1, result, home, expected, repeated)
    return {**row, "recovered": row["recovered"] and named, "error": message}


def _row(
    fault: str,
    injected: int,
    result: subprocess.CompletedProcess[str],
    home: Path,
    expected: dict[str, list[str]],
    repeated: int,
) -> Row:
    lost = rows_lost(expected, table_contents(home)) if (home / "tables").exists() else -1
    loads = True
    try:
        load_snapshot(home)
    except StoreDamaged:
        loads = False
    return {
        "fault": fault,
        "injected": injected,
        "recovered": result.returncode == 0 and lost == 0 and loads,
        "rows_lost": lost,
        "repeated_llm_calls_after_resume": repeated,
    }


def _signature(home: Path) -> tuple[Any, ...]:
    snapshot = load_snapshot(home)
    return (
        snapshot.generation,
        tuple(sorted(snapshot.chunks.texts)),
        tuple(sorted(e["id"] for e in snapshot.entities)),
        tuple(sorted(r["id"] for r in snapshot.reports)),
        tuple(sorted(snapshot.graph.node_ids)),
    )


def _must(result: subprocess.CompletedProcess[str]) -> None:
    if result.returncode != 0:
        raise RuntimeError(f"index failed: {result.stderr[-2000:]}")


if __name__ == "__main__":  # the lead's bench/reliability/__main__.py is the entry point
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        print(json.dumps(run(Path(scratch)), indent=2))
