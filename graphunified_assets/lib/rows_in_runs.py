"""`take_in_runs`: a table's rows in a given order, as zero-copy slices of its runs of
consecutive rows.

An update's tables are the last build's rows with a few made again slotted in: the order is long
runs of consecutive rows, which `pa.Table.take` copies whole (the 316K relationships of the
12.6K-passage home: 0.3-0.5 s of every update; its 15K community reports: about 0.7 s).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def take_in_runs(table: pa.Table, order: pa.Array | np.ndarray) -> pa.Table:
    """``table.take(order)``, made of slices of ``table``."""
    rows = order if isinstance(order, np.ndarray) else order.to_numpy()
    if not len(rows):
        return table.slice(0, 0)
    ends = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate([[0], ends])
    lengths = np.diff(np.concatenate([starts, [len(rows)]]))
    runs = zip(rows[starts].tolist(), lengths.tolist(), strict=True)
    return pa.concat_tables([table.slice(first, length) for first, length in runs])
