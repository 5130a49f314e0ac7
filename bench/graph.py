"""Benchmark: the graph stage (graph, communities, reports, indexes) on the scale corpus; prints JSON.

    python bench/graph.py [--corpus ../shared/eval/scale/corpus.jsonl.gz] [--home bench/.homes/scale]

Indexes the corpus through the real asset graph into ``--home`` (kept, so the query benchmark can
reuse it), reports each global step's time, then adds one new document and times the whole
incremental update (per-document runs plus the global refresh) against the full build.
An existing home is reused: its full-build figures are read back from the last report.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import time
from pathlib import Path

import dagster as dg

from graphunified_assets.indexing import index
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.parquet_store import read_table
from graphunified_query.tables import COMMUNITIES, ENTITIES, GRAPH_EDGES, RELATIONSHIPS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared/eval/scale/corpus.jsonl.gz"
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
)
ADDED = """# The Kestrel Lantern Society

The Kestrel Lantern Society was founded in 1921 by Ada Whitlock and Arthur Penrose in Harrowgate.
It restored the lanterns of the Harrow Valley Railway and ran the valley's winter lantern festival.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--home", type=Path, default=ROOT / "bench/.homes/scale")
    parser.add_argument("--provider", default="local", choices=["local", "voyage"])
    parser.add_argument("--limit", type=int, default=0, help="first N passages only (0 = all)")
    args = parser.parse_args()
    print(json.dumps(run(args.corpus, args.home.resolve(), args.provider, args.limit), indent=2))


def run(corpus: Path, home: Path, provider: str, limit: int = 0) -> dict[str, object]:
    input_dir = home.parent / f"{home.name}-input"
    input_dir.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    target_file = input_dir / corpus.name.removesuffix(".gz")
    if not target_file.exists():
        with gzip.open(corpus, "rt", encoding="utf-8") if corpus.suffix == ".gz" else corpus.open() as lines:
            kept = [line for n, line in enumerate(lines) if not limit or n < limit]
        target_file.write_text("".join(kept), encoding="utf-8")
    (input_dir / "added-document.md").unlink(missing_ok=True)
    (home / "settings.yaml").write_text(f"embedding:\n  provider: {provider}\n")
    target = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    saved = home / "bench-full-build.json"

    started = time.perf_counter()
    first = index(target, echo=lambda _: None)
    seconds = time.perf_counter() - started
    if first.runs and len(first.plan.pending) > 1:
        full = {
            "documents": len(first.plan.pending),
            "seconds": round(seconds, 1),
            "global_step_seconds": _global_steps(first.run_ids),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        saved.write_text(json.dumps(full))
    full = json.loads(saved.read_text())

    (input_dir / "added-document.md").write_text(ADDED, encoding="utf-8")
    started = time.perf_counter()
    added = index(target, echo=lambda _: None)
    add_seconds = time.perf_counter() - started
    reports = _materialization("community_reports")
    communities = _materialization("communities")
    (input_dir / "added-document.md").unlink()
    started = time.perf_counter()
    index(target, echo=lambda _: None)
    remove_seconds = time.perf_counter() - started
    layout = target.layout
    global_seconds = sum(full["global_step_seconds"].values())
    return {
        "benchmark": "graph + communities + reports + strategy indexes (offline models)",
        "corpus": corpus.name,
        "passages_limit": limit or "all",
        "full_build": full,
        "global_stage_seconds": round(global_seconds, 1),
        "entities": read_table(layout.table_path(ENTITIES)).num_rows,
        "relationships": read_table(layout.table_path(RELATIONSHIPS)).num_rows,
        "graph_edges": read_table(layout.table_path(GRAPH_EDGES)).num_rows,
        "communities": read_table(layout.table_path(COMMUNITIES)).num_rows,
        "add_one_document": {
            "seconds": round(add_seconds, 1),
            "dagster_runs": added.runs,
            "global_step_seconds": _global_steps(added.run_ids),
            "communities_unchanged": communities.get("unchanged"),
            "communities_after": communities.get("rows"),
            "reports_generated": reports.get("generated"),
            "reports_reused": reports.get("reused"),
            "share_of_full_build": round(add_seconds / full["seconds"], 4),
        },
        "remove_that_document_seconds": round(remove_seconds, 1),
        "peak_rss_mb_this_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared dev machine)",
    }


def _global_steps(run_ids: list[str]) -> dict[str, float]:
    instance = dg.DagsterInstance.get()
    return {
        stat.step_key: round((stat.end_time or 0) - (stat.start_time or 0), 2)
        for run_id in run_ids
        for stat in instance.get_run_step_stats(run_id)
        if stat.step_key in GLOBAL_STEPS
    }


def _materialization(asset: str) -> dict[str, object]:
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey(asset))
    if event is None or event.asset_materialization is None:
        return {}
    return {key: value.value for key, value in event.asset_materialization.metadata.items()}


if __name__ == "__main__":
    main()
