"""Updating a LanceDB vector table by the rows that changed instead of rewriting all of it.

Adding one document to the 12.6K-passage index changes a few dozen of the 316K relationship rows
and a few hundred of the 100K report points, yet each update recomposed every row, looked every
text up in the embedding cache and rewrote every table. Here the rows a table should hold, as
(key, text), are compared with the stored ones, column by column in Arrow: a row whose key and
text are stored already keeps its stored vector; the others are computed; the change is applied
as one delete of the stale keys and one append of the new rows.

The text stands for everything a vector is computed from (with the model, checked here, and the
composition settings, which the caller compares and answers with a full rewrite when they
changed). A crash between the delete and the append cannot reach a reader: every Lance commit is
atomic and readers read the version their published generation pinned; the next update finds the
missing rows by the same comparison and writes them. Each update appends one small fragment and
marks deleted rows; ``release_unused_versions`` runs LanceDB's ``optimize`` at every publish,
which compacts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Above this share of rows changed, one rewrite costs less than a delete plus append and leaves
# one fragment.
REWRITE_SHARE = 0.5
_SEPARATOR = "\x1f"  # between key and text in the comparison: in neither
_IN_LIST = 2_000  # keys per delete predicate


@dataclass(frozen=True)
class SliceChange:
    """What an update writes: ``compute`` (positions in the wanted rows) get new vectors,
    ``stale`` stored keys are deleted first; ``kept`` rows keep their stored vectors."""

    compute: np.ndarray
    stale: list[Any]
    kept: int


def stored_rows(db: Any, name: str, columns: list[str]) -> pa.Table | None:
    """``columns`` of LanceDB table ``name`` (no vectors unless asked), or None when it is absent."""
    if name not in db.table_names(limit=None):
        return None
    return db.open_table(name).search().select(columns).limit(None).to_arrow()


def plan_change(
    keys: pa.Array | pa.ChunkedArray,
    texts: pa.Array | pa.ChunkedArray,
    stored: pa.Table | None,
    *,
    key: str,
    model: str,
) -> SliceChange | None:
    """The slice an update writes, or None when the whole table is rewritten: nothing stored, a
    stored row of another model, keys that are not unique, or most rows changed."""
    if stored is None or stored.num_rows == 0 or len(keys) == 0:
        return None
    if pc.any(pc.not_equal(stored.column("model"), model)).as_py():
        return None
    if not (_unique(keys) and _unique(stored.column(key))):
        return None
    wanted = _pairs(keys, texts)
    present = _pairs(stored.column(key), stored.column("text"))
    reused = pc.is_in(wanted, value_set=present).to_numpy(zero_copy_only=False)
    compute = np.flatnonzero(~reused)
    if len(compute) > REWRITE_SHARE * len(keys):
        return None
    gone = pc.invert(pc.is_in(present, value_set=wanted))
    stale = stored.column(key).filter(gone).to_pylist()
    return SliceChange(compute=compute, stale=stale, kept=int(reused.sum()))


def apply_change(table: Any, key: str, stale: list[Any], rows: pa.Table | pa.RecordBatch | None) -> None:
    """Deletes the ``stale`` keys, then appends ``rows`` (each a new Lance version)."""
    for start in range(0, len(stale), _IN_LIST):
        table.delete(f"{key} IN ({', '.join(_literal(v) for v in stale[start : start + _IN_LIST])})")
    if rows is not None and rows.num_rows:
        table.add(rows)


def aligned_matrix(stored: pa.Table, keys: pa.Array | pa.ChunkedArray, key: str = "id") -> np.ndarray:
    """The stored ``vector`` column as float32 rows in ``keys`` order (each key stored once)."""
    positions = pc.index_in(keys, value_set=stored.column(key))
    if positions.null_count:
        raise ValueError(f"{positions.null_count} rows have no stored vector after the update")
    vectors = stored.column("vector").combine_chunks()
    matrix = vectors.values.to_numpy(zero_copy_only=False).reshape(len(vectors), vectors.type.list_size)
    return np.ascontiguousarray(matrix[positions.to_numpy(zero_copy_only=False)], dtype=np.float32)


def _pairs(keys: pa.Array | pa.ChunkedArray, texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    strings = pc.cast(keys, pa.string()) if not pa.types.is_string(keys.type) else keys
    return pc.binary_join_element_wise(strings, pc.fill_null(texts, ""), _SEPARATOR)


def _unique(values: pa.Array | pa.ChunkedArray) -> bool:
    return pc.count_distinct(values).as_py() == len(values)


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(int(value))
