"""What a run stores in the run history per document: the bookkeeping a cluster's Postgres pays.

A document run stores, for each document, one planned and one materialization event per asset of
the document stage, and a constant number of events for the run itself; nothing else per
document (no log line, no observation). On Postgres the per-partition events are written in
batches (graphunified_assets/ops/pg_event_log.py).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml
from dagster._core.events import AssetMaterializationPlannedData, DagsterEvent, DagsterEventBatchMetadata

from graphunified_assets.defs.jobs import INDEX_DOCUMENTS
from tests.cluster_services import PG_PASSWORD, missing_services, postgres_server

ROOT = Path(__file__).resolve().parent.parent
PER_DOCUMENT = {"ASSET_MATERIALIZATION_PLANNED", "ASSET_MATERIALIZATION"}
# A document run's own events (4 steps' start, input, output, success…): 30, and 2 per step from
# the hooks that release each step's freed memory in `index`'s in-process runs (RELEASE_AFTER_STEPS):
# a constant per run, never per document.
RUN_EVENTS_AT_MOST = 40


def test_a_document_run_stores_two_events_per_asset_and_document_and_a_constant_rest(
    exported_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(exported_home / "dagster"))
    instance = dg.DagsterInstance.get()
    (run,) = [r for r in instance.get_runs() if r.job_name == INDEX_DOCUMENTS]
    per_document: dict[str, Counter[str]] = {}
    rest: Counter[str] = Counter()
    for entry in instance.all_logs(run.run_id):
        event = entry.dagster_event
        kind = event.event_type_value if event else "LOG"
        if event is not None and event.partition is not None:
            assert kind in PER_DOCUMENT, f"a {kind} event per document ({event.partition})"
            per_document.setdefault(event.partition, Counter())[kind] += 1
        else:
            rest[kind] += 1
    assets = {kinds["ASSET_MATERIALIZATION"] for kinds in per_document.values()}
    assert len(per_document) > 1 and assets == {4}, per_document  # the 4 assets of the document stage
    assert all(kinds["ASSET_MATERIALIZATION_PLANNED"] == 4 for kinds in per_document.values())
    assert sum(rest.values()) <= RUN_EVENTS_AT_MOST, rest


@pytest.mark.skipif(missing_services() is not None, reason=missing_services() or "")
def test_postgres_stores_a_runs_planned_partitions_in_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deploy/celery/dagster.yaml's event log: a run's plan of 2 assets × 20 documents, handed over
    by Dagster as one batch, is one INSERT and one upsert per asset, not 3 statements an event."""
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", PG_PASSWORD)
    with postgres_server() as postgres:
        config = yaml.safe_load((ROOT / "deploy" / "celery" / "dagster.yaml").read_text(encoding="utf-8"))
        db = config["run_storage"]["config"]["postgres_db"]
        db.update(hostname=postgres["hostname"], port=postgres["port"], db_name=postgres["db_name"])
        (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        instance = dg.DagsterInstance.from_config(str(tmp_path))
        try:
            assert os.environ.get("DAGSTER_EVENT_BATCH_SIZE")  # set by loading the storage
            run = instance.create_run_for_job(dg.GraphDefinition("plan", node_defs=[]).to_job())
            planned = [
                DagsterEvent.build_asset_materialization_planned_event(
                    "plan", "step", AssetMaterializationPlannedData(dg.AssetKey(asset), partition=f"doc-{n}")
                )
                for asset in ("chunks", "entities")
                for n in range(20)
            ]
            statements: list[str] = []
            engine: Any = instance.event_log_storage._engine  # type: ignore[attr-defined]
            sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
            for i, event in enumerate(planned):
                batch = DagsterEventBatchMetadata("plan-batch", i == len(planned) - 1)
                instance.report_dagster_event(event, run.run_id, batch_metadata=batch)
            writes = [s for s in statements if not s.lstrip().upper().startswith("SELECT")]
            assert len(writes) <= 4, writes
            stored = instance.get_records_for_run(
                run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED, limit=100
            ).records
            assert sorted((r.asset_key.path[0], r.partition_key) for r in stored) == sorted(
                (e.asset_key.path[0], e.partition) for e in planned
            )
            for asset in ("chunks", "entities"):
                (record,) = instance.get_asset_records([dg.AssetKey(asset)])
                assert record.asset_entry.last_run_id == run.run_id
        finally:
            instance.dispose()
