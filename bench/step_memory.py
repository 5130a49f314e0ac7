"""Benchmark: peak RSS and time of the graph stage's heavy step functions on an existing home.

    python bench/step_memory.py --home /tmp/scale/home --out /tmp/graph-rss/after [--compare DIR]
        [--steps graph_elements,graph,communities,graph_vectors,report_vectors] [--embed cache]

A full build runs every step in one process, so its peak RSS is the largest step's. This runs the
step functions themselves on a built home's tables (read only), each in a fresh subprocess, and
prints one JSON object: per step, RSS before it (inputs loaded), its peak (``/proc`` sampled every
10 ms, and ``ru_maxrss``), the step's own share (peak minus before) and wall time; for the sharded
vector steps also each op's (plan, every shard, commit) peak RSS and seconds, under ``ops``. Output tables
are written under ``--out``; ``--compare DIR`` checks them against an earlier run's, cell for cell.

Resolution runs without name vectors (``--embed none``) or with the home's embedder, its vectors
from the home's embedding cache (``--embed cache``); relationship keywords come from a cheap
deterministic stand-in for spaCy's theme phrases: both the same before and after a change, so the
figures compare the data handling, not the models. The vector steps (``graph_vectors``,
``report_vectors``) always embed through the home's cache, so on a built home they measure
fetching and writing the vectors; their LanceDB tables are compared like the others.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from global_stage import RssSampler, _rss_kb

from graphunified_query.core.layout import HomeLayout

STEPS = ("graph_elements",)


def _rss_mb() -> float:
    return _rss_kb() / 1024


def _phrases(texts: list[str]) -> list[list[str]]:
    """Stand-in for spaCy's theme phrases: deterministic, cheap, keeps the data flow the same."""
    return [
        [" ".join(t.lower().split()[i : i + 2]) for i in range(0, min(len(t.split()), 6), 2)] for t in texts
    ]


def _read_extractions(home: Path) -> pa.Table:
    layout = HomeLayout.at(home)
    paths = sorted(layout.partition_dir("extractions").glob("*.parquet"))
    try:  # the grouped reader, where this checkout has it
        from graphunified_query.core.stores.parquet import read_partitions
    except ImportError:
        return pq.ParquetDataset([str(p) for p in paths]).read()  # what the IO manager did
    return read_partitions(paths)


def _graph_elements(home: Path, embed: str) -> Callable[[], dict[str, pa.Table]]:
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from graphunified_assets.lib.graph.graph_elements import build_graph_elements
    from graphunified_query.core.providers.fused_embedder import primary_embedder

    table = _read_extractions(home)
    embedder = GraphUnifiedResource(home=str(home)).embedder() if embed == "cache" else None
    describer = primary_embedder(embedder) if embedder is not None else None
    names: dict[str, object] = {}
    try:  # names resolved with the calibrated variant (code before it resolved with `describer`)
        from graphunified_query.core.providers.fused_embedder import calibrated_embedder
    except ImportError:
        pass
    else:
        if embedder is not None:
            names["embed_names"] = calibrated_embedder(embedder).embed

    def run() -> dict[str, pa.Table]:
        try:
            from graphunified_assets.lib.extraction.extraction_rows import ExtractionRows
        except ImportError:
            rows = table.to_pylist()  # what the asset did
        else:
            rows = ExtractionRows(table)
        elements = build_graph_elements(
            rows,
            summarize_above=3,
            embed=describer.embed if describer is not None else None,
            phrases=_phrases,
            **names,
        )
        return {
            "entities": elements.entities,
            "relationships": elements.relationships,
            "facts": elements.facts,
        }

    return run


def _asset(
    name: str, inputs: tuple[str, ...], outputs: tuple[str, ...], vectors: tuple[str, ...] = ()
) -> Callable[[Path, str], Callable[[], dict[str, pa.Table]]]:
    """A global asset called as Dagster would, in a scratch home holding copies of ``home``'s
    ``inputs`` tables (so it builds from scratch; ``home`` is never written) and its cache folder
    (linked: the vector steps read their cached embeddings from it and add what is missing).
    ``outputs`` are parquet tables it writes, ``vectors`` LanceDB tables."""

    def prepare(home: Path, embed: str) -> Callable[[], dict[str, pa.Table]]:
        import dagster as dg

        from graphunified_assets.defs.assets import communities, graph, graph_vectors, report_vectors
        from graphunified_assets.defs.resources import GraphUnifiedResource

        scratch = HomeLayout.at(Path(tempfile.mkdtemp(prefix=f"step-memory-{name}-")))
        scratch.tables.mkdir(parents=True)
        if (home / "settings.yaml").exists():
            shutil.copy(home / "settings.yaml", scratch.home / "settings.yaml")
        (scratch.home / "cache").symlink_to((home / "cache").resolve())
        for table in inputs:
            shutil.copy(HomeLayout.at(home).table_path(table), scratch.table_path(table))
        asset = {
            "graph": graph.graph,
            "communities": communities.communities,
            "graph_vectors": graph_vectors.graph_vectors,
            "report_vectors": report_vectors.report_vectors,
        }[name]
        resource = GraphUnifiedResource(home=str(scratch.home))

        def run() -> dict[str, pa.Table]:
            if name in ("graph_vectors", "report_vectors"):  # sharded: plan, shards, commit in-process
                instance = dg.DagsterInstance.ephemeral()
                result = dg.materialize([asset], resources={"graphunified": resource}, instance=instance)
                assert result.success, f"{name} failed"
                OP_SPANS.extend(_op_spans(instance, result.run_id))
            else:
                asset(dg.build_asset_context(), graphunified=resource)
            found = {out: pq.read_table(scratch.table_path(out)) for out in outputs}
            if vectors:
                import lancedb

                db = lancedb.connect(str(scratch.lancedb))
                found.update({out: db.open_table(out).to_arrow() for out in vectors})
            shutil.rmtree(scratch.home)
            return found

        return run

    return prepare


def _op_spans(instance: Any, run_id: str) -> list[tuple[str, float, float]]:
    """Each op of the run (plan, every shard, commit) with its start and end (epoch seconds)."""
    from dagster import DagsterEventType

    starts: dict[str, float] = {}
    spans = []
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or entry.step_key is None:
            continue
        if event.event_type == DagsterEventType.STEP_START:
            starts[entry.step_key] = entry.timestamp
        elif event.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
            spans.append((entry.step_key, starts.get(entry.step_key, entry.timestamp), entry.timestamp))
    return spans


OP_SPANS: list[tuple[str, float, float]] = []  # the sharded steps' ops, filled by their run()
_GRAPH = ("entities", "relationships", "facts")
PREPARE = {
    "graph_elements": _graph_elements,
    "graph": _asset("graph", _GRAPH, ("graph_edges", "synonyms")),
    "communities": _asset("communities", _GRAPH, ("communities",)),
    # The vector steps embed through the home's embedding cache (--embed is theirs always).
    "graph_vectors": _asset(
        "graph_vectors", _GRAPH, (), ("entity_vectors", "relationship_vectors", "fact_vectors")
    ),
    "report_vectors": _asset(
        "report_vectors", ("community_reports",), (), ("report_vectors", "report_point_vectors")
    ),
}


def _worker(step: str, home: Path, out: Path, embed: str) -> dict[str, float]:
    start_rss = _rss_mb()
    started = time.perf_counter()
    run = PREPARE[step](home, embed)
    load_s = time.perf_counter() - started
    before = _rss_mb()
    started = time.perf_counter()
    with RssSampler(every=0.01) as sampler:
        tables = run()
    seconds = time.perf_counter() - started
    peak = max(sampler.peak_mb(), _rss_mb())
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        pq.write_table(table, out / f"{step}.{name}.parquet")
    return {
        "python_rss_mb": round(start_rss),
        "inputs_load_s": round(load_s, 1),
        "rss_with_inputs_mb": round(before),
        "peak_rss_mb": round(peak),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "step_rss_mb": round(peak - before),
        "step_s": round(seconds, 1),
        **{f"{name}_rows": table.num_rows for name, table in tables.items()},
        # A sharded step's ops in one process: what each holds at its peak, and its time.
        **(
            {
                "ops": {
                    key: {"peak_rss_mb": sampler.peak_mb(start, end), "seconds": round(end - start, 1)}
                    for key, start, end in OP_SPANS
                }
            }
            if OP_SPANS
            else {}
        ),
    }


def _compare(out: Path, reference: Path, steps: list[str]) -> dict[str, bool]:
    equal = {}
    for path in sorted(reference.glob("*.parquet")):
        if path.stem.split(".")[0] in steps:
            mine = out / path.name
            equal[path.stem] = mine.exists() and pq.read_table(mine).equals(pq.read_table(path))
    return equal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/scale/home"))
    parser.add_argument("--out", type=Path, required=True, help="folder for the steps' output tables")
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--compare", type=Path, help="an earlier --out folder: are the tables equal?")
    parser.add_argument(
        "--embed",
        choices=("none", "cache"),
        default="none",
        help="graph_elements: resolve without name vectors, or with the home's embedder (cached vectors)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.home, args.out, args.embed)))
        return
    report: dict[str, object] = {"home": str(args.home), "embed": args.embed, "steps": {}}
    for step in args.steps.split(","):
        command = [
            sys.executable,
            __file__,
            "--home",
            str(args.home),
            "--out",
            str(args.out),
            "--embed",
            args.embed,
            "--worker",
            step,
        ]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        report["steps"][step] = json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[index]
    if args.compare:
        report["equal_to"] = {
            "reference": str(args.compare),
            **_compare(args.out, args.compare, args.steps.split(",")),
        }
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
