"""Reading every document's file of a per-document table through one consolidated copy.

A global step reads a per-document table whole, one small Parquet file per document: on the
loaded 2-core machine the 12.6K files of `extractions` took 27 s and those of `chunk_embeddings`
9.5 s, most of an update's `graph_elements` and `chunk_vectors`, although one document changed.
Here the rows of the last whole read are kept in one Parquet file per table (in the home's cache
folder), its footer naming each document's file size, modification time and row range. A read
takes the rows of unchanged files from it and reads only new or rewritten files, then replaces
the copy. The result is the table `read_partitions` gives for the same files, in the same order.

The copy is a cache: it is replaced atomically, a crash leaves the previous one, which the next
read checks file by file; deleting it costs one read of every file. A read after a few files
changed takes their rows beside the copy and leaves it as it is (`read_documents`); a step that
reads the rows in slices gets the copy and those files as they are (`live_rows`, `CopyRows`);
a row count (`live_row_count`) reads footers alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphunified_assets.lib.copy_rows import CopyRows
from graphunified_query.core.layout import HomeLayout, partition_file_stem
from graphunified_query.core.stores.parquet import read_partitions, write_table_atomic

CONSOLIDATE_FROM = 64  # files: fewer are read directly (a per-document run's inputs)
_INDEX = b"graphunified.partition_files"  # footer key: document -> [size, mtime_ns, start, rows]

Index = dict[str, list[int]]
Stamp = list[int]  # a file's [size, mtime_ns]: a rewritten file has another
MISSING: Stamp = [-1, -1]  # the stamp of no file


@dataclass(frozen=True)
class DocumentFile:
    key: str  # the document
    path: Path
    stamp: Stamp  # taken before the file is read: a file rewritten meanwhile is read again next time


def document_files(layout: HomeLayout, table: str, documents: Iterable[str]) -> list[DocumentFile]:
    """The present files of ``table`` for ``documents``, in ``documents``' order, stamped. Many
    are listed with one scan of the table's folder: building, testing and stamping each path
    took ~0.3 s per read at 12.6K documents, and an update makes about eight such reads."""
    keys = list(documents)
    folder = layout.partition_dir(table)
    if len(keys) < CONSOLIDATE_FROM:  # a per-document run's few files: a stat each
        paths = {key: layout.partition_path(table, key) for key in keys}
        files = [DocumentFile(key, path, file_stamp(path)) for key, path in paths.items()]
        return [f for f in files if f.stamp != MISSING]
    stats = layout.partition_stats(table)
    found = ((key, f"{partition_file_stem(key)}.parquet") for key in keys)
    return [
        DocumentFile(key, folder / name, [stats[name].st_size, stats[name].st_mtime_ns])
        for key, name in found
        if name in stats
    ]


def consolidated_copy(cache: Path, table: str) -> Path:
    """Where ``table``'s consolidated copy lives in the home's cache folder."""
    return cache / "partition_reads" / f"{table}.parquet"


def live_row_count(layout: HomeLayout, table: str, documents: Iterable[str]) -> int:
    """How many rows ``table``'s files for ``documents`` hold, from footers alone: each present
    file's rows as the consolidated copy's index records them, or, for a file changed since, as
    its own footer says."""
    index = _footer_index(consolidated_copy(layout.cache, table)) or {}
    rows = 0
    for file in document_files(layout, table, documents):
        entry = index.get(file.key)
        rows += entry[3] if entry and entry[:2] == file.stamp else pq.read_metadata(file.path).num_rows
    return rows


def live_rows(
    layout: HomeLayout, table: str, present: Sequence[DocumentFile], column: str = "document_id"
) -> pa.Table | CopyRows | None:
    """As `read_documents` of the files ``present`` (`document_files` of the documents, sorted), but
    as the consolidated copy and the files changed since (`CopyRows`): a step that reads the rows in
    slices (`ExtractionRows`) then holds none of the copy's. The copy is rewritten only once more
    than CONSOLIDATE_FROM files changed or went: rewriting it for each update (decoding, assembling
    and writing every row) took 1.2-1.7 s of a one-passage update at 12.6K passages. Few files (no
    copy) or rows not grouped by file: the rows themselves; no file: None."""
    copy = consolidated_copy(layout.cache, table)
    if not present:
        return None
    if len(present) < CONSOLIDATE_FROM:
        return read_partitions([f.path for f in present])
    if (beside := _copy_rows(copy, present, column)) is not None:
        return beside
    rows = read_documents(present, column, copy, exact_copy=True)
    if not _holds(copy, present):
        return rows
    del rows
    pa.default_memory_pool().release_unused()  # the whole table's buffers, read to write the copy
    return CopyRows(copy)


def _copy_rows(copy: Path, files: Sequence[DocumentFile], column: str) -> CopyRows | None:
    """The rows of ``files`` as ``copy`` and the files changed since hold them; None when no copy
    serves (none, more than CONSOLIDATE_FROM files changed or gone, or other columns). Only the
    copy's footer and the changed files are read."""
    try:
        footer = pq.ParquetFile(copy)
    except (FileNotFoundError, pa.ArrowInvalid, OSError):
        return None
    schema = footer.schema_arrow
    index: Index = json.loads((schema.metadata or {}).get(_INDEX, b"{}"))
    if (fresh := _few_changed(index, files)) is None:
        return None
    if not fresh and list(index) == [f.key for f in files]:
        return CopyRows(copy)
    read = read_partitions([f.path for f in fresh]) if fresh else schema.empty_table()
    fresh_ranges = _ranges(read, [f.key for f in fresh], column)
    if not read.schema.equals(schema) or fresh_ranges is None:
        return None
    return CopyRows(copy, read, _row_order(index, files, fresh_ranges, footer.metadata.num_rows))


def _holds(copy: Path, files: Sequence[DocumentFile]) -> bool:
    """Whether ``copy`` holds the rows of exactly ``files``, in order, as they are now (its footer
    alone is read)."""
    index = _footer_index(copy)
    if index is None:
        return False
    return list(index) == [f.key for f in files] and all(index[f.key][:2] == f.stamp for f in files)


def _footer_index(copy: Path) -> Index | None:
    """The index in ``copy``'s footer; None when there is no readable copy."""
    try:
        metadata = pq.read_schema(copy).metadata or {}
    except (FileNotFoundError, pa.ArrowInvalid, OSError):
        return None
    index: Index = json.loads(metadata.get(_INDEX, b"{}"))
    return index


def read_documents(
    files: Sequence[DocumentFile],
    column: str,
    copy: Path,
    columns: Sequence[str] | None = None,
    *,
    exact_copy: bool = False,
) -> pa.Table:
    """The rows of ``files`` (in order) as one table, through ``copy``; ``column`` holds each
    row's document (each file holds only its document's rows). ``columns``: only these.

    Up to CONSOLIDATE_FROM files changed or gone since the copy was written, the changed ones are
    read beside it and the copy is left as it is: rewriting it whole (21 MB of chunk embeddings at
    12.6K documents) cost more than reading them. Past that, or with ``exact_copy`` (a reader of
    the copy's file itself, `live_rows`), the copy is brought up to date."""
    if len(files) < CONSOLIDATE_FROM:
        return _selected(read_partitions([f.path for f in files]), columns)
    if not exact_copy and columns is not None:  # the copy's columns alone, if it serves
        wanted = list(dict.fromkeys([column, *columns]))
        stored, index = _load(copy, wanted)
        if (table := _beside_copy(stored, index, files, column, wanted)) is not None:
            return _selected(table, columns)
    stored, index = _load(copy)
    if not exact_copy and (table := _beside_copy(stored, index, files, column)) is not None:
        return _selected(table, columns)
    fresh = [f for f in files if index.get(f.key, [])[:2] != f.stamp]
    if stored is None or len(fresh) > len(files) // 2:
        table = read_partitions([f.path for f in files])
    elif not fresh and list(index) == [f.key for f in files]:
        return _selected(stored, columns)  # the same files in the same order
    else:
        read = read_partitions([f.path for f in fresh]) if fresh else stored.schema.empty_table()
        # None: a new column or a file of other rows: read every file
        table = _assembled(stored, index, files, fresh, read, column)
        table = table if table is not None else read_partitions([f.path for f in files])
    return _selected(_saved(copy, table, files, column) or table, columns)


def _beside_copy(
    stored: pa.Table | None,
    index: Index,
    files: Sequence[DocumentFile],
    column: str,
    columns: list[str] | None = None,
) -> pa.Table | None:
    """The rows of ``files`` from ``stored`` (the copy, or its ``columns``) and the files changed
    since it was written, when they are few (`read_documents`); None otherwise."""
    if stored is None or (fresh := _few_changed(index, files)) is None:
        return None
    if not fresh and list(index) == [f.key for f in files]:
        return stored
    read = read_partitions([f.path for f in fresh]) if fresh else stored.schema.empty_table()
    if columns is not None:  # a column the files gained since is not asked for
        if not set(stored.column_names) <= set(read.column_names):
            return None
        read = read.select(stored.column_names)
    return _assembled(stored, index, files, fresh, read, column)


def _few_changed(index: Index, files: Sequence[DocumentFile]) -> list[DocumentFile] | None:
    """The files new or rewritten since the copy ``index`` describes; None when they and the
    files gone since are more than CONSOLIDATE_FROM (the copy is then rewritten)."""
    fresh = [f for f in files if index.get(f.key, [])[:2] != f.stamp]
    gone = len(index.keys() - {f.key for f in files})
    return fresh if len(fresh) + gone <= CONSOLIDATE_FROM else None


def _selected(table: pa.Table, columns: Sequence[str] | None) -> pa.Table:
    return table if columns is None else table.select(list(columns))


def _assembled(
    stored: pa.Table,
    index: Index,
    files: Sequence[DocumentFile],
    fresh: list[DocumentFile],
    read: pa.Table,
    column: str,
) -> pa.Table | None:
    """Stored rows of unchanged files and the rows ``read`` of ``fresh`` ones, in ``files`` order."""
    if not read.schema.equals(stored.schema):
        return None
    fresh_ranges = _ranges(read, [f.key for f in fresh], column)
    if fresh_ranges is None:
        return None
    rows = _row_order(index, files, fresh_ranges, stored.num_rows)
    return pa.concat_tables([stored, read]).take(pa.array(rows)).combine_chunks()


def _row_order(
    index: Index, files: Sequence[DocumentFile], fresh_ranges: dict[str, tuple[int, int]], stored_rows: int
) -> np.ndarray:
    """Each row of ``files``, in order, as a row number of the stored rows followed by the fresh
    ones: a fresh file's rows from ``fresh_ranges``, another's from the copy's ``index``."""
    starts, lengths = [], []
    for key in (f.key for f in files):
        if key in fresh_ranges:
            start, length = fresh_ranges[key]
            start += stored_rows  # fresh rows follow the stored ones
        else:
            start, length = index[key][2], index[key][3]
        starts.append(start)
        lengths.append(length)
    # Row numbers of every range, end to end: np.repeat of each range's start shift plus a count.
    length_array = np.asarray(lengths, np.int64)
    offsets = np.concatenate([[0], np.cumsum(length_array)[:-1]])
    return np.repeat(np.asarray(starts, np.int64) - offsets, length_array) + np.arange(length_array.sum())


def _saved(copy: Path, table: pa.Table, files: Sequence[DocumentFile], column: str) -> pa.Table | None:
    """Writes ``table`` as the copy (its footer indexing ``files``); None when its rows are not
    grouped by file as ``files`` says (nothing is written then)."""
    ranges = _ranges(table, [f.key for f in files], column)
    if ranges is None:
        return None
    index = {f.key: [*f.stamp, *ranges[f.key]] for f in files}
    metadata = {**(table.schema.metadata or {}), _INDEX: json.dumps(index).encode()}
    # Row groups of a thousand rows: a reader of a few documents' rows decodes only theirs.
    write_table_atomic(copy, table.replace_schema_metadata(metadata), durable=False, row_group_rows=1024)
    return table


def _ranges(table: pa.Table, keys: list[str], column: str) -> dict[str, tuple[int, int]] | None:
    """Each key's (first row, rows), the keys' rows being contiguous in ``keys`` order; None when
    the table holds rows of other documents."""
    counts = {item["values"]: item["counts"] for item in pc.value_counts(table.column(column)).to_pylist()}
    if not set(counts) <= set(keys) or sum(counts.values()) != table.num_rows:
        return None
    ranges, start = {}, 0
    for key in keys:
        ranges[key] = (start, counts.get(key, 0))
        start += ranges[key][1]
    values = table.column(column)
    for key, (first, length) in ranges.items():  # spot-check: each range starts with its key
        if length and values[first].as_py() != key:
            return None
    return ranges


def _load(copy: Path, columns: Sequence[str] | None = None) -> tuple[pa.Table | None, Index]:
    try:
        table = pq.read_table(copy, columns=list(columns) if columns is not None else None)
    except (FileNotFoundError, pa.ArrowInvalid, OSError):
        return None, {}
    metadata = dict(table.schema.metadata or {})
    index = json.loads(metadata.pop(_INDEX, b"{}"))
    return table.replace_schema_metadata(metadata or None), index


def file_stamp(path: Path) -> Stamp:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return list(MISSING)
    return [stat.st_size, stat.st_mtime_ns]
