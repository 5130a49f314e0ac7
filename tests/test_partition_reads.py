"""Per-document files read a group at a time: the same table as one read, in the given order."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.copy_rows import CopyRows
from graphunified_assets.ops import partition_reads
from graphunified_assets.ops.partition_reads import (
    DocumentFile,
    consolidated_copy,
    document_files,
    file_stamp,
    live_row_count,
    live_rows,
    read_documents,
)
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import read_partitions


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


def _document(folder: Path, key: str, rows: int, tag: str = "") -> DocumentFile:
    path = folder / f"{key}.parquet"
    texts = [f"{key}{tag}-{n}" for n in range(rows)]
    pq.write_table(
        pa.table({"document_id": pa.array([key] * rows, pa.string()), "text": pa.array(texts, pa.string())}),
        path,
    )
    return DocumentFile(key, path, file_stamp(path))


def test_a_consolidated_read_reads_only_changed_files_and_equals_a_full_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", 2)
    copy = tmp_path / "cache" / "docs.parquet"
    files = [_document(tmp_path, f"d{n}", n % 3) for n in range(12)]  # d0, d3, ... have no rows
    first = read_documents(files, "document_id", copy)
    assert first.equals(read_partitions([f.path for f in files]))
    read: list[list[Path]] = []
    original = partition_reads.read_partitions

    def counting(paths: list[Path]) -> pa.Table:
        read.append(list(paths))
        return original(paths)

    monkeypatch.setattr(partition_reads, "read_partitions", counting)
    files[4] = _document(tmp_path, "d4", 3, tag="changed")  # rewritten: one more row, new text
    del files[7]  # removed
    files.insert(2, _document(tmp_path, "new", 2))  # added
    second = read_documents(files, "document_id", copy)
    assert read == [[tmp_path / "new.parquet", tmp_path / "d4.parquet"]]  # only the changed files
    assert second.equals(original([f.path for f in files]))
    read.clear()
    assert read_documents(files, "document_id", copy).equals(second)
    assert read == []  # nothing changed: the copy alone


def test_a_new_column_reads_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", 2)
    copy = tmp_path / "docs.parquet"
    files = [_document(tmp_path, f"d{n}", 2) for n in range(6)]
    read_documents(files, "document_id", copy)
    pq.write_table(pa.table({"document_id": ["d0"], "text": ["x"], "extra": [1]}), files[0].path)
    files[0] = DocumentFile("d0", files[0].path, file_stamp(files[0].path))
    table = read_documents(files, "document_id", copy)
    assert table.equals(read_partitions([f.path for f in files]))
    assert "extra" in table.column_names


def test_live_rows_are_the_copy_and_the_few_files_changed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step reading every document's rows gets the consolidated copy (it holds none of its rows
    then) and the files changed since, in the order `read_partitions` gives; the copy is written
    when there is none, and rewritten only once more than CONSOLIDATE_FROM files changed. An
    unchanged corpus is not read at all (only the copy's footer is)."""
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", 2)
    layout = HomeLayout.at(tmp_path / "home")
    layout.partition_dir("docs").mkdir(parents=True)

    def document(key: str, rows: int, tag: str = "") -> None:
        written = _document(layout.partition_dir("docs"), key, rows, tag)
        written.path.rename(layout.partition_path("docs", key))  # the layout's file name for the key

    def rows_of(source: CopyRows) -> pa.Table:
        stored = pq.read_table(source.copy).select(["document_id", "text"])
        fresh = source.fresh.select(["document_id", "text"]) if source.fresh is not None else None
        table = pa.concat_tables([stored, fresh]) if fresh is not None else stored
        return table if source.order is None else table.take(pa.array(source.order))

    def whole(keys: list[str]) -> pa.Table:
        return read_partitions([layout.partition_path("docs", key) for key in keys])

    keys = [f"d{n}" for n in range(6)]
    for key in keys:
        document(key, 2)
    copy = consolidated_copy(layout.cache, "docs")
    source = live_rows(layout, "docs", document_files(layout, "docs", keys))
    assert isinstance(source, CopyRows) and source.copy == copy and source.fresh is None
    assert rows_of(source).equals(whole(keys))
    read: list[object] = []
    monkeypatch.setattr(partition_reads, "read_documents", lambda *a, **k: read.append(a))
    monkeypatch.setattr(partition_reads, "read_partitions", lambda *a, **k: read.append(a))
    again = live_rows(layout, "docs", document_files(layout, "docs", keys))
    assert isinstance(again, CopyRows) and again.fresh is None and read == []
    monkeypatch.undo()
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", 2)
    written = copy.stat().st_mtime_ns
    document("d2", 3, tag="changed")
    beside = live_rows(layout, "docs", document_files(layout, "docs", keys[:5]))  # d5 gone too
    assert isinstance(beside, CopyRows) and beside.fresh is not None and beside.fresh.num_rows == 3
    assert rows_of(beside).equals(whole(keys[:5])) and copy.stat().st_mtime_ns == written
    for key in ("d0", "d1"):
        document(key, 1, tag="changed")  # three changed and one gone: past CONSOLIDATE_FROM
    rewritten = live_rows(layout, "docs", document_files(layout, "docs", keys[:5]))
    assert isinstance(rewritten, CopyRows) and rewritten.fresh is None
    assert rows_of(rewritten).equals(whole(keys[:5])) and pq.read_table(copy).num_rows == 9
    few = live_rows(
        layout, "docs", document_files(layout, "docs", keys[:1])
    )  # below CONSOLIDATE_FROM: the rows themselves
    assert isinstance(few, pa.Table) and few.column("text").to_pylist() == ["d0changed-0"]
    assert live_rows(layout, "docs", document_files(layout, "docs", ["gone"])) is None


@pytest.mark.parametrize("consolidate_from", [2, 1000])  # one scan of the folder; a stat per file
def test_document_files_are_the_present_ones_in_the_given_order_stamped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, consolidate_from: int
) -> None:
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", consolidate_from)
    layout = HomeLayout.at(tmp_path / "home")
    layout.partition_dir("docs").mkdir(parents=True)
    for key in ("b", "a/x#1", "c"):
        pq.write_table(pa.table({"document_id": [key]}), layout.partition_path("docs", key))
    files = document_files(layout, "docs", ["c", "gone", "a/x#1", "b"])
    assert [f.key for f in files] == ["c", "a/x#1", "b"]
    assert [f.path for f in files] == [layout.partition_path("docs", k) for k in ("c", "a/x#1", "b")]
    assert [f.stamp for f in files] == [file_stamp(f.path) for f in files]
    assert document_files(layout, "other", ["c", "b", "a"]) == []


def test_a_read_takes_a_few_changed_files_beside_the_copy_and_leaves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", 3)  # also: at most 3 changed or gone files
    copy = tmp_path / "cache" / "docs.parquet"
    files = [_document(tmp_path, f"d{n}", n % 3) for n in range(12)]
    read_documents(files, "document_id", copy)
    written = copy.read_bytes()
    files[4] = _document(tmp_path, "d4", 3, tag="changed")
    del files[7]
    files.insert(2, _document(tmp_path, "new", 2))
    whole = read_partitions([f.path for f in files])
    assert read_documents(files, "document_id", copy, ["text"]).equals(whole.select(["text"]))
    assert read_documents(files, "document_id", copy).equals(whole)
    assert copy.read_bytes() == written  # two changed files and one gone: read beside the copy
    files[0] = _document(tmp_path, "d0", 1, tag="changed")  # a fourth: the copy is rewritten
    whole = read_partitions([f.path for f in files])
    assert read_documents(files, "document_id", copy, ["text"]).equals(whole.select(["text"]))
    assert pq.read_table(copy).select(["document_id", "text"]).equals(whole)


def read(layout: HomeLayout, live: Iterable[str], columns: list[str] | None = None) -> pa.Table:
    """Every live document's rows of the "docs" table through its consolidated copy."""
    files = document_files(layout, "docs", sorted(live))
    return read_documents(files, "document_id", consolidated_copy(layout.cache, "docs"), columns)


@settings(max_examples=60, deadline=None)
@given(
    changes=st.lists(
        st.tuples(st.sampled_from(["rewrite", "remove", "add"]), st.integers(0, 9), st.integers(0, 3)),
        max_size=6,
    ),
    copy_kept=st.booleans(),
)
def test_column_reads_and_row_counts_equal_the_whole_read(
    changes: list[tuple[str, int, int]], copy_kept: bool
) -> None:
    """Whatever changed since the copy was written (or with no copy): `read_documents` is the whole
    read, of some columns its columns, and ``live_row_count`` its row count."""
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(partition_reads, "CONSOLIDATE_FROM", 2):
        layout = HomeLayout.at(folder)
        layout.partition_dir("docs").mkdir(parents=True)

        def write(key: str, rows: int, version: int) -> None:
            texts = [f"{key}{'v' * version}-{n}" for n in range(rows)]  # a new version: a new size
            table = pa.table(
                {"document_id": pa.array([key] * rows, pa.string()), "text": pa.array(texts, pa.string())}
            )
            pq.write_table(table, layout.partition_path("docs", key))

        live = {f"d{n}": n % 3 for n in range(10)}
        for key, rows in live.items():
            write(key, rows, 0)
        read(layout, live)  # writes the copy
        if not copy_kept:
            consolidated_copy(layout.cache, "docs").unlink()
        for version, (change, n, rows) in enumerate(changes, start=1):
            key = f"d{n}" if change != "add" else f"new{n}"
            if change == "remove":
                live.pop(key, None)
            else:
                write(key, rows, version)
                live[key] = rows
        whole = read_partitions([layout.partition_path("docs", key) for key in sorted(live)])
        assert read(layout, live, columns=["text"]).equals(whole.select(["text"]))
        assert read(layout, live).equals(whole)
        assert read(layout, live).equals(whole)  # again, through what the first left
        assert live_row_count(layout, "docs", live) == whole.num_rows
