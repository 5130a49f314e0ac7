"""Dagster's Postgres event log with its connections reused across events.

The stock `PostgresEventLogStorage` opens a new connection (TCP, authentication) for every stored
event (SQLAlchemy's NullPool), and a run stores several events per step and per document:
bench/run_storage.py measured a median 128 ms an event on a loaded 2-core machine (load 16), 43 ms
with this pool and the deploy configs' asynchronous commits, and 1.3 ms with the home's pooled
SQLite (docs/benchmarks.md). This subclass keeps a small pool per process (checked before use, so a restarted
server costs one retry, not a failed step), and stores the events a run records per partition in
batches: a document run plans and materializes each of its 4 assets once per document (8 events a
document, none of them waste: they are the partitions' status in the UI), which Dagster hands over
as one batch per step output and one for the run's plan when `DAGSTER_EVENT_BATCH_SIZE` is set.
Importing this module sets it (a user's value is kept), so every process that opens such an
instance (`index`, a worker's step process, the webserver, the daemon) batches; a batch of
materializations or of planned materializations is one INSERT and one index transaction instead
of 3 statements and 2 commits an event. Selected by deploy/celery/dagster.yaml and
deploy/k8s/dagster.yaml as their `event_log_storage`; `pip install 'graph-unified[celery]'` (or
`[k8s]`) brings dagster-postgres.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy.pool as db_pool
from dagster import DagsterEventType
from dagster._core.errors import DagsterInvariantViolationError
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._serdes import ConfigurableClassData
from dagster_postgres import PostgresEventLogStorage
from dagster_postgres.utils import create_pg_engine, get_token_provider_from_config, pg_url_from_config

# Dagster buffers per-partition events up to this many before one store_event_batch call.
BATCH_SIZE_VARIABLE = "DAGSTER_EVENT_BATCH_SIZE"
os.environ.setdefault(BATCH_SIZE_VARIABLE, "1000")

POOL = {
    "isolation_level": "AUTOCOMMIT",  # as the stock engine
    "poolclass": db_pool.QueuePool,
    "pool_size": 2,
    "max_overflow": 4,
    "pool_pre_ping": True,
    "pool_recycle": 1800,
}


class PooledPostgresEventLogStorage(PostgresEventLogStorage):
    """PostgresEventLogStorage with a connection pool instead of a connection per event."""

    def __init__(self, postgres_url: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(postgres_url, *args, **kwargs)
        stock = self._engine
        self._engine = create_pg_engine(self.postgres_url, self._token_provider, **POOL)
        stock.dispose()

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> PooledPostgresEventLogStorage:
        return cls(
            pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            inst_data=inst_data,
            token_provider=get_token_provider_from_config(config_value),
        )

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Planned materializations in one INSERT as Dagster's own storage does materializations
        (which it hands on one by one otherwise); anything else as the parent stores it."""
        planned = [
            e for e in events if e.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION_PLANNED
        ]
        rest = [e for e in events if e.dagster_event_type != DagsterEventType.ASSET_MATERIALIZATION_PLANNED]
        if len(planned) > 1:
            self._store_planned_batch(planned)
        elif planned:
            rest = planned + rest
        if rest:
            super().store_event_batch(rest)

    def _store_planned_batch(self, events: Sequence[EventLogEntry]) -> None:
        with self._connect() as conn:
            result = conn.execute(
                self.prepare_insert_event_batch(events).returning(SqlEventLogStorageTable.c.id)
            )
            event_ids = [int(row[0]) for row in result.fetchall()]
        if len(event_ids) != len(events):
            raise DagsterInvariantViolationError(f"{len(event_ids)} ids stored for {len(events)} events.")
        last: dict[str, tuple[EventLogEntry, int]] = {}  # the asset table keeps each asset's latest
        for event, event_id in zip(events, event_ids, strict=True):
            last[event.get_dagster_event().asset_key.to_string()] = (event, event_id)  # type: ignore[union-attr]
        with self.index_transaction() as conn:
            self._store_asset_event_tags(conn, events, event_ids)
            for event, event_id in last.values():
                self._store_asset_event(conn, event, event_id)
