"""Benchmark: ingest, chunk, embed and extract through Dagster on a JSONL corpus; prints JSON.

    python bench/ingest.py [--corpus ../shared/eval/musique/corpus.jsonl] [--limit N] [--provider local]

Runs the real asset graph in process (as `python -m graphunified_assets index` does) into a
fresh temporary home, then re-runs it unchanged to show the incremental cost.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import tempfile
import time
from pathlib import Path

import dagster as dg
from eval_data import EVAL_ROOT

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.artifacts import CHUNKS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import read_tables
from graphunified_query.core.tables import CHUNKS_SCHEMA

DEFAULT_CORPUS = EVAL_ROOT / "musique/corpus.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=0, help="first N documents only (0 = all)")
    parser.add_argument("--provider", default="local", choices=["local", "voyage"])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gu-bench-"))
    try:
        print(json.dumps(run(args.corpus, args.limit, args.provider, work), indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(corpus: Path, limit: int, provider: str, work: Path) -> dict[str, object]:
    input_dir, home = work / "input", work / "home"
    input_dir.mkdir()
    home.mkdir()
    lines = corpus.read_text(encoding="utf-8").splitlines()
    lines = lines[:limit] if limit else lines
    (input_dir / corpus.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (home / "settings.yaml").write_text(f"embedding:\n  provider: {provider}\n")
    target = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))

    started = time.perf_counter()
    first = index(target, echo=lambda _: None)
    full_seconds = time.perf_counter() - started
    chunk_paths = sorted(HomeLayout.at(home).partition_dir(CHUNKS).glob("*.parquet"))
    n_chunks = read_tables(chunk_paths, CHUNKS_SCHEMA).num_rows

    started = time.perf_counter()
    second = index(target, echo=lambda _: None)
    rerun_seconds = time.perf_counter() - started
    return {
        "benchmark": "ingest+chunk+embed+extract (offline models)",
        "corpus": corpus.name,
        "documents": len(first.plan.pending),
        "chunks": n_chunks,
        "embedding_provider": provider,
        "seconds": round(full_seconds, 2),
        "documents_per_second": round(len(first.plan.pending) / full_seconds, 2),
        "chunks_per_second": round(n_chunks / full_seconds, 2),
        "dagster_runs": first.runs,
        "step_seconds": _step_seconds(first.run_ids),
        "unchanged_rerun_seconds": round(rerun_seconds, 2),
        "unchanged_rerun_runs": second.runs,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores (shared dev machine)",
    }


def _step_seconds(run_ids: list[str]) -> dict[str, float]:
    """Wall time of each Dagster step: model steps versus bookkeeping, from the run history."""
    instance = dg.DagsterInstance.get()
    return {
        stat.step_key: round((stat.end_time or 0) - (stat.start_time or 0), 2)
        for run_id in run_ids
        for stat in instance.get_run_step_stats(run_id)
    }


if __name__ == "__main__":
    main()
