"""Benchmark: publishing a real index to S3-compatible storage and querying it from there; JSON.

    python bench/object_store.py [--home data/eval/musique-<hash>] [--questions 20]

Works on a hard-linked copy of the home (nothing in it changes), against moto's S3 server on
127.0.0.1 (the S3 REST protocol over a socket, objects in this machine's memory and temp
files): the figures are the client side's cost (hashing, requests, LanceDB's reads), not a
real network's. Measured:

* releasing the LanceDB versions no generation reads (what `published_snapshot` does);
* the first mirror (everything uploaded) and a second one of an unchanged refresh (files
  copied server-side, no LanceDB file uploaded);
* loading the snapshot from the bucket, cold (index files downloaded) and warm, against the
  local home;
* that every strategy returns the same chunks with the same scores from both, and the
  retrieval latency of each (the snapshot is in memory either way).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import lancedb  # noqa: E402
from eval_data import EVAL_ROOT  # noqa: E402

from graphunified_assets.ops.object_mirror import mirror  # noqa: E402
from graphunified_query.core.layout import HomeLayout  # noqa: E402
from graphunified_query.core.settings.model import StorageSettings  # noqa: E402
from graphunified_query.core.stores.lance_versions import release_unused_versions  # noqa: E402
from graphunified_query.core.stores.object_store import ObjectFiles, ObjectStore  # noqa: E402
from graphunified_query.core.stores.publication import current, publish, published_lance_versions  # noqa: E402
from graphunified_query.engine.query_engine import QueryEngine  # noqa: E402
from graphunified_query.snapshot.loader import load_snapshot  # noqa: E402
from graphunified_query.strategies.registry import names  # noqa: E402
from tests.fakes.s3_server import FakeS3Server  # noqa: E402

STRATEGIES = names("core")  # the registry's six
BUCKET = "bench"


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--home", type=Path, default=_default_home())
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="graphunified-s3-bench-") as scratch, FakeS3Server() as s3:
        s3.create_bucket(BUCKET)
        environ = dict(os.environ) | s3.environ() | {"GRAPHUNIFIED_CACHE_DIR": f"{scratch}/cache"}
        home = _linked_copy(args.home, Path(scratch) / "home")
        print(json.dumps(run(home, s3, environ, _questions(args.questions)), indent=2))


def run(home: Path, s3: FakeS3Server, environ: dict[str, str], questions: list[str]) -> dict[str, Any]:
    layout, uri = HomeLayout.at(home), f"s3://{BUCKET}/corpus"
    files = ObjectFiles(ObjectStore.at(uri, StorageSettings(), environ))
    generation = current(layout, rebuild_hint="index --refresh")
    if generation.root is None:  # a home built before generations: publish its live files once
        generation = _republish(layout)
    lance_before = _megabytes(layout.lancedb)
    released = release_unused_versions(lancedb.connect(str(layout.lancedb)), published_lance_versions(layout))
    lance_after = _megabytes(layout.lancedb)
    first = mirror(layout, generation, files)
    second = mirror(layout, _republish(layout), files)

    started = time.perf_counter()
    load_snapshot(home)
    local_load = time.perf_counter() - started
    started = time.perf_counter()
    load_snapshot(uri, environ=environ)
    cold_load = time.perf_counter() - started
    started = time.perf_counter()
    remote = QueryEngine.open(uri, environ=environ)
    warm_open = time.perf_counter() - started
    local = QueryEngine.open(home, environ=environ)

    same, compared, latency = 0, 0, {"local": {}, "remote": {}}
    for strategy in STRATEGIES:
        timings: dict[str, list[float]] = {"local": [], "remote": []}
        for question in questions:
            results = {}
            for name, engine in (("local", local), ("remote", remote)):
                started = time.perf_counter()
                retrieval, _ = engine.retrieve(question, strategy, 10)
                timings[name].append((time.perf_counter() - started) * 1000)
                results[name] = [(r.chunk_id, round(r.score, 6)) for r in retrieval.results]
            compared += 1
            same += results["local"] == results["remote"]
        for name in timings:
            latency[name][strategy] = round(statistics.median(timings[name]), 1)
    keys = s3.keys(BUCKET, "corpus/")
    return {
        "benchmark": "object storage (moto S3 on 127.0.0.1)",
        "home": str(home),
        "chunks": len(local.snapshot.chunks.ids),
        "bucket_objects": len(keys),
        "bucket_mb": round(sum(keys.values()) / 1e6, 1),
        "local_lancedb_mb": {"before_release": lance_before, "after_release": lance_after},
        "lance_versions_released": sum(released.values()),
        "first_mirror": _report(first),
        "unchanged_refresh_mirror": _report(second),
        "load_seconds": {
            "local": round(local_load, 2),
            "s3_cold": round(cold_load, 2),
            "s3_warm_engine_open": round(warm_open, 2),
        },
        "identical_retrievals": f"{same}/{compared}",
        "retrieval_p50_ms": latency,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared dev machine",
    }


def _report(report: Any) -> dict[str, Any]:
    data = report.as_dict()
    data["seconds"] = round(data["seconds"], 2)
    for key in ("uploaded_bytes", "copied_bytes", "lance_bytes"):
        data[key.replace("bytes", "mb")] = round(data.pop(key) / 1e6, 1)
    return data


def _megabytes(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6, 1)


def _republish(layout: HomeLayout) -> Any:
    db = lancedb.connect(str(layout.lancedb))
    names = [p.name.removesuffix(".lance") for p in sorted(layout.lancedb.glob("*.lance"))]
    return publish(layout, {name: db.open_table(name).version for name in names})


def _linked_copy(source: Path, target: Path) -> Path:
    """The home's global files, hard-linked: publishing in the copy leaves the source untouched."""
    for part in ("tables", "indexes", "lancedb", "published"):
        if (source / part).is_dir():
            shutil.copytree(source / part, target / part, copy_function=os.link)
    for name in ("settings.yaml",):
        if (source / name).is_file():
            os.link(source / name, target / name)
    return target


def _default_home() -> Path:
    homes = sorted((ROOT / "data/eval").glob("musique-*"))
    return homes[0] if homes else ROOT / "data"


def _questions(limit: int) -> list[str]:
    path = EVAL_ROOT / "musique/questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["question"] for row in rows[:limit]]


if __name__ == "__main__":
    main()
