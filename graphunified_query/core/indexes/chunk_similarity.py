"""SIMILAR_TO edges: each chunk's nearest neighbours above a cosine threshold, for graph expansion.

Built at index time by blocked matrix products over the unit chunk vectors: a block of rows
against all of them at once, never the whole n x n matrix. Each chunk keeps at most ``neighbours``
edges of its own (its top-k); an edge is stored once, ``source < target``, and holds when either
end chose the other. Exact: the same edges a brute-force all-pairs comparison gives.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK_SIMILARITY_SCHEMA = pa.schema(
    [
        ("source_chunk", pa.string()),  # chunk ids, source_chunk < target_chunk
        ("target_chunk", pa.string()),
        ("similarity", pa.float32()),
    ]
)
_BLOCK_CELLS = 8_000_000  # similarities held at once (32 MB of float32), whatever the corpus size


def similarity_edges(
    ids: Sequence[str], vectors: np.ndarray, *, threshold: float, neighbours: int
) -> pa.Table:
    """The kNN edges (at most ``neighbours`` per chunk, cosine >= ``threshold``) as a table."""
    rows, cols, sims = knn_pairs(vectors, threshold=threshold, neighbours=neighbours)
    edges = sorted(
        (min(ids[r], ids[c]), max(ids[r], ids[c]), s)
        for r, c, s in zip(rows.tolist(), cols.tolist(), sims.tolist(), strict=True)
    )
    table = pa.table(
        {
            "source_chunk": pa.array([e[0] for e in edges], pa.string()),
            "target_chunk": pa.array([e[1] for e in edges], pa.string()),
            "similarity": pa.array([e[2] for e in edges], pa.float32()),
        },
        schema=CHUNK_SIMILARITY_SCHEMA,
    )
    return table.replace_schema_metadata({"threshold": str(threshold), "neighbours": str(neighbours)})


def knn_pairs(
    vectors: np.ndarray, *, threshold: float, neighbours: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, cosine) with row < col for every kNN pair above the threshold, sorted by (row, col)."""
    n = len(vectors)
    empty = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    if n < 2 or neighbours < 1:
        return empty
    unit = _unit_rows(vectors)
    block = max(1, _BLOCK_CELLS // n)
    found_rows: list[np.ndarray] = []
    found_cols: list[np.ndarray] = []
    found_sims: list[np.ndarray] = []
    for start in range(0, n, block):
        sims = unit[start : start + block] @ unit.T
        local = np.arange(len(sims))
        sims[local, local + start] = -np.inf  # a chunk is not its own neighbour
        # Only the few cells above the threshold are ranked, not whole rows.
        rows, cols = np.nonzero(sims >= threshold)
        values = sims[rows, cols]
        order = np.lexsort((cols, -values, rows))  # by row, best first, ties to the lower column
        rows, cols, values = rows[order], cols[order], values[order]
        rank = np.arange(len(rows)) - np.searchsorted(rows, rows)
        keep = rank < neighbours
        found_rows.append(rows[keep] + start)
        found_cols.append(cols[keep])
        found_sims.append(values[keep])
    row, col, sim = np.concatenate(found_rows), np.concatenate(found_cols), np.concatenate(found_sims)
    low, high = np.minimum(row, col), np.maximum(row, col)
    # Both ends may have chosen each other; keep one edge (the larger of two float-rounded cosines).
    order = np.lexsort((-sim, high, low))
    low, high, sim = low[order], high[order], sim[order]
    first = np.ones(len(low), bool)
    first[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1])
    return low[first], high[first], sim[first].astype(np.float32)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True)
class SimilarityEdges:
    """The stored SIMILAR_TO edges; ``threshold`` is the cosine they were built above."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    similarity: np.ndarray  # float32, aligned with source/target
    threshold: float
    neighbours: int

    def __len__(self) -> int:
        return len(self.source)

    @classmethod
    def from_table(cls, table: pa.Table) -> SimilarityEdges:
        meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
        return cls(
            source=tuple(table.column("source_chunk").to_pylist()),
            target=tuple(table.column("target_chunk").to_pylist()),
            similarity=np.asarray(table.column("similarity").to_numpy(), np.float32),
            threshold=float(meta.get("threshold", "nan")),
            neighbours=int(meta.get("neighbours", "0")),
        )

    @classmethod
    def load(cls, path: Path) -> SimilarityEdges | None:
        """The edges stored at ``path``, or None when the index predates them."""
        return cls.from_table(pq.read_table(path)) if path.exists() else None

    @cached_property
    def adjacency(self) -> dict[str, list[tuple[str, float]]]:
        """chunk id → [(neighbour chunk id, cosine)], both directions, most similar first."""
        found: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for source, target, sim in zip(self.source, self.target, self.similarity.tolist(), strict=True):
            found[source].append((target, sim))
            found[target].append((source, sim))
        for edges in found.values():
            edges.sort(key=lambda edge: (-edge[1], edge[0]))
        return dict(found)
