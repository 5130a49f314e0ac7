"""Cosine search over unit vectors with numpy: exact, or through a faiss index for large tables.

At 25K x 384 one matrix-vector product and an argpartition take a few milliseconds and the
result is exact; tables of hundreds of thousands of rows carry an `AnnIndex` (ann.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from graphunified_query.core.indexes.ann import AnnIndex, row_keys


@dataclass(frozen=True)
class DenseIndex:
    ids: tuple[str, ...]
    matrix: np.ndarray  # (n, dimension) float32, rows L2-normalized, in row order
    ann: AnnIndex | None = None

    @classmethod
    def empty(cls, dimension: int) -> DenseIndex:
        return cls((), np.zeros((0, dimension), np.float32))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1])

    @cached_property
    def row(self) -> dict[str, int]:
        return {identifier: i for i, identifier in enumerate(self.ids)}

    @cached_property
    def _keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows' index keys, sorted, and the row of each: keys → rows by binary search."""
        keys = row_keys(self.ids)
        order = np.argsort(keys)
        return keys[order], order

    def vectors(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The vectors of ``rows`` (table row numbers), in that order."""
        return self.matrix[np.asarray(rows, dtype=np.int64)]

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row, in row order."""
        if not len(self.ids):
            return np.zeros(0, np.float32)
        return self.matrix @ query

    def search(self, query: np.ndarray, k: int, *, exact: bool = False) -> list[tuple[int, float]]:
        """(row, cosine) of the k most similar rows, best first; ties broken by row."""
        if self.ann is None or exact or k <= 0:
            return top_k(self.similarities(query), k)
        keys, scores = self.ann.search(query, k)
        if len(keys) < min(k, len(self.ids)):  # the probed lists held fewer rows than asked
            return top_k(self.similarities(query), k)
        sorted_keys, row_of = self._keys
        rows = row_of[np.searchsorted(sorted_keys, keys)]
        order = np.lexsort((rows, -scores))  # best first, ties by row as in the exact search
        return [(int(rows[i]), float(scores[i])) for i in order]


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k highest scores as (index, score), best first, stable on ties."""
    if k <= 0 or len(scores) == 0:
        return []
    whole = k >= len(scores)
    candidates = np.arange(len(scores)) if whole else np.argpartition(-scores, k - 1)[:k]
    ordered = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [(int(i), float(scores[i])) for i in ordered]
