"""The HippoRAG graph as one sparse matrix: entity and passage (chunk) nodes, symmetric weights.

Nodes ``[0, n_entities)`` are entities, the rest are chunks. Stored as a compressed ``.npz`` so
the query side loads it in milliseconds and runs PPR as scipy sparse power iteration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class PPRGraph:
    node_ids: tuple[str, ...]
    n_entities: int
    adjacency: sp.csr_matrix  # symmetric, non-negative edge weights

    @classmethod
    def from_edges(
        cls, entity_ids: list[str], chunk_ids: list[str], edges: list[tuple[str, str, float]]
    ) -> PPRGraph:
        """Parallel edges add up; edges naming an unknown node are skipped."""
        node_ids = tuple(entity_ids) + tuple(chunk_ids)
        index = {node: i for i, node in enumerate(node_ids)}
        rows, cols, weights = [], [], []
        for source, target, weight in edges:
            i, j = index.get(source), index.get(target)
            if i is None or j is None or i == j or weight <= 0:
                continue
            rows += [i, j]
            cols += [j, i]
            weights += [weight, weight]
        n = len(node_ids)
        matrix = sp.csr_matrix((np.asarray(weights, np.float32), (rows, cols)), shape=(n, n))
        matrix.sum_duplicates()
        return cls(node_ids, len(entity_ids), matrix)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(
            staging,
            node_ids=np.asarray(self.node_ids, dtype=np.str_),
            n_entities=np.int64(self.n_entities),
            data=self.adjacency.data,
            indices=self.adjacency.indices,
            indptr=self.adjacency.indptr,
        )
        os.replace(staging, path)

    @classmethod
    def load(cls, path: Path) -> PPRGraph:
        with np.load(path, allow_pickle=False) as saved:
            n = len(saved["node_ids"])
            matrix = sp.csr_matrix((saved["data"], saved["indices"], saved["indptr"]), shape=(n, n))
            return cls(tuple(saved["node_ids"].tolist()), int(saved["n_entities"]), matrix)

    @property
    def n_edges(self) -> int:
        return self.adjacency.nnz // 2

    @cached_property
    def index(self) -> dict[str, int]:
        return {node: i for i, node in enumerate(self.node_ids)}
