"""Benchmark: the Celery deployment on a MuSiQue slice, published to Ceph's S3 gateway; prints JSON.

    python bench/cluster.py [--limit 300] [--questions 10] [--record]

What tests/test_celery_cluster.py runs on the sample, here on the first ``--limit`` MuSiQue
passages, with the servers a deployment uses, all on 127.0.0.1 (tests/cluster_services.py):
Redis as the broker, PostgreSQL (fsync on) as the home's run history through
deploy/celery/dagster.yaml, two `graphunified worker` processes. Then:

1. the home is built through the workers, and the same passages in process into another home
   (each with a cache folder of its own, so both compute everything), at the same time
   (``--keep DIR`` keeps the folder; run again with it, the builds' saved figures are reused);
2. their tables are compared, and every strategy's retrieval of ``--questions`` questions;
3. a one-node Ceph cluster (deploy/ceph/one-node.sh) starts, the Celery-built home is published
   to its radosgw by `graphunified_assets publish`, and another process (this script with
   ``--read``) opens it from there, as `ask --home s3://…` does, and retrieves the same questions;
   `ask --home s3://…` itself is timed once;
4. the run history's bookkeeping: events stored per run and per document by type (from
   Postgres), what one event costs on this server (single, and in the batches Dagster hands the
   per-partition events over in), and so the bookkeeping's share of the build and its
   extrapolation to the 12.6K-passage corpus.

Load averages are in the JSON: the development machine is shared, quote them with any figure.
``--record`` also writes bench/results/records/cluster.json for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from build import DEFAULT_CORPUS, read_corpus  # noqa: E402
from eval_data import EVAL_ROOT  # noqa: E402
from run_storage import per_event_ms  # noqa: E402

from tests import cluster_services as services  # noqa: E402
from tests.cluster_services import Cluster  # noqa: E402

RECORD = ROOT / "bench" / "results" / "records" / "cluster.json"
CEPH = ROOT / "deploy" / "ceph" / "one-node.sh"
BUCKET = "graphunified"
FULL_CORPUS = 12_600  # passages of the scale corpus the extrapolation is for
_ENVIRON = threading.Lock()  # two builds start from two threads, each with its own cache folder
CHECKSUM_VARIABLE = "AWS_REQUEST_CHECKSUM_CALCULATION"  # left unset: the product must not need it


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _build(cluster: Cluster, home: Path, inputs: Path, executor: str, cache: Path) -> dict[str, Any]:
    """`index` of ``inputs`` into ``home`` → its wall time and the load around it."""
    with _ENVIRON:  # Cluster.environ passes the environment on: one cache folder per build
        os.environ["GRAPHUNIFIED_CACHE_DIR"] = str(cache)
        before, started_at = _load(), time.perf_counter()
        process = cluster.index(home, inputs, executor=executor)
    out, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"bench/cluster.py: the {executor} build failed:\n{out[-4000:]}")
    wall = round(time.perf_counter() - started_at, 1)
    return {"wall_seconds": wall, "load_before": before, "load_after": _load()}


def retrievals(location: str, questions: list[str], environ: dict[str, str]) -> dict[str, Any]:
    """Every strategy's top 10 for each question (chunk ids and scores), with the open time and
    each strategy's median latency."""
    from graphunified_query.engine.query_engine import QueryEngine
    from graphunified_query.strategies.registry import names

    started_at = time.perf_counter()
    engine = QueryEngine.open(location, environ=environ)
    opened = time.perf_counter() - started_at
    results: dict[str, list[list[Any]]] = {}
    latency: dict[str, float] = {}
    for strategy in names("core"):
        times, found = [], []
        for question in questions:
            started_at = time.perf_counter()
            retrieval, _ = engine.retrieve(question, strategy, 10)
            times.append((time.perf_counter() - started_at) * 1000)
            found.append([[r.chunk_id, round(r.score, 6)] for r in retrieval.results])
        results[strategy], latency[strategy] = found, round(statistics.median(times), 1)
    return {"open_seconds": round(opened, 2), "results": results, "p50_ms": latency}


def _same(a: dict[str, Any], b: dict[str, Any]) -> str:
    pairs = [(x, y) for s in a["results"] for x, y in zip(a["results"][s], b["results"][s], strict=True)]
    return f"{sum(x == y for x, y in pairs)}/{len(pairs)}"


@contextmanager
def ceph(folder: Path) -> Iterator[dict[str, str]]:
    """deploy/ceph/one-node.sh's cluster under ``folder``; yields its AWS_* variables."""
    started_at = time.perf_counter()
    out = subprocess.run(["bash", str(CEPH), "start", str(folder)], capture_output=True, text=True)
    if out.returncode:
        subprocess.run(["bash", str(CEPH), "stop", str(folder)], capture_output=True)
        raise SystemExit(f"bench/cluster.py: Ceph did not start:\n{out.stderr[-3000:]}")
    variables = dict(
        line.removeprefix("export ").split("=", 1)
        for line in out.stdout.splitlines()
        if line.startswith("export ")
    )
    variables["CEPH_START_SECONDS"] = f"{time.perf_counter() - started_at:.1f}"
    try:
        yield variables
    finally:
        subprocess.run(["bash", str(CEPH), "stop", str(folder)], capture_output=True)


def _create_bucket(aws: dict[str, str]) -> None:
    import pyarrow.fs as pafs

    scheme, _, host = aws["AWS_ENDPOINT_URL"].partition("://")
    pafs.S3FileSystem(
        access_key=aws["AWS_ACCESS_KEY_ID"],
        secret_key=aws["AWS_SECRET_ACCESS_KEY"],
        endpoint_override=host,
        scheme=scheme,
        region=aws["AWS_REGION"],
        allow_bucket_creation=True,
    ).create_dir(BUCKET)


def _run(args: list[str], environ: dict[str, str]) -> tuple[float, str]:
    started_at = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=environ, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"bench/cluster.py: {' '.join(args[:3])} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started_at, done.stdout


def remote(home: Path, questions: list[str], scratch: Path, local: dict[str, Any]) -> dict[str, Any]:
    """Publish ``home`` to radosgw; read it back from other processes."""
    with ceph(scratch / "ceph") as aws:
        _create_bucket(aws)
        uri = f"s3://{BUCKET}/corpus"
        environ = {k: v for k, v in os.environ.items() if k != CHECKSUM_VARIABLE and not k.startswith("AWS_")}
        environ |= {k: v for k, v in aws.items() if k.startswith("AWS_")} | {"PYTHONPATH": str(ROOT)}
        environ["GRAPHUNIFIED_CACHE_DIR"] = str(scratch / "reader-cache")
        environ["DAGSTER_PG_PASSWORD"] = services.PG_PASSWORD  # publish opens the home's instance
        publish_seconds, published = _run(
            ["-m", "graphunified_assets", "publish", "--home", str(home), "--to", uri], environ
        )
        ask_seconds, _ = _run(
            ["-m", "graphunified", "ask", questions[0], "--home", uri, "--retrieve-only"], environ
        )
        _, read = _run([str(Path(__file__)), "--read", uri, "--questions", str(len(questions))], environ)
        reader = json.loads(read)
        report = json.loads(published)
    return {
        "server": "Ceph 16 radosgw, one node (deploy/ceph/one-node.sh), 127.0.0.1",
        "ceph_start_seconds": float(aws["CEPH_START_SECONDS"]),
        "publish_seconds": round(publish_seconds, 1),
        "published": {
            k: v for k, v in report.items() if k in ("uploaded_files", "copied_files", "lance_files")
        },
        "ask_cli_seconds": round(ask_seconds, 1),
        "reader_open_seconds": reader["open_seconds"],
        "remote_p50_ms": reader["p50_ms"],
        "identical_to_local": _same(local, reader),
    }


def _events(cluster: Cluster, db: str) -> dict[str, Any]:
    """Events the home's runs stored in Postgres, by job and type; documents of the document runs."""
    import psycopg2

    conn = psycopg2.connect(
        host="127.0.0.1",
        port=cluster.postgres["port"],
        user="dagster",
        password=services.PG_PASSWORD,
        dbname=db,
    )
    with conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT r.pipeline_name, e.dagster_event_type, count(*), count(DISTINCT e.partition) "
            "FROM event_logs e JOIN runs r ON r.run_id = e.run_id GROUP BY 1, 2"
        )
        rows = cursor.fetchall()
        cursor.execute("SELECT pipeline_name, count(*) FROM runs GROUP BY 1")
        runs = dict(cursor.fetchall())
    conn.close()
    by_job: dict[str, Counter[str]] = {}
    documents: dict[str, int] = {}
    for job, kind, count, partitions in rows:
        by_job.setdefault(job, Counter())[kind or "LOG"] += count
        documents[job] = max(documents.get(job, 0), partitions)
    return {
        "runs": runs,
        "by_job": {j: dict(c.most_common()) for j, c in by_job.items()},
        "documents": documents,
    }


def _batch_ms(instance: Any, events: int) -> float:
    """Milliseconds an event, for ``events`` per-partition materializations stored as one batch."""
    import dagster as dg
    from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData
    from dagster._core.events.log import EventLogEntry

    run = instance.create_run_for_job(dg.GraphDefinition("bench_batch", node_defs=[]).to_job())
    batch = [
        EventLogEntry(
            error_info=None,
            level=10,
            user_message="",
            run_id=run.run_id,
            timestamp=time.time(),
            dagster_event=DagsterEvent(
                DagsterEventType.ASSET_MATERIALIZATION.value,
                "bench_batch",
                event_specific_data=StepMaterializationData(
                    dg.AssetMaterialization("bench_asset", partition=f"doc-{i}")
                ),
            ),
        )
        for i in range(events)
    ]
    started_at = time.perf_counter()
    instance.event_log_storage.store_event_batch(batch)
    return (time.perf_counter() - started_at) * 1000 / events


def bookkeeping(cluster: Cluster, home: Path, celery_wall: float) -> dict[str, Any]:
    import dagster as dg

    db = yaml_db(home)
    events = _events(cluster, db)
    os.environ["DAGSTER_PG_PASSWORD"] = services.PG_PASSWORD
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))  # the home's own: same server, same db
    single = per_event_ms(instance, 300)
    batched = round(_batch_ms(instance, 300), 2)
    instance.dispose()
    documents = events["documents"].get("index_documents", 0)
    per_partition = ("ASSET_MATERIALIZATION", "ASSET_MATERIALIZATION_PLANNED")
    document_events = events["by_job"].get("index_documents", {})
    batchable = sum(document_events.get(kind, 0) for kind in per_partition)
    total = sum(sum(kinds.values()) for kinds in events["by_job"].values())
    other = total - batchable
    seconds = (other * single["mean_ms"] + batchable * batched) / 1000
    unbatched = total * single["mean_ms"] / 1000
    per_document = sum(document_events.values()) / documents if documents else None
    return {
        "events_stored": total,
        "events": events,
        "documents": documents,
        "events_per_document": round(per_document, 2) if per_document else None,
        "ms_per_event": {"single": single, "batched_materializations": batched},
        "bookkeeping_seconds": round(seconds, 1),
        "bookkeeping_share_of_celery_build": round(seconds / celery_wall, 3),
        "bookkeeping_seconds_unbatched": round(unbatched, 1),
        "extrapolated_12600_minutes": {
            "unbatched": round(FULL_CORPUS * (per_document or 0) * single["mean_ms"] / 60000, 1),
            "batched": round(
                FULL_CORPUS
                * ((per_document or 0) - batchable / max(documents, 1))
                * single["mean_ms"]
                / 60000
                + FULL_CORPUS * batchable / max(documents, 1) * batched / 60000,
                1,
            ),
        },
    }


def _repoint(home: Path, postgres: dict[str, object]) -> None:
    import yaml

    path = home / "dagster" / "dagster.yaml"
    instance = yaml.safe_load(path.read_text(encoding="utf-8"))
    instance["run_storage"]["config"]["postgres_db"].update(
        hostname=postgres["hostname"], port=postgres["port"], db_name=postgres["db_name"]
    )
    path.write_text(yaml.safe_dump(instance), encoding="utf-8")


def yaml_db(home: Path) -> str:
    import yaml

    instance = yaml.safe_load((home / "dagster" / "dagster.yaml").read_text(encoding="utf-8"))
    return str(instance["run_storage"]["config"]["postgres_db"]["db_name"])


def _questions(limit: int) -> list[str]:
    path = EVAL_ROOT / "musique/questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["question"] for row in rows[:limit]]


def builds(limit: int, scratch: Path) -> dict[str, Any]:
    """Both builds, at the same time (the shared machine gives two builds more of its cores than
    one), the tables compared and the bookkeeping read from Postgres before it stops."""
    inputs = scratch / "input"
    inputs.mkdir()
    with (inputs / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for row in read_corpus(DEFAULT_CORPUS, limit):
            out.write(json.dumps(row) + "\n")
    result: dict[str, Any] = {"passages": limit, "load_start": _load()}
    servers = services.redis_server(scratch / "redis"), services.postgres_server(fsync=True)
    with services.started(*servers) as (broker, postgres):
        cluster = Cluster(broker, postgres, scratch, [])
        home_celery = cluster.home(f"celery-{uuid.uuid4().hex[:6]}")
        home_local = scratch / "in-process"
        home_local.mkdir()
        try:
            os.environ["GRAPHUNIFIED_CACHE_DIR"] = str(scratch / "cache-celery")  # the workers' too
            cluster.start_workers([home_celery, home_celery])
            with ThreadPoolExecutor(2) as pool:
                celery = pool.submit(_build, cluster, home_celery, inputs, "celery", scratch / "cache-celery")
                local = pool.submit(
                    _build, cluster, home_local, inputs, "in_process", scratch / "cache-local"
                )
                result["celery_build"], result["in_process_build"] = celery.result(), local.result()
            result["celery_build"]["steps_per_worker"] = [cluster.received(w) for w in range(2)]
        finally:
            cluster.stop_workers()
        celery_tables, local_tables = services.tables(home_celery), services.tables(home_local)
        result["tables_equal"] = celery_tables == local_tables
        result["table_rows"] = celery_tables
        result["bookkeeping"] = bookkeeping(cluster, home_celery, result["celery_build"]["wall_seconds"])
    result["homes"] = {"celery": str(home_celery), "in_process": str(home_local)}
    return result


def measure(limit: int, questions: list[str], scratch: Path) -> dict[str, Any]:
    """The builds (or, when ``scratch`` holds them from an earlier run, their saved figures),
    then the retrievals and Ceph."""
    saved = scratch / "builds.json"
    if saved.is_file():
        result = json.loads(saved.read_text(encoding="utf-8"))
    else:
        result = builds(limit, scratch)
        saved.write_text(json.dumps(result), encoding="utf-8")
    home_celery, home_local = Path(result["homes"]["celery"]), Path(result["homes"]["in_process"])
    result["questions"] = len(questions)
    environ = dict(os.environ)
    local, celery = (
        retrievals(str(home_local), questions, environ),
        retrievals(str(home_celery), questions, environ),
    )
    result["retrievals_equal"] = _same(local, celery)
    result["local_p50_ms"] = celery["p50_ms"]
    # `publish` checks the home's run history for a run in flight; the build's history was read
    # (bookkeeping) and went with its server: an empty one stands in for it.
    with services.postgres_server() as postgres:
        _repoint(home_celery, postgres)
        result["ceph"] = remote(home_celery, questions, scratch, celery)
    result["load_end"] = _load()
    return result


def _record(r: dict[str, Any]) -> dict[str, Any]:
    b, c = r["bookkeeping"], r["ceph"]
    ms, minutes = b["ms_per_event"], b["extrapolated_12600_minutes"]
    load = f"{r['load_start'][0]:.1f}–{r['load_end'][0]:.1f}"
    rows = [
        ["build through 2 Celery workers (Redis, PostgreSQL)", f"{r['celery_build']['wall_seconds']:.0f} s"],
        ["the same build in process", f"{r['in_process_build']['wall_seconds']:.0f} s"],
        ["tables equal / retrievals equal", f"{r['tables_equal']} / {r['retrievals_equal']}"],
        ["events stored in PostgreSQL (all runs)", f"{b['events_stored']}"],
        ["events per document (document run)", f"{b['events_per_document']}"],
        [
            "ms per event: single / in a batch of materializations",
            f"{ms['single']['mean_ms']:.2f} / {ms['batched_materializations']:.2f}",
        ],
        [
            "bookkeeping of the Celery build (share)",
            f"{b['bookkeeping_seconds']:.1f} s ({100 * b['bookkeeping_share_of_celery_build']:.1f} %)",
        ],
        [
            "12.6K passages: bookkeeping extrapolated, unbatched → batched",
            f"{minutes['unbatched']} → {minutes['batched']} min",
        ],
        ["one-node Ceph start", f"{c['ceph_start_seconds']:.0f} s"],
        ["publish to radosgw (`graphunified_assets publish`)", f"{c['publish_seconds']:.1f} s"],
        ["`ask --home s3://… --retrieve-only` (a new process, cold cache)", f"{c['ask_cli_seconds']:.1f} s"],
        [
            "another process: open from S3 / identical to local",
            f"{c['reader_open_seconds']} s / {c['identical_to_local']}",
        ],
        [
            "retrieval p50 local / S3 (ms)",
            ", ".join(f"{s} {r['local_p50_ms'][s]} / {c['remote_p50_ms'][s]}" for s in r["local_p50_ms"]),
        ],
    ]
    return {
        "section": "Cluster (`bench/cluster.py`)",
        "script": "bench/cluster.py",
        "intro": [
            "The Celery deployment on MuSiQue passages, every server on 127.0.0.1: Redis, PostgreSQL "
            "(fsync on) through deploy/celery/dagster.yaml, two `graphunified worker` processes; the "
            "same passages built in process for comparison; the Celery-built home published to a "
            "one-node Ceph radosgw (deploy/ceph/one-node.sh) and read back by other processes."
        ],
        "records": [
            {
                "id": "cluster-1",
                "order": 31,
                "title": f"{r['passages']} MuSiQue passages through Celery, published to Ceph radosgw",
                "script": "bench/cluster.py",
                "machine": {"cores": os.cpu_count(), "memory_gb": None, "shared": True},
                "load_average": load,
                "source": "measured",
                "before": [],
                "columns": ["figure", "value"],
                "rows": rows,
                "after": [
                    "Bookkeeping is an estimate, not a timer inside the build: events stored × the cost "
                    "of one event measured on the same server right after the build (300 events one by "
                    "one, and 300 materializations as one batch), the per-partition events of the "
                    "document run at the batched cost. The 12.6K figures scale the events per document "
                    "(the document run's own events included) to 12,600 passages. The two builds ran "
                    "at the same time on 2 shared cores: their walls measure the pair, with the load."
                ],
            }
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=300, help="first N MuSiQue passages")
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--record", action="store_true", help=f"also write {RECORD.relative_to(ROOT)}")
    parser.add_argument("--keep", type=Path, help="work here and keep it; again, reuses its builds")
    parser.add_argument("--read", metavar="URI", help=argparse.SUPPRESS)  # the reader process (step 3)
    args = parser.parse_args()
    questions = _questions(args.questions)
    if args.read:
        print(json.dumps(retrievals(args.read, questions, dict(os.environ))))
        return
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        results = measure(args.limit, questions, scratch.resolve())
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(results, indent=2))
    if args.record:
        RECORD.write_text(json.dumps(_record(results), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
