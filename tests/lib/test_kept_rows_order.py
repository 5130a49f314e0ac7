"""An update's merged table: its rows in order as slices of runs, written in even row groups, LZ4."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.rows_in_runs import take_in_runs
from graphunified_query.core.stores.parquet import stage_batches, write_table_atomic


def _table(rows: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"r{n}" for n in range(rows)], pa.string()),
            "chunks": pa.array([[f"c{n}"] * (n % 3) for n in range(rows)], pa.list_(pa.string())),
        }
    )


@settings(max_examples=200, deadline=None)
@given(kept=st.integers(0, 60), made=st.integers(0, 8), seed=st.integers(0, 2**32 - 1))
def test_rows_in_order_are_the_taken_rows(kept: int, made: int, seed: int) -> None:
    # As an update orders them: the kept rows in their order, the made ones slotted in anywhere.
    rng = np.random.default_rng(seed)
    order = list(range(kept))
    for row in range(kept, kept + made):
        order.insert(int(rng.integers(0, len(order) + 1)), row)
    if rng.random() < 0.2:  # any order at all
        rng.shuffle(order)
    table, indices = _table(kept + made), pa.array(order, pa.int64())
    assert take_in_runs(table, indices).equals(table.take(indices))
    assert take_in_runs(table, np.array(order, np.int64)).equals(table.take(indices))


def test_a_table_piece_is_written_in_row_groups_of_the_given_rows(tmp_path: Path) -> None:
    table = _table(10)
    pieces = [take_in_runs(table, pa.array([0, 1, 9, 2, 3, 4, 5, 6, 7, 8], pa.int64())), _table(3)]
    staged = stage_batches(tmp_path / "t.parquet", table.schema, iter(pieces), row_group_rows=4)
    written = pq.ParquetFile(staged)
    assert [written.metadata.row_group(i).num_rows for i in range(written.num_row_groups)] == [4, 4, 2, 3]
    assert written.read().equals(pa.concat_tables(pieces))


def test_stored_tables_are_lz4_compressed(tmp_path: Path) -> None:
    # Every update reads the graph tables in most steps: LZ4 decodes them 2.5x faster than zstd.
    staged = stage_batches(tmp_path / "t.parquet", _table(3).schema, iter([_table(3)]))
    write_table_atomic(tmp_path / "u.parquet", _table(3))
    for path in (staged, tmp_path / "u.parquet"):
        metadata = pq.ParquetFile(path).metadata
        assert {metadata.row_group(0).column(i).compression for i in range(metadata.num_columns)} == {"LZ4"}
