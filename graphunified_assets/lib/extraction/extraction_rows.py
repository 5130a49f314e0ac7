"""Extraction rows read lazily, one slice of Python dicts at a time.

The graph stage used to turn every extraction row of the corpus into Python dicts at once (12.6K
chunks with their nested entity, relationship and fact lists: ~0.4 GB of objects, copied again to
add relationship keywords) and keep them for three passes. `ExtractionRows` is re-iterable: each
pass decodes ``batch_rows`` rows, hands them out and lets them go, so only one slice is alive.
Read from a Parquet file (the consolidated copy of every document's rows, `live_rows`), not even
the Arrow table is held between passes: at 12.6K passages it was ~0.25 GB of the graph stage's
peak, held to the step's end.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# What the graph stage reads of a row; the rest (extractor, counts) is never decoded.
GRAPH_COLUMNS = ("chunk_id", "entities", "relationships", "facts")
BATCH_ROWS = 1024


class ExtractionRows:
    """Rows of an extractions table (EXTRACTIONS_SCHEMA), in memory or in a Parquet file, as
    dicts decoded slice by slice."""

    def __init__(self, source: pa.Table | Path, *, batch_rows: int = BATCH_ROWS) -> None:
        self._source = source
        self._batch_rows = batch_rows
        self._batches: Callable[[], Iterator[pa.RecordBatch]]
        if isinstance(source, pa.Table):
            table = source.select([c for c in GRAPH_COLUMNS if c in source.column_names])
            self._batches = lambda: iter(table.to_batches(max_chunksize=batch_rows))
            self._rows = table.num_rows
            return
        # Opened once: every pass reads the same rows, even if the file is replaced meanwhile.
        mapped = pa.memory_map(str(source))
        file = pq.ParquetFile(mapped)
        columns = [c for c in GRAPH_COLUMNS if c in file.schema_arrow.names]
        self._batches = lambda: pq.ParquetFile(mapped).iter_batches(batch_rows, columns=columns)
        self._rows = file.metadata.num_rows
        self._mapped = mapped

    def __len__(self) -> int:
        return self._rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self._batches():
            yield from batch.to_pylist()
        pa.default_memory_pool().release_unused()  # the pass's decoded buffers

    def rows_of(self, chunks: Collection[str]) -> ExtractionRows:
        """The rows of ``chunks``, in this table's order (an update's few): filtered in Arrow,
        decoded a slice at a time as these are. From a file, only the row groups holding them
        are decoded (the whole 12.6K-row copy took 0.3 s, twice per update)."""
        value_set = pa.array(sorted(chunks), pa.string())
        columns = [c for c in GRAPH_COLUMNS if c in self._names()]
        if isinstance(self._source, pa.Table):
            table = self._source.select(columns)
        else:
            file = pq.ParquetFile(self._mapped)
            found = pc.is_in(file.read(columns=["chunk_id"]).column("chunk_id"), value_set=value_set)
            group_ends = np.cumsum([file.metadata.row_group(g).num_rows for g in range(file.num_row_groups)])
            groups = np.unique(np.searchsorted(group_ends, np.flatnonzero(found), side="right"))
            table = file.read_row_groups(groups.tolist(), columns=columns)
        wanted = pc.is_in(table.column("chunk_id"), value_set=value_set)
        return ExtractionRows(table.filter(wanted), batch_rows=self._batch_rows)

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

    def _names(self) -> list[str]:
        if isinstance(self._source, pa.Table):
            return self._source.column_names
        return list(pq.ParquetFile(self._mapped).schema_arrow.names)

    def _table(self, columns: list[str]) -> pa.Table:
        if isinstance(self._source, pa.Table):
            return self._source.select(columns)
        return pq.read_table(self._mapped, columns=columns)
