"""Dagster's Postgres event log with its connections reused across events.

The stock `PostgresEventLogStorage` opens a new connection (TCP, authentication) for every stored
event (SQLAlchemy's NullPool), and a run stores several events per step and per document:
bench/run_storage.py measured a median 128 ms an event on a loaded 2-core machine (load 16), 43 ms
with this pool and the deploy configs' asynchronous commits, and 1.3 ms with the home's pooled
SQLite (docs/benchmarks.md). This subclass keeps a small pool per process (checked before use, so a restarted
server costs one retry, not a failed step). Selected by deploy/celery/dagster.yaml and
deploy/k8s/dagster.yaml as their `event_log_storage`; `pip install 'graph-unified[celery]'` (or
`[k8s]`) brings dagster-postgres.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy.pool as db_pool
from dagster._serdes import ConfigurableClassData
from dagster_postgres import PostgresEventLogStorage
from dagster_postgres.utils import create_pg_engine, get_token_provider_from_config, pg_url_from_config

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
