"""Benchmark: the cost of one stored Dagster event, PostgreSQL against the home's pooled SQLite; JSON.

    python bench/run_storage.py [--events 1000] [--record]

Stores ``--events`` engine events into one run, one at a time as a run's steps do, through a
Dagster instance with the repository's dagster.yaml (pooled SQLite event log,
graphunified_assets/ops/instance_tuning.py) and through one with deploy/celery/dagster.yaml's
Postgres storage (a PostgreSQL server started on 127.0.0.1, fsync on, as the deploy config would
run). Prints milliseconds per event (median of per-event times, and the mean) and the load
average; ``--record`` also writes bench/results/records/run_storage.json for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dagster as dg  # noqa: E402

from tests.cluster_services import PG_PASSWORD, postgres_server  # noqa: E402

SYNCHRONOUS = {"options": "-c synchronous_commit=on"}  # Postgres' default, which the deploy configs turn off
RECORD = ROOT / "bench" / "results" / "records" / "run_storage.json"


def _instance(folder: Path, config: dict[str, Any]) -> dg.DagsterInstance:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return dg.DagsterInstance.from_config(str(folder))


def per_event_ms(instance: dg.DagsterInstance, events: int) -> dict[str, float]:
    run = instance.create_run_for_job(dg.GraphDefinition("bench", node_defs=[]).to_job())
    times = []
    for i in range(events):
        started = time.perf_counter()
        instance.report_engine_event(f"event {i}", run)
        times.append((time.perf_counter() - started) * 1000)
    stored = len(instance.all_logs(run.run_id))
    assert stored >= events, f"{stored} of {events} events stored"
    return {"median_ms": round(statistics.median(times), 2), "mean_ms": round(statistics.fmean(times), 2)}


def _config(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def measure(events: int) -> dict[str, Any]:
    sqlite_config = yaml.safe_load((ROOT / "dagster.yaml").read_text(encoding="utf-8"))
    postgres_config = yaml.safe_load(
        (ROOT / "deploy" / "celery" / "dagster.yaml").read_text(encoding="utf-8")
    )
    results: dict[str, Any] = {"events": events}
    with tempfile.TemporaryDirectory(prefix="graphunified-run-storage-") as scratch:
        results["sqlite_pooled"] = per_event_ms(_instance(Path(scratch) / "sqlite", sqlite_config), events)
        os.environ["DAGSTER_PG_PASSWORD"] = PG_PASSWORD
        with postgres_server(fsync=True) as postgres:
            db = postgres_config["run_storage"]["config"]["postgres_db"]  # the three stores' one mapping
            db.update(hostname=postgres["hostname"], port=postgres["port"], db_name=postgres["db_name"])
            variants = {
                # Dagster's own storage (a connection per event), each commit waiting for its flush.
                "postgres_stock": {
                    "storage": {
                        "postgres": {"postgres_db": {**db, "params": {"options": "-c synchronous_commit=on"}}}
                    }
                },
                "postgres_deploy": postgres_config,  # pooled connections, synchronous_commit off
            }
            for name, config in variants.items():
                instance = _instance(Path(scratch) / name, config)
                results[name] = per_event_ms(instance, events)
                instance.dispose()
    results["ratio_postgres_to_sqlite"] = round(
        results["postgres_deploy"]["median_ms"] / results["sqlite_pooled"]["median_ms"], 2
    )
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return results


def _cells(times: dict[str, float]) -> list[str]:
    return [f"{times['median_ms']:.2f}", f"{times['mean_ms']:.2f}"]


def _record(results: dict[str, Any]) -> dict[str, Any]:
    load = "–".join(f"{x:.1f}" for x in results["load_average"])
    return {
        "section": "Run storage (`bench/run_storage.py`)",
        "script": "bench/run_storage.py",
        "intro": [
            "What one stored Dagster event costs with the home's pooled SQLite event log and with "
            "the Celery deployment's PostgreSQL (deploy/celery/dagster.yaml, a local server on "
            "127.0.0.1, so no network time): a run of the pipeline stores a few events per step "
            "and per document."
        ],
        "records": [
            {
                "id": "run-storage-1",
                "order": 30,
                "title": f"Milliseconds per stored event, {results['events']} events into one run",
                "script": "bench/run_storage.py",
                "machine": {"cores": os.cpu_count(), "memory_gb": None, "shared": True},
                "load_average": load,
                "source": "measured",
                "before": [],
                "columns": ["event log", "median ms/event", "mean ms/event"],
                "rows": [
                    ["pooled SQLite (dagster.yaml)", *_cells(results["sqlite_pooled"])],
                    [
                        "Dagster's PostgreSQL storage (a connection per event)",
                        *_cells(results["postgres_stock"]),
                    ],
                    [
                        "deploy/celery/dagster.yaml (pooled, synchronous_commit off)",
                        *_cells(results["postgres_deploy"]),
                    ],
                ],
                "after": [f"PostgreSQL / SQLite (medians): {results['ratio_postgres_to_sqlite']}."],
            }
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--record", action="store_true", help=f"also write {RECORD.relative_to(ROOT)}")
    args = parser.parse_args()
    results = measure(args.events)
    print(json.dumps(results, indent=2))
    if args.record:
        RECORD.write_text(json.dumps(_record(results), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
