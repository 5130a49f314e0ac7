"""Inverted lists updated row by row instead of re-clustered.

Re-clustering the relationship lists on an update (two warm k-means iterations, then every one of
the 316K rows against 2,248 centroids) took 23 s of the loaded 2-core machine, all to place a few
dozen new rows. Here the centroids of the last clustering stay; every unchanged row stays in its
list, read from a per-row assignment saved beside the lists (``<lists>.rows.parquet``: id, list);
new and changed rows go to their nearest centroid. Lists are rebuilt by k-means again once the
table's size has moved ``RECLUSTER_SHARE`` from the size they were clustered at, or when the
assignment is missing or belongs to other lists.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphunified_query.core.indexes import ivf
from graphunified_query.core.stores.parquet import write_table_atomic

RECLUSTER_SHARE = 0.1
_CLUSTERED_ROWS = b"graphunified.clustered_rows"
_LISTS_DIGEST = b"graphunified.lists_digest"


def assignment_path(lists_path: Path) -> Path:
    return lists_path.with_name(lists_path.name.removesuffix(".npz") + ".rows.parquet")


def save(
    lists_path: Path, lists: ivf.InvertedLists, ids: pa.Array | pa.ChunkedArray, clustered_rows: int
) -> None:
    """Saves ``lists`` and each row's list (``ids`` in the lists' row order)."""
    ivf.save(lists_path, lists)
    assignment = np.empty(len(ids), np.int32)
    assignment[lists.rows] = np.repeat(
        np.arange(len(lists.centroids), dtype=np.int32), np.diff(lists.offsets)
    )
    table = pa.table({"id": ids, "list": assignment}).replace_schema_metadata(
        {_CLUSTERED_ROWS: str(clustered_rows).encode(), _LISTS_DIGEST: lists.ids_digest.encode()}
    )
    write_table_atomic(assignment_path(lists_path), table, durable=False)


def updated(
    lists_path: Path, ids: pa.Array | pa.ChunkedArray, computed: dict[str, np.ndarray]
) -> tuple[ivf.InvertedLists, int] | None:
    """The lists for ``ids`` from the saved ones, ``computed`` (id → vector of each new or changed
    row) placed at their nearest centroids; with the row count they were clustered at. None when
    they must be re-clustered."""
    previous = ivf.load_previous(lists_path)
    try:
        saved = pq.read_table(assignment_path(lists_path))
    except (FileNotFoundError, pa.ArrowInvalid, OSError):
        return None
    metadata = saved.schema.metadata or {}
    if previous is None or metadata.get(_LISTS_DIGEST, b"").decode() != previous.ids_digest:
        return None
    clustered = int(metadata.get(_CLUSTERED_ROWS, b"0"))
    if abs(len(ids) - clustered) > RECLUSTER_SHARE * clustered:
        return None
    positions = pc.index_in(ids, value_set=saved.column("id")).to_numpy(zero_copy_only=False)
    known = ~np.isnan(positions)
    assignment = np.full(len(ids), -1, np.int32)
    assignment[known] = saved.column("list").to_numpy()[positions[known].astype(np.int64)]
    id_list = pc.cast(ids, pa.string()).to_pylist()
    moved = [i for i, row_id in enumerate(id_list) if row_id in computed or not known[i]]
    if any(id_list[i] not in computed for i in moved):
        return None  # a row without a saved list or a new vector: the state is not what we think
    if moved:
        vectors = np.stack([computed[id_list[i]] for i in moved]).astype(np.float32)
        assignment[moved] = np.argmax(vectors @ previous.centroids.T, axis=1)
    rows = np.argsort(assignment, kind="stable").astype(np.int32)
    offsets = np.searchsorted(assignment[rows], np.arange(len(previous.centroids) + 1)).astype(np.int64)
    lists = ivf.InvertedLists(previous.centroids, rows, offsets, ivf.ids_digest(id_list))
    return lists, clustered
