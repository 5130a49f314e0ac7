"""Extraction rows read lazily from Arrow, one slice of Python dicts at a time.

The graph stage used to turn every extraction row of the corpus into Python dicts at once (12.6K
chunks with their nested entity, relationship and fact lists: ~0.4 GB of objects, copied again to
add relationship keywords) and keep them for three passes. `ExtractionRows` is re-iterable: each
pass decodes ``batch_rows`` rows, hands them out and lets them go, so only one slice is alive.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

# What the graph stage reads of a row; the rest (extractor, counts) is never decoded.
GRAPH_COLUMNS = ("chunk_id", "entities", "relationships", "facts")
BATCH_ROWS = 1024


class ExtractionRows:
    """Rows of an extractions table (EXTRACTIONS_SCHEMA) as dicts, decoded slice by slice."""

    def __init__(self, table: pa.Table, *, batch_rows: int = BATCH_ROWS) -> None:
        self.table = table.select([c for c in GRAPH_COLUMNS if c in table.column_names])
        self.batch_rows = batch_rows

    def __len__(self) -> int:
        return self.table.num_rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self.table.to_batches(max_chunksize=self.batch_rows):
            yield from batch.to_pylist()
