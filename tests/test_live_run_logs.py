"""The run page's live event log: Dagster's watcher must see a run's events while the run goes on,
with the pooled run-history storage as with the stock one (the pooled one used to deliver none)."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from dagster import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from graphunified_assets.ops.instance_tuning import PooledSqliteEventLogStorage

EVENTS = 6


def log_entry(run_id: str, n: int) -> EventLogEntry:
    """A run's n-th log line (bench/dagster_path.py writes the same)."""
    return EventLogEntry(
        error_info=None,
        level="INFO",
        user_message=f"step {n}",
        run_id=run_id,
        timestamp=time.time(),
        step_key=None,
        job_name="index_documents",
        dagster_event=None,
    )


@pytest.mark.parametrize("storage_class", [SqliteEventLogStorage, PooledSqliteEventLogStorage])
def test_watcher_delivers_every_event_while_the_run_writes(
    storage_class: type[SqliteEventLogStorage], tmp_path: Path
) -> None:
    writer, reader = storage_class(str(tmp_path)), storage_class(str(tmp_path))  # two processes' worth
    run_id = str(uuid.uuid4())
    writer.store_event(log_entry(run_id, 0))  # the run's database exists before the page watches it
    seen: list[str] = []
    arrived = threading.Event()

    def on_event(entry: EventLogEntry, _cursor: str) -> None:
        seen.append(entry.user_message)
        if len(seen) >= EVENTS:
            arrived.set()

    reader.watch(run_id, None, on_event)
    try:
        for n in range(1, EVENTS + 1):
            writer.store_event(log_entry(run_id, n))
            time.sleep(0.1)  # events of a run arrive over time, as a page watching it sees them
        assert arrived.wait(15), f"{storage_class.__name__}: the watcher saw {len(seen)} of {EVENTS} events"
    finally:
        reader.end_watch(run_id, on_event)
        reader.dispose()
        writer.dispose()
    assert seen[-1] == f"step {EVENTS}"
