"""Benchmark: a corpus through the real asset graph, every global step profiled; prints one JSON object.

    python bench/global_stage.py [--corpus DIR_OR_JSONL[.gz]] [--home H] [--limit N]

Builds ``--corpus`` (default: the MuSiQue dev corpus) into ``--home`` with the offline models, then
adds one new document and removes it again, each an incremental `index`. Reports ``full_build_s``,
``add_one_s``, ``remove_one_s``, ``peak_rss_mb`` and, for every global step of each run, its wall
time, peak RSS (sampled) and the numbers its materializations report: rows, texts requested,
distinct and embedded. A home seeded with a copy of an ``extractions.sqlite`` only keeps NER
cached while every embedding is measured. An already built home is reused: its full-build figures
are read back from ``bench-full-build.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import threading
import time
from pathlib import Path
from typing import TextIO

import dagster as dg
from eval_data import EVAL_ROOT

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.artifacts import COMMUNITIES, ENTITIES, FACTS, GRAPH_EDGES, RELATIONSHIPS
from graphunified_query.core.stores.parquet import read_table

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = EVAL_ROOT / "musique/corpus.jsonl"
GLOBAL_STEPS = (
    "entities",  # the multi-asset step is named after its op: graph_elements
    "graph_elements",
    "graph",
    "communities",
    "community_reports",
    "graph_vectors",
    "chunk_vectors",
    "bm25_index",
    "ppr_graph",
    "report_vectors",
    "chunk_similarity",
    "published_snapshot",
)
ADDED = """# The Kestrel Lantern Society

The Kestrel Lantern Society was founded in 1921 by Ada Whitlock and Arthur Penrose in Harrowgate.
It restored the lanterns of the Harrow Valley Railway and ran the valley's winter lantern festival.
"""
ADDED_NAME = "added-document.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="a folder or a .jsonl(.gz)")
    parser.add_argument("--home", type=Path, default=ROOT / "bench/.homes/global-stage")
    parser.add_argument("--provider", default="local", choices=["local", "voyage"])
    parser.add_argument("--limit", type=int, default=0, help="first N passages (or files) only (0 = all)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="add/remove cycles (the first after an upgrade warms caches)"
    )
    args = parser.parse_args()
    result = run(args.corpus, args.home.resolve(), args.provider, args.limit, args.rounds)
    print(json.dumps(result, indent=2))


def run(corpus: Path, home: Path, provider: str, limit: int = 0, rounds: int = 1) -> dict[str, object]:
    input_dir = prepare_input(corpus, home, provider, limit)
    target = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    saved = home / "bench-global-stage.json"
    load_before = os.getloadavg()
    with RssSampler() as rss:
        first, seconds = _timed(target)
        if first.runs and len(first.plan.pending) > 1:
            full = {
                "full_build_s": round(seconds, 1),
                "documents": len(first.plan.pending),
                "peak_rss_mb": rss.peak_mb(),
                "steps": step_breakdown(first.run_ids, rss),
            }
            saved.write_text(json.dumps(full))
        full = json.loads(saved.read_text()) if saved.exists() else _graph_bench_build(home)
        cycles = []
        for _ in range(max(1, rounds)):
            rss.reset()
            (input_dir / ADDED_NAME).write_text(ADDED, encoding="utf-8")
            added, add_seconds = _timed(target)
            add_peak = rss.peak_mb()
            (input_dir / ADDED_NAME).unlink()
            removed, remove_seconds = _timed(target)
            cycles.append((added, add_seconds, add_peak, removed, remove_seconds))
    added, add_seconds, add_peak, removed, remove_seconds = cycles[-1]
    layout = target.layout
    return {
        "benchmark": "global stage: full build, add one document, remove it (offline models)",
        "corpus": str(corpus),
        "passages_limit": limit or "all",
        **full,
        "add_one_s": round(add_seconds, 1),
        "add_one_share_of_full_build": round(add_seconds / full["full_build_s"], 4)
        if full.get("full_build_s")
        else None,
        "add_one_peak_rss_mb": add_peak,
        "remove_one_s": round(remove_seconds, 1),
        "add_one_steps": step_breakdown(added.run_ids, rss),
        "remove_one_steps": step_breakdown(removed.run_ids, rss),
        "earlier_rounds": [
            {"add_one_s": round(cycle[1], 1), "remove_one_s": round(cycle[4], 1)} for cycle in cycles[:-1]
        ],
        "tables": {
            name: read_table(layout.table_path(name)).num_rows
            for name in (ENTITIES, RELATIONSHIPS, FACTS, GRAPH_EDGES, COMMUNITIES)
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared dev machine)",
    }


def _graph_bench_build(home: Path) -> dict[str, object]:
    """The full-build figures bench/graph.py saved when it built this home, if it did."""
    saved = home / "bench-full-build.json"
    if not saved.exists():
        return {}
    build = json.loads(saved.read_text())
    return {"full_build_s": build.get("seconds"), "peak_rss_mb": build.get("peak_rss_mb"), "from": saved.name}


def prepare_input(corpus: Path, home: Path, provider: str, limit: int = 0) -> Path:
    """The input folder beside ``home`` holding the corpus (its first ``limit`` passages or files)."""
    input_dir = home.parent / f"{home.name}-input"
    input_dir.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (input_dir / ADDED_NAME).unlink(missing_ok=True)
    if corpus.is_dir():
        files = sorted(p for p in corpus.rglob("*") if p.is_file())
        for path in files[:limit] if limit else files:
            copy = input_dir / path.relative_to(corpus)
            if not copy.exists():
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copy)
    else:
        target_file = input_dir / corpus.name.removesuffix(".gz")
        if not target_file.exists():
            with _open_text(corpus) as lines:
                kept = [line for n, line in enumerate(lines) if not limit or n < limit]
            target_file.write_text("".join(kept), encoding="utf-8")
    settings = home / "settings.yaml"
    if not settings.exists():
        settings.write_text(f"embedding:\n  provider: {provider}\n")
    return input_dir


def _open_text(path: Path) -> TextIO:
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def _timed(target: GraphUnifiedResource) -> tuple[object, float]:
    started = time.perf_counter()
    report = index(target, echo=lambda _: None)
    return report, time.perf_counter() - started


class RssSampler:
    """The resident set size of this process and its descendants (summed) every 50 ms, so each
    step's peak can be read afterwards: `index` runs each Dagster run in a child process."""

    def __init__(self, every: float = 0.05) -> None:
        self.every = every
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append((time.time(), tree_rss_kb()))

    def reset(self) -> None:
        self.samples = self.samples[-1:]

    def peak_mb(self, start: float = 0.0, end: float = float("inf")) -> float:
        inside = [kb for t, kb in self.samples if start <= t <= end]
        return round(max(inside, default=tree_rss_kb()) / 1024, 1)


def _rss_kb(pid: int | str = "self") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:  # the process ended meanwhile
        pass
    return 0


def tree_rss_kb(root: int | None = None) -> int:
    """VmRSS summed over ``root`` (default: this process) and every process descending from it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    tree = [root if root is not None else os.getpid()]
    for pid in tree:
        tree.extend(children.get(pid, []))
    return sum(_rss_kb(pid) for pid in tree)


def step_breakdown(run_ids: list[str], rss: RssSampler | None = None) -> dict[str, dict[str, object]]:
    """Per global step: wall seconds, peak RSS in its window, and its materializations' numbers."""
    instance = dg.DagsterInstance.get()
    steps: dict[str, dict[str, object]] = {}
    for run_id in run_ids:
        for stat in instance.get_run_step_stats(run_id):
            # A sharded asset's steps are `<asset>.<op>[<shard>]`: each listed under its own key.
            if stat.step_key.split(".")[0] not in GLOBAL_STEPS or stat.start_time is None:
                continue
            end = stat.end_time or time.time()
            entry: dict[str, object] = {"seconds": round(end - stat.start_time, 2)}
            if rss is not None:
                entry["peak_rss_mb"] = rss.peak_mb(stat.start_time, end)
            steps[stat.step_key] = entry
        records = instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=10_000
        ).records
        for record in records:
            event = record.event_log_entry
            materialization = event.asset_materialization
            if event.step_key not in steps or materialization is None:
                continue
            asset = materialization.asset_key.to_user_string()
            numbers = {
                key: value.value
                for key, value in materialization.metadata.items()
                if isinstance(value.value, int | float) and key != "seconds"
            }
            if numbers:
                steps[event.step_key].setdefault("assets", {})[asset] = numbers  # type: ignore[union-attr]
    return steps


def global_step_seconds(run_ids: list[str]) -> dict[str, float]:
    """Wall seconds of each global step of these runs."""
    return {step: float(entry["seconds"]) for step, entry in step_breakdown(run_ids).items()}  # type: ignore[arg-type]


def latest_materialization(asset: str) -> dict[str, object]:
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey(asset))
    if event is None or event.asset_materialization is None:
        return {}
    return {key: value.value for key, value in event.asset_materialization.metadata.items()}


if __name__ == "__main__":
    main()
