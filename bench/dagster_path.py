"""Benchmark: the Dagster path (sensor, automation, UI launch) against the CLI; prints JSON.

    python bench/dagster_path.py [--input data/sample] [--executor in_process|multiprocess] [--out FILE]

In one run on this machine, on copies of one corpus:
- ``one_document``: `index` after one new document (its index_documents run) vs the run that
  new_documents_sensor launches under `dagster dev` for the same new document;
- ``refresh``: `index --refresh` vs refresh_indexes launched through the webserver's GraphQL API
  (what the UI's Materialize/Launchpad does), plus the refresh declarative automation started;
- ``live_logs``: events Dagster's run-log watcher delivers while a run writes them, stock vs
  pooled event-log storage (what the run page shows before the run ends);
- ``event_log_storage``: `index` of the corpus into fresh homes with the stock vs the pooled storage.
Run times are Dagster's own (start to end of the run); ``created_to_end`` adds queueing and the
run worker's start. The load average is recorded: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dagster as dg  # noqa: E402
import yaml  # noqa: E402
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage  # noqa: E402

from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES  # noqa: E402
from graphunified_assets.ops.instance_tuning import PooledSqliteEventLogStorage  # noqa: E402
from tests.test_live_run_logs import log_entry  # noqa: E402
from tests.ui.dagster_dev import (  # noqa: E402
    INSTANCE_TEMPLATE,
    cli_index,
    dagster_dev,
    duration,
    last_run_seconds,
    wait,
)

NEW_DOCUMENT = (
    "bench-new-document.md",
    "# The Eastfold Ferry\n\nThe Eastfold Ferry crossed the River Harrow from 1871 until the Great "
    "Flood of 1894 destroyed its landing. Margaret Hale ran it for the Hale Mill's workers.\n",
)


def copy_corpus(corpus: Path, inputs: Path) -> None:
    shutil.copytree(corpus, inputs)


def add_new_document(inputs: Path) -> None:
    (inputs / NEW_DOCUMENT[0]).write_text(NEW_DOCUMENT[1], encoding="utf-8")


def cli_figures(corpus: Path, work: Path) -> dict[str, Any]:
    home, inputs = work / "cli", work / "cli-input"
    copy_corpus(corpus, inputs)
    initial = cli_index(home, inputs)
    add_new_document(inputs)
    one = cli_index(home, inputs)
    one_run = last_run_seconds(home, INDEX_DOCUMENTS)
    refresh = cli_index(home, inputs, refresh=True)
    return {
        "initial_index_seconds": initial,
        "one_document": {"index_command_seconds": one, "run_seconds": one_run},
        "refresh": {
            "index_refresh_command_seconds": refresh,
            "run_seconds": last_run_seconds(home, REFRESH_INDEXES),
        },
    }


def dagster_figures(corpus: Path, work: Path, executor: str) -> dict[str, Any]:
    home, inputs = work / "ui", work / "ui-input"
    copy_corpus(corpus, inputs)
    cli_index(home, inputs)  # the same indexed state as the CLI's home before its new document
    with dagster_dev(home, inputs, work / "dagster-dev.log", {"GRAPHUNIFIED_EXECUTOR": executor}) as server:
        add_new_document(inputs)
        sensor_tag = {"dagster/sensor_name": "new_documents_sensor"}
        sensor_run = wait("the sensor's run", lambda: server.runs(sensor_tag), 300, 2)[0]
        sensor_run = server.wait_for_run(sensor_run["runId"], 600)
        # Declarative automation then refreshes the global stage once.
        automatic = wait(
            "automation's refresh run",
            lambda: [r for r in server.runs({}) if r["creationTime"] > sensor_run["creationTime"]],
            300,
            2,
        )[-1]
        automatic = server.wait_for_run(automatic["runId"], 900)
        server.set_sensor("global_tables_automation", running=False)
        ui_refresh = server.wait_for_run(server.launch(REFRESH_INDEXES, {"graphunified/bench": "ui"}), 900)
    runs = {"sensor_one_document": sensor_run, "automatic_refresh": automatic, "ui_refresh": ui_refresh}
    failed = {name: r["status"] for name, r in runs.items() if r["status"] != "SUCCESS"}
    if failed:
        raise RuntimeError(f"runs did not succeed: {failed}; see {work / 'dagster-dev.log'}")
    return {name: duration(run) for name, run in runs.items()}


def live_log_delivery(
    storage_class: type[SqliteEventLogStorage], work: Path, events: int = 6
) -> dict[str, Any]:
    """How many of a run's events Dagster's watcher hands over while the run is still writing."""
    folder = work / f"watch-{storage_class.__name__}"
    writer, reader = storage_class(str(folder)), storage_class(str(folder))
    run_id = str(uuid.uuid4())

    writer.store_event(log_entry(run_id, 0))
    seen: list[str] = []

    def on_event(event: dg.EventLogEntry, _cursor: str) -> None:
        seen.append(event.user_message)

    reader.watch(run_id, None, on_event)
    for n in range(1, events + 1):
        writer.store_event(log_entry(run_id, n))
        time.sleep(0.2)
    time.sleep(2)  # a late notification still counts
    delivered = sum(1 for message in seen if message != "step 0")
    reader.end_watch(run_id, on_event)
    reader.dispose()
    writer.dispose()
    return {"written_during_run": events, "delivered_live": delivered}


def storage_overhead(corpus: Path, work: Path) -> dict[str, Any]:
    """`index` of the corpus with each event-log storage (same code, same machine, fresh homes)."""
    template = yaml.safe_load(INSTANCE_TEMPLATE.read_text())
    stock = {k: v for k, v in template.items() if k != "event_log_storage"}
    out: dict[str, Any] = {}
    for name, config in (("stock", stock), ("pooled", template)):
        home, inputs = work / f"storage-{name}", work / f"storage-{name}-input"
        copy_corpus(corpus, inputs)
        (home / "dagster").mkdir(parents=True)
        (home / "dagster" / "dagster.yaml").write_text(yaml.safe_dump(config))
        out[name] = {"index_command_seconds": cli_index(home, inputs)}
        out[name]["documents_run_seconds"] = last_run_seconds(home, INDEX_DOCUMENTS)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--input", type=Path, default=ROOT / "data" / "sample", help="corpus folder")
    parser.add_argument("--executor", default="in_process", choices=["in_process", "multiprocess"])
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gu-dagster-path-"))
    try:
        load_before = os.getloadavg()
        cli = cli_figures(args.input, work)
        dagster = dagster_figures(args.input, work, args.executor)
        result = {
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "load_average_before": [round(x, 2) for x in load_before],
            "corpus": str(args.input),
            "executor": args.executor,
            "cli": cli,
            "dagster": dagster,
            "ratios": {
                "sensor_one_document_vs_cli_run": round(
                    dagster["sensor_one_document"]["run_seconds"] / cli["one_document"]["run_seconds"], 2
                ),
                "ui_refresh_vs_cli_refresh_run": round(
                    dagster["ui_refresh"]["run_seconds"] / cli["refresh"]["run_seconds"], 2
                ),
                "ui_refresh_vs_index_refresh_command": round(
                    dagster["ui_refresh"]["created_to_end_seconds"]
                    / cli["refresh"]["index_refresh_command_seconds"],
                    2,
                ),
            },
            "live_logs": {
                "stock": live_log_delivery(SqliteEventLogStorage, work),
                "pooled": live_log_delivery(PooledSqliteEventLogStorage, work),
            },
            "event_log_storage": storage_overhead(args.input, work),
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
