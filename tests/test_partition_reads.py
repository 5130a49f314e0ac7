"""Per-document files read a group at a time: the same table as one read, in the given order."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from graphunified_query.parquet_store import read_partitions


def test_grouped_reads_equal_one_read_in_path_order(tmp_path: Path) -> None:
    paths = []
    for i in (3, 1, 4, 0, 2):  # not sorted: the caller's order is kept
        path = tmp_path / f"doc-{i}.parquet"
        pq.write_table(pa.table({"chunk_id": [f"c{i}a", f"c{i}b"], "n": [i, i]}), path)
        paths.append(path)
    table = read_partitions(paths, per_read=2)
    assert table.equals(pq.ParquetDataset([str(p) for p in paths]).read())
    assert table.column("chunk_id").to_pylist()[:4] == ["c3a", "c3b", "c1a", "c1b"]
    assert table.column("chunk_id").num_chunks == 3  # one compacted chunk per group of files


def test_a_group_written_before_a_column_existed_reads_as_nulls(tmp_path: Path) -> None:
    old, new = tmp_path / "old.parquet", tmp_path / "new.parquet"
    pq.write_table(pa.table({"chunk_id": ["a"]}), old)
    pq.write_table(pa.table({"chunk_id": ["b"], "risk_level": ["low"]}), new)
    table = read_partitions([old, new], per_read=1)
    assert table.column("risk_level").to_pylist() == [None, "low"]
