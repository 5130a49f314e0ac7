"""A home's vectors for the exports: read from the published generation, written in GraphRAG's
LanceDB layout (graphrag 3.x, `graphrag_vectors/lancedb.py` and `config/embeddings.py`).

GraphRAG's `generate_text_embeddings` writes one LanceDB table per embedding under
``output/lancedb``, named by the embedding (``IndexSchema.index_name``): ``text_unit_text`` (text
units' ``text``), ``entity_description`` (entities' ``title:description``) and
``community_full_content`` (reports' ``full_content``), each with ``id`` (the row's id in its
Parquet table), ``vector`` (float32 fixed-size list), ``create_date`` and ``update_date``. Local,
basic and DRIFT search look rows up there by ``id``; our vectors of the same rows go in.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from graphunified_query.core.artifacts import CHUNKS, COMMUNITY_REPORTS, ENTITIES
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.lance_reader import LanceTables
from graphunified_query.core.stores.parquet import StoreError
from graphunified_query.core.stores.publication import current

# GraphRAG's embedding name -> the table whose rows (by id) it embeds.
GRAPHRAG_EMBEDDINGS = {
    "text_unit_text": CHUNKS,
    "entity_description": ENTITIES,
    "community_full_content": COMMUNITY_REPORTS,
}
FILE_MODE, FOLDER_MODE = 0o644, 0o755  # an export is read by other users' tools (GraphRAG's server)


class HomeVectors:
    """The published generation's vectors of a LanceDB table, in the order of the ids asked for."""

    def __init__(self, layout: HomeLayout, hint: str) -> None:
        self.hint = hint
        self.lance = LanceTables(current(layout, rebuild_hint=hint), hint)

    def aligned(self, name: str, ids: list[str], dimension: int | None = None) -> np.ndarray:
        table = self.lance.scan(name, columns=("id", "vector"))
        row = {key: i for i, key in enumerate(table.column("id").to_pylist())}
        missing = [key for key in ids if key not in row]
        if missing:
            raise StoreError(
                f"{name} has no vector for {len(missing)} row(s) (e.g. {missing[0]!r}); "
                f"rebuild the index with `{self.hint}`."
            )
        if table.num_rows == 0:
            return np.zeros((0, dimension or 0), np.float32)
        matrix = np.asarray(table.column("vector").combine_chunks().flatten(), np.float32)
        return matrix.reshape(table.num_rows, -1)[[row[key] for key in ids]]


def write_lancedb_tables(folder: Path, tables: dict[str, tuple[list[str], np.ndarray]]) -> dict[str, int]:
    """``tables``: GraphRAG embedding name -> (row ids, their vectors); rows written per table."""
    import lancedb  # only an export with vectors needs it

    db = lancedb.connect(str(folder))
    stamp = datetime.now(UTC).isoformat()
    for name, (ids, matrix) in tables.items():
        dimension = matrix.shape[1]
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.astype(np.float32).ravel()), dimension)
        data = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "vector": vectors,
                "create_date": pa.array([stamp] * len(ids), pa.string()),
                "update_date": pa.array([stamp] * len(ids), pa.string()),
            }
        )
        db.create_table(name, data=data, mode="overwrite")
    return {name: len(ids) for name, (ids, _) in tables.items()}


def share(folder: Path) -> None:
    """Files 0644 and folders 0755 under ``folder``: our atomic writes create files 0600."""
    os.chmod(folder, FOLDER_MODE)
    for root, folders, files in os.walk(folder):
        for name in folders:
            os.chmod(Path(root) / name, FOLDER_MODE)
        for name in files:
            os.chmod(Path(root) / name, FILE_MODE)
