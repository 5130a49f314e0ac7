"""A home built before the tables carried what the architecture lists (`indexed_at`, documents'
`created_at`, `filename` and `metadata`, reports' `token_count`) still answers every strategy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.registry import names

ADDED = {"indexed_at", "created_at", "metadata", "filename", "token_count"}


def test_a_home_without_the_new_columns_answers_every_strategy(built_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "older"
    shutil.copytree(built_home, home, symlinks=True)  # copies: the original's hard links are untouched
    rewritten = 0
    for path in sorted(home.rglob("*.parquet")):
        table = pq.read_table(path)
        if ADDED & set(table.column_names):
            pq.write_table(table.drop_columns(sorted(ADDED & set(table.column_names))), path)
            rewritten += 1
    assert rewritten  # the fixture home had the new columns to take away
    engine = QueryEngine.open(home, environ={})
    for strategy in names("core"):
        response = engine.ask("Who founded the mill?", strategy, retrieve_only=True)
        assert response.contexts, strategy
