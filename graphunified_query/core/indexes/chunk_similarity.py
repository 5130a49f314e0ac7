"""SIMILAR_TO edges: each chunk's nearest neighbours above a cosine threshold, for graph expansion.

Each chunk keeps at most ``neighbours`` edges of its own (its top-k, `neighbour_choices`); an edge
is stored once, ``source < target``, and holds when either end chose the other. Exact: the same
edges a brute-force all-pairs comparison gives, ties going to the smaller chunk id.
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

from graphunified_query.core.indexes.neighbour_choices import Choices, ChunkSpace, choose

CHUNK_SIMILARITY_SCHEMA = pa.schema(
    [
        ("source_chunk", pa.string()),  # chunk ids, source_chunk < target_chunk
        ("target_chunk", pa.string()),
        ("similarity", pa.float32()),
    ]
)


def similarity_edges(
    ids: Sequence[str], vectors: np.ndarray, *, threshold: float, neighbours: int
) -> pa.Table:
    """The kNN edges (at most ``neighbours`` per chunk, cosine >= ``threshold``) as a table."""
    space = ChunkSpace.of(ids, vectors)
    chosen = choose(space, np.arange(len(space)), threshold=threshold, neighbours=neighbours)
    return edges_table(space, chosen, threshold=threshold, neighbours=neighbours)


def edges_table(space: ChunkSpace, choices: Choices, *, threshold: float, neighbours: int) -> pa.Table:
    """The choices as stored edges: each pair once, the smaller id first, sorted by the ids. In
    columns, ordered by the ids' ranks: no chunk id becomes a Python string."""
    first = space.id_rank[choices.chooser] < space.id_rank[choices.chosen]
    low = np.where(first, choices.chooser, choices.chosen)
    high = np.where(first, choices.chosen, choices.chooser)
    order = np.lexsort((space.id_rank[high], space.id_rank[low]))
    low, high, similarity = low[order], high[order], choices.similarity[order]
    # Two chunks that chose each other: one edge (their exact cosines are the same number).
    once = np.ones(len(low), bool)
    once[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1])
    table = pa.table(
        {
            "source_chunk": space.ids.take(pa.array(low[once])),
            "target_chunk": space.ids.take(pa.array(high[once])),
            "similarity": pa.array(similarity[once], pa.float32()),
        },
        schema=CHUNK_SIMILARITY_SCHEMA,
    )
    return table.replace_schema_metadata({"threshold": str(threshold), "neighbours": str(neighbours)})


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
