"""A run-history store cheap enough for thousands of partitions per run.

Dagster records one event per partition per asset (planned, then materialized), and its SQLite
event log opens and closes a new database engine for every event; closing the last connection
also checkpoints the WAL. At ~15 ms an event that bookkeeping, not the models, dominated
indexing. This subclass keeps one pooled engine per database instead, with `synchronous=NORMAL`
(safe in WAL mode against killed processes), and remembers which tables exist (the stock
`has_table` opens a fresh engine on every materialization, about a quarter of each event's cost).
Open connections leave a run's writes in the database's WAL file, so the run database file itself
no longer changes during the run; Dagster's log watcher (the run page's live event log) listens
for exactly that file, so each stored event marks it changed (a timestamp, no I/O of data).
Selected in the instance template (the repository-root `dagster.yaml`); production deployments
should use Dagster's Postgres storage instead.

Each SQLite database Dagster opens (runs, the event index, schedules, and one per run) checks, and
when new stamps, its schema version, and each check re-reads all of Dagster's ~90 migration
scripts: ~45 ms, 13 times for a first small `index`. The scripts cannot change while a process
runs, so `share_migration_scripts` reads them once per process.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.script.revision import RevisionMap
from dagster import EventLogEntry, Field, StringSource
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sql import ALEMBIC_SCRIPTS_LOCATION
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine

_OPEN_ENGINES = 8  # run databases are written in bursts; older engines are disposed
_READ_SCRIPTS = ScriptDirectory.from_config.__func__  # type: ignore[attr-defined]
_REVISIONS: dict[str, RevisionMap] = {}  # Dagster's migration scripts, by folder, read once


def _from_config_sharing_revisions(cls: type[ScriptDirectory], config: Config) -> ScriptDirectory:
    script: ScriptDirectory = _READ_SCRIPTS(cls, config)
    if config.get_alembic_option("script_location") == ALEMBIC_SCRIPTS_LOCATION:
        # Only the parsed revisions are shared (read-only once built); the rest stays per config.
        script.revision_map = _REVISIONS.setdefault(script.dir, script.revision_map)
    return script


def share_migration_scripts() -> None:
    """Dagster's storages read their migration scripts once per process (idempotent)."""
    ScriptDirectory.from_config = classmethod(_from_config_sharing_revisions)  # type: ignore[method-assign,assignment]


share_migration_scripts()  # `dagster dev`'s processes import this module through dagster.yaml


def _tune(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """SqliteEventLogStorage with engines reused across events."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._present_tables: set[str] = set()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def config_type(cls) -> dict[str, Field]:
        return {"base_dir": Field(StringSource, is_required=False)}

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: dict[str, Any]
    ) -> PooledSqliteEventLogStorage:
        default = os.path.join(os.environ.get("DAGSTER_HOME", "."), "history", "runs")
        return cls(base_dir=config_value.get("base_dir") or default, inst_data=inst_data)

    def _engine(self, shard: str) -> Engine:
        engine = self._engines.pop(shard, None)
        if engine is None:
            engine = create_engine(
                self.conn_string_for_shard(shard),
                connect_args={"timeout": 60, "check_same_thread": False},
                pool_size=1,
                max_overflow=4,
            )
            event.listen(engine, "connect", _tune)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
        self._engines[shard] = engine
        while len(self._engines) > _OPEN_ENGINES:
            self._engines.popitem(last=False)[1].dispose()
        return engine

    def has_table(self, table_name: str) -> bool:
        # Tables are only ever added (by migrations), so a table once seen stays.
        if table_name not in self._present_tables and super().has_table(table_name):
            self._present_tables.add(table_name)
        return table_name in self._present_tables

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock, self._engine(shard).connect() as conn, conn.begin():
            yield conn

    def store_event(self, event: EventLogEntry) -> None:
        super().store_event(event)
        if event.run_id:
            # The watcher's file notification (inotify attribute change) that a closed connection's
            # checkpoint used to give; readers see the WAL's committed rows.
            with suppress(FileNotFoundError):
                os.utime(self.path_for_shard(event.run_id))

    def dispose(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()
        super().dispose()
