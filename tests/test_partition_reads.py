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


def test_groups_take_the_first_files_schema_as_one_read_does(tmp_path: Path) -> None:
    older, old, new = tmp_path / "older.parquet", tmp_path / "old.parquet", tmp_path / "new.parquet"
    pq.write_table(pa.table({"chunk_id": ["a"], "risk_level": ["high"]}), older)
    pq.write_table(pa.table({"chunk_id": ["b"]}), old)  # written before the column existed
    pq.write_table(pa.table({"chunk_id": ["c"], "risk_level": ["low"], "extra": [1]}), new)
    table = read_partitions([older, old, new], per_read=1)
    assert table.equals(pq.ParquetDataset([str(p) for p in (older, old, new)]).read())
    assert table.column("risk_level").to_pylist() == ["high", None, "low"]
    assert table.column_names == ["chunk_id", "risk_level"]
