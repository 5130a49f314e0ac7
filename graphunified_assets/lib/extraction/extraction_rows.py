"""Extraction rows read lazily, one slice of Python dicts at a time.

The graph stage used to turn every extraction row of the corpus into Python dicts at once (12.6K
chunks with their nested entity, relationship and fact lists: ~0.4 GB of objects, copied again to
add relationship keywords) and keep them for three passes. `ExtractionRows` is re-iterable: each
pass decodes ``batch_rows`` rows, hands them out and lets them go, so only one slice is alive.
Read from a Parquet file (the consolidated copy of every document's rows and the few files
changed since, `CopyRows`), not even the Arrow table is held between passes: at 12.6K passages it
was ~0.25 GB of the graph stage's peak, held to the step's end. (Rows of the copy and of changed
files interleaved are assembled in memory for a whole pass; an update makes none.)
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphunified_assets.lib.copy_rows import CopyRows

# What the graph stage reads of a row; the rest (extractor, counts) is never decoded.
GRAPH_COLUMNS = ("chunk_id", "entities", "relationships", "facts")
BATCH_ROWS = 1024


class ExtractionRows:
    """Rows of an extractions table (EXTRACTIONS_SCHEMA), in memory or as the consolidated copy and
    the files changed since (`CopyRows`), as dicts decoded slice by slice."""

    def __init__(self, source: pa.Table | CopyRows, *, batch_rows: int = BATCH_ROWS) -> None:
        self._batch_rows = batch_rows
        self._file: pq.ParquetFile | None = None  # the copy: its rows come first
        self._order: np.ndarray | None = None  # row i is row order[i] of the file's and the table's
        if isinstance(source, pa.Table):
            self._table_rows = source
        else:
            # Opened once: every pass reads the same rows, even if the file is replaced meanwhile.
            self._mapped = pa.memory_map(str(source.copy))
            self._file = pq.ParquetFile(self._mapped)
            self._table_rows = (
                source.fresh if source.fresh is not None else self._file.schema_arrow.empty_table()
            )
            self._order = source.order
        names = [
            *(self._file.schema_arrow.names if self._file is not None else ()),
            *self._table_rows.column_names,
        ]
        self._columns = [c for c in GRAPH_COLUMNS if c in names]
        self._stored = self._file.metadata.num_rows if self._file is not None else 0  # the copy's rows
        self._rows = len(self._order) if self._order is not None else self._stored + self._table_rows.num_rows

    def __len__(self) -> int:
        return self._rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self._batches():
            yield from batch.to_pylist()
        pa.default_memory_pool().release_unused()  # the pass's decoded buffers

    def _batches(self) -> Iterator[pa.RecordBatch]:
        if self._order is not None:  # rows of the copy and of changed files, interleaved: in memory
            yield from self._table(self._columns).to_batches(max_chunksize=self._batch_rows)
            return
        if self._file is not None:
            yield from pq.ParquetFile(self._mapped).iter_batches(self._batch_rows, columns=self._columns)
        if self._table_rows.num_rows:
            yield from self._table_rows.select(self._columns).to_batches(max_chunksize=self._batch_rows)

    def rows_of(self, chunks: Collection[str]) -> ExtractionRows:
        """The rows of ``chunks``, in this table's order (an update's few): filtered in Arrow,
        decoded a slice at a time as these are. From the copy, only the row groups holding them
        are decoded (the whole 12.6K-row copy took 0.3 s, twice per update)."""
        value_set = pa.array(sorted(chunks), pa.string())
        found = pc.is_in(self._table(["chunk_id"]).column("chunk_id"), value_set=value_set)
        positions = np.flatnonzero(found.to_numpy(zero_copy_only=False))
        rows = self._order[positions] if self._order is not None else positions
        in_copy = rows < self._stored
        fresh = rows[~in_copy] - self._stored
        parts = [self._table_rows.select(self._columns).take(pa.array(fresh, pa.int64()))]
        if in_copy.any():
            parts.insert(0, self._stored_rows(rows[in_copy]))
        # The copy's rows first, then the others: back in this table's order.
        placed = np.concatenate([positions[in_copy], positions[~in_copy]])
        table = pa.concat_tables(parts).take(pa.array(np.argsort(placed, kind="stable"), pa.int64()))
        return ExtractionRows(table, batch_rows=self._batch_rows)

    def _stored_rows(self, rows: np.ndarray) -> pa.Table:
        """These rows of the copy, in this order: only the row groups holding them are decoded."""
        assert self._file is not None
        metadata = self._file.metadata
        sizes = np.array([metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)], np.int64)
        group_of = np.searchsorted(np.cumsum(sizes), rows, side="right")
        groups = np.unique(group_of)
        read = self._file.read_row_groups(groups.tolist(), columns=self._columns)
        read_start = np.zeros(len(sizes), np.int64)  # where each read group's rows begin in `read`
        read_start[groups] = np.concatenate([[0], np.cumsum(sizes[groups])[:-1]])
        group_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        return read.take(pa.array(rows - group_start[group_of] + read_start[group_of], pa.int64()))

    def chunks_by_document(self) -> dict[str, list[str]]:
        """Each document's chunk ids, in order."""
        table = self._table(["document_id", "chunk_id"])
        found: dict[str, list[str]] = {}
        for document, chunk in zip(
            table.column("document_id").to_pylist(), table.column("chunk_id").to_pylist(), strict=True
        ):
            found.setdefault(document, []).append(chunk)
        return found

    def relationship_texts(self) -> list[str]:
        """The descriptions `gather_texts` would gather from every row (relationships without
        keywords), read in Arrow: no row is decoded."""
        flat = pc.list_flatten(self._table(["relationships"]).column("relationships"))
        descriptions = pc.struct_field(flat, "description")
        wanted = pc.and_(pc.is_valid(descriptions), pc.not_equal(descriptions, ""))
        if flat.type.get_field_index("keywords") >= 0:  # older extraction rows have none
            keywords = pc.struct_field(flat, "keywords")
            wanted = pc.and_(wanted, pc.fill_null(pc.equal(pc.list_value_length(keywords), 0), True))
        return pc.unique(descriptions.filter(wanted)).to_pylist()

    def _table(self, columns: list[str]) -> pa.Table:
        """These columns of every row, in this table's order."""
        parts = [self._table_rows.select(columns)]
        if self._file is not None:
            parts.insert(0, pq.read_table(self._mapped, columns=columns))
        table = pa.concat_tables(parts)
        return table if self._order is None else table.take(pa.array(self._order, pa.int64()))
