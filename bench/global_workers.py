"""Benchmark: the global refresh with 1 and with 2 parallel steps (the sharded vector steps spread
over them); prints one JSON object.

    python bench/global_workers.py [--corpus DIR_OR_JSONL[.gz]] [--home H] [--limit N] [--workers 1,2]
        [--rounds R] [--threads T]

Indexes ``--corpus`` (default: the MuSiQue dev corpus, first ``--limit`` passages) into ``--home``
once, then for each worker count runs the `refresh_indexes` job from the same cold state (below)
on the multiprocess executor with ``max_concurrent`` and the `models` pool both set to the count,
``--rounds`` times with the counts alternating (1, 2, 1, 2: back to back, so both see the same
load). Each step process's model threads are ``--threads`` (`embedding.local_threads`, through its
``GRAPHUNIFIED__`` variable: 1 makes the comparison about spreading alone) or, by default, the
cores divided by the steps side by side (2 cores: 2 threads with one worker, 1 each with two).
Reports each refresh's wall time, the wall span and summed
step seconds of `graph_vectors` and `report_vectors` (summed > span: shards ran side by side),
and the ratio of the summed walls of 1 to 2 workers. The machine is shared: the ratio, measured in
one run, is what counts; the load averages say how busy it was.

The cold state is the one a refresh after new documents meets: no vector table, and the embedding
cache as the document runs leave it. Those embed the chunks and, since they took that work from the
global stage, the entity names and description sentences too; emptying the whole cache would hand
the global stage their work again. So the home's document runs are run once more over an empty
cache, which is then kept (`bench-document-cache.sqlite` in the home) and put back before each run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg
from global_stage import DEFAULT_CORPUS, prepare_input

from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.executors import PRELOADED
from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.sensors import partition_range_tags
from graphunified_assets.ops import indexing
from graphunified_assets.ops.indexing import index, prepare_instance, run_job
from graphunified_assets.ops.run_home import home_tags
from graphunified_assets.ops.worker import EXECUTOR_ENV
from graphunified_query.core.artifacts import GRAPH_VECTORS_MANIFEST, REPORT_POINT_VECTORS, REPORT_VECTORS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.settings.model import ENV_PREFIX

ROOT = Path(__file__).resolve().parents[1]
SHARDED = ("graph_vectors", "report_vectors")
THREADS_ENV = f"{ENV_PREFIX}EMBEDDING__LOCAL_THREADS"  # embedding.local_threads, as every process reads it
COLD = ("entity_vectors", "relationship_vectors", "fact_vectors", REPORT_VECTORS, REPORT_POINT_VECTORS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="a folder or a .jsonl(.gz)")
    parser.add_argument("--home", type=Path, default=ROOT / "bench/.homes/global-workers")
    parser.add_argument("--limit", type=int, default=300, help="first N passages (or files) only (0 = all)")
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    parser.add_argument("--start-method", default="forkserver", choices=["forkserver", "spawn"])
    parser.add_argument("--rounds", type=int, default=1, help="each worker count this many times")
    parser.add_argument("--threads", type=int, default=0, help="model threads per step process (0: auto)")
    parser.add_argument(
        "--only-vectors", action="store_true", help="materialize the sharded vector assets alone, not the job"
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    if args.threads:  # before any step process (or the forkserver they fork from) starts
        os.environ[THREADS_ENV] = str(args.threads)
    selection = [dg.AssetKey(name) for name in SHARDED] if args.only_vectors else None
    home = args.home.resolve()
    found = run(args.corpus, home, args.limit, counts * args.rounds, args.start_method, selection)
    print(json.dumps({**found, "threads_per_step": args.threads or "auto"}, indent=2))


def run(
    corpus: Path, home: Path, limit: int, counts: list[int], start: str, selection: list[dg.AssetKey] | None
) -> dict[str, object]:
    input_dir = prepare_input(corpus, home, "local", limit)
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    if not resource.layout.index_state.exists():  # a new home: its documents (and a first refresh)
        index(resource, echo=lambda line: print(line, file=sys.stderr))
    instance = prepare_instance(resource)
    documents_cache = _document_runs_cache(resource, instance)  # in process, as `index` runs them
    os.environ[EXECUTOR_ENV] = "multiprocess"  # the step processes rebuild the job with it
    results: list[dict[str, Any]] = []
    for workers in counts:
        _cold(resource, documents_cache)
        load_before = os.getloadavg()
        found = _refresh(resource, instance, workers, start, selection)
        results.append(
            {
                **found,
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
            }
        )
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)  # each run as it ends
    walls = {n: sum(float(r["seconds"]) for r in results if r["workers"] == n) for n in set(counts)}
    low, high = min(walls), max(walls)
    return {
        "benchmark": "global refresh (cold vectors) with 1 and 2 parallel steps (multiprocess executor)",
        "corpus": str(corpus),
        "passages_limit": limit or "all",
        "start_method": start,
        "steps": "graph_vectors and report_vectors alone" if selection else "the refresh_indexes job",
        "runs": results,
        f"speedup_{high}_over_{low}": round(walls[low] / walls[high], 3),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared dev machine)",
    }


def _document_runs_cache(resource: GraphUnifiedResource, instance: dg.DagsterInstance) -> Path:
    """The embedding cache as the document runs alone fill it: emptied, then every document's run
    made again (parsing and extraction come from their caches), then copied aside once."""
    layout = resource.layout
    kept = layout.home / "bench-document-cache.sqlite"
    if kept.exists():
        return kept
    _remove_embedding_cache(layout)
    documents = sorted(instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS))
    tags = {**partition_range_tags(documents[0], documents[-1]), **home_tags(layout)}
    run_job(build_definitions(resource), INDEX_DOCUMENTS, instance, tags)
    with contextlib.closing(sqlite3.connect(layout.embedding_cache)) as db:  # closed, not just committed
        db.execute("pragma wal_checkpoint(truncate)")  # its write-ahead log folded in: one file
    shutil.copyfile(layout.embedding_cache, kept)
    return kept


def _cold(resource: GraphUnifiedResource, documents_cache: Path) -> None:
    """Every graph and report vector computed again: no vector tables, and the embedding cache as
    the document runs left it."""
    layout = resource.layout
    _remove_embedding_cache(layout)
    shutil.copyfile(documents_cache, layout.embedding_cache)
    for name in COLD:
        shutil.rmtree(layout.lancedb / f"{name}.lance", ignore_errors=True)
    for name in (GRAPH_VECTORS_MANIFEST, REPORT_VECTORS):
        for path in layout.indexes.glob(f"{name}*"):
            if path.is_file() and "manifest" in path.name:
                path.unlink()


def _remove_embedding_cache(layout: HomeLayout) -> None:
    for path in layout.cache.glob(f"{layout.embedding_cache.name}*"):  # with its -wal and -shm
        path.unlink()


def _refresh(
    resource: GraphUnifiedResource,
    instance: dg.DagsterInstance,
    workers: int,
    start: str,
    selection: list[dg.AssetKey] | None,
) -> dict[str, object]:
    instance.event_log_storage.set_concurrency_slots("models", workers)  # the pool shards run in
    method = {"forkserver": {"preload_modules": [PRELOADED]}} if start == "forkserver" else {"spawn": {}}
    config = {"max_concurrent": workers, "start_method": method}
    args: Any = (REFRESH_INDEXES, resource.home, resource.input_dir)
    job = dg.build_reconstructable_job(indexing.__name__, indexing.code_location_job.__name__, args)
    started = time.perf_counter()
    with dg.execute_job(
        job,
        instance=instance,
        run_config={"execution": {"config": {"multiprocess": config}}},
        tags=home_tags(resource.layout),
        asset_selection=selection,
    ) as result:
        seconds = time.perf_counter() - started
        if not result.success:
            raise SystemExit(f"refresh with {workers} worker(s) failed: run {result.run_id}")
        run_id = result.run_id
    return {"seconds": round(seconds, 1), "workers": workers, **_sharded_steps(instance, run_id)}


def _sharded_steps(instance: dg.DagsterInstance, run_id: str) -> dict[str, object]:
    """Per sharded asset: its span (plan start to commit end), its steps' summed seconds, shards."""
    found: dict[str, object] = {}
    spans = {
        s.step_key: (float(s.start_time), float(s.end_time))
        for s in instance.get_run_step_stats(run_id)
        if s.start_time and s.end_time
    }
    for asset in SHARDED:
        steps = {key: span for key, span in spans.items() if key.startswith(f"{asset}.")}
        if not steps:
            continue
        found[asset] = {
            "span_s": round(max(e for _, e in steps.values()) - min(b for b, _ in steps.values()), 1),
            "step_seconds_sum": round(sum(e - b for b, e in steps.values()), 1),
            "shards": sum(1 for key in steps if "_shard[" in key),
            **_embedding(instance, run_id, asset),
        }
    found["all_steps_seconds_sum"] = round(sum(e - b for b, e in spans.values()), 1)
    return found


def _embedding(instance: dg.DagsterInstance, run_id: str, asset: str) -> dict[str, object]:
    """What the model computed for ``asset`` in the run, summed over its shards: distinct texts
    (two shards computing the same text at once both count it) and real and padded tokens."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=1000
    ).records
    for record in records:
        materialization = record.event_log_entry.asset_materialization
        if materialization is not None and materialization.asset_key == dg.AssetKey(asset):
            metadata = materialization.metadata
            names = ("texts_embedded", "embed_tokens", "embed_padded_tokens", "embed_batches")
            return {name: metadata[name].value for name in names if name in metadata}
    return {}


if __name__ == "__main__":
    main()
