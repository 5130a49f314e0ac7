"""Benchmark: the graph stage (graph, communities, reports, indexes) on the scale corpus; prints JSON.

    python bench/graph.py [--corpus ../shared/eval/scale/corpus.jsonl.gz] [--home bench/.homes/scale]

Indexes the corpus through the real asset graph into ``--home`` (kept, so the query benchmark can
reuse it), reports each global step's time (bench/global_stage.py profiles each step), then adds one
new document and times the whole incremental update (per-document runs plus the global refresh)
against the full build.
An existing home is reused: its full-build figures are read back from the last report.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

from eval_data import EVAL_ROOT
from global_stage import ADDED, ADDED_NAME, global_step_seconds, latest_materialization, prepare_input

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.artifacts import COMMUNITIES, ENTITIES, GRAPH_EDGES, RELATIONSHIPS
from graphunified_query.core.stores.parquet import read_table

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = EVAL_ROOT / "scale/corpus.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--home", type=Path, default=ROOT / "bench/.homes/scale")
    parser.add_argument("--provider", default="local", choices=["local", "voyage"])
    parser.add_argument("--limit", type=int, default=0, help="first N passages only (0 = all)")
    args = parser.parse_args()
    print(json.dumps(run(args.corpus, args.home.resolve(), args.provider, args.limit), indent=2))


def run(corpus: Path, home: Path, provider: str, limit: int = 0) -> dict[str, object]:
    input_dir = prepare_input(corpus, home, provider, limit)
    target = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    saved = home / "bench-full-build.json"

    started = time.perf_counter()
    first = index(target, echo=lambda _: None)
    seconds = time.perf_counter() - started
    if first.runs and len(first.plan.pending) > 1:
        full = {
            "documents": len(first.plan.pending),
            "seconds": round(seconds, 1),
            "global_step_seconds": global_step_seconds(first.run_ids),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        saved.write_text(json.dumps(full))
    full = json.loads(saved.read_text())

    (input_dir / ADDED_NAME).write_text(ADDED, encoding="utf-8")
    started = time.perf_counter()
    added = index(target, echo=lambda _: None)
    add_seconds = time.perf_counter() - started
    reports = latest_materialization("community_reports")
    communities = latest_materialization("communities")
    (input_dir / ADDED_NAME).unlink()
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
            "global_step_seconds": global_step_seconds(added.run_ids),
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


if __name__ == "__main__":
    main()
