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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# What the graph stage reads of a row; the rest (extractor, counts) is never decoded.
GRAPH_COLUMNS = ("chunk_id", "entities", "relationships", "facts")
BATCH_ROWS = 1024


class ExtractionRows:
    """Rows of an extractions table (EXTRACTIONS_SCHEMA), in memory or in a Parquet file, as
    dicts decoded slice by slice."""

    def __init__(self, source: pa.Table | Path, *, batch_rows: int = BATCH_ROWS) -> None:
        self.source = source
        names = source.column_names if isinstance(source, pa.Table) else pq.read_schema(source).names
        self.columns = [c for c in GRAPH_COLUMNS if c in names]
        self.batch_rows = batch_rows

    def __len__(self) -> int:
        if isinstance(self.source, pa.Table):
            return self.source.num_rows
        return pq.ParquetFile(self.source).metadata.num_rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if isinstance(self.source, pa.Table):
            for batch in self.source.select(self.columns).to_batches(max_chunksize=self.batch_rows):
                yield from batch.to_pylist()
            return
        for batch in pq.ParquetFile(self.source).iter_batches(self.batch_rows, columns=self.columns):
            yield from batch.to_pylist()
        pa.default_memory_pool().release_unused()  # the pass's decoded row groups
