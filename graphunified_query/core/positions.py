"""Where each of many names sits among some ids, looked up in Arrow: no Python string per name."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def last_positions(names: pa.Array | pa.ChunkedArray, ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each name's position in ``ids`` (int64), -1 where it is none of them. A repeated id gives
    its last position, as a dict built over ``ids`` does (``index_in`` alone gives the first)."""
    last_first = ids.take(np.arange(len(ids) - 1, -1, -1))
    found = pc.fill_null(pc.index_in(names, value_set=last_first), -1).to_numpy().astype(np.int64)
    return np.where(found < 0, -1, len(ids) - 1 - found)
