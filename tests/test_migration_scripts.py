"""Dagster's migration scripts are read once per process, not once per SQLite database it opens
(each run has its own): graphunified_assets/ops/instance_tuning.py, share_migration_scripts."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.sql import check_alembic_revision, get_alembic_config

from graphunified_assets.ops import instance_tuning
from graphunified_assets.ops.instance_tuning import PooledSqliteEventLogStorage
from tests.test_live_run_logs import log_entry


def test_new_databases_read_the_migration_scripts_once_and_are_stamped_at_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    read = ScriptDirectory._load_revisions

    def counted(script: ScriptDirectory):  # type: ignore[no-untyped-def]
        reads.append(script.dir)
        return read(script)

    monkeypatch.setattr(ScriptDirectory, "_load_revisions", counted)
    monkeypatch.setattr(instance_tuning, "_REVISIONS", {})  # as in a fresh process
    instance_tuning.share_migration_scripts()
    SqliteRunStorage.from_local(str(tmp_path / "history"))  # the runs database
    events = PooledSqliteEventLogStorage(str(tmp_path / "runs"))  # the event index
    runs = [str(uuid.uuid4()) for _ in range(3)]
    try:
        for run_id in runs:  # one database per run, each checked and stamped
            events.store_event(log_entry(run_id, 0))
        config = get_alembic_config(sqlite_event_log.__file__)
        with events._engine(runs[-1]).connect() as connection:
            stamped, head = check_alembic_revision(config, connection)
    finally:
        events.dispose()
    assert stamped == head and head  # the shared revisions stamp what the stock ones would
    assert len(reads) == 1, reads  # without sharing: twice per new database (check, then stamp)
