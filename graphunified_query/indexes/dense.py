"""Cosine search over unit vectors with numpy: exact, or through inverted lists for large tables.

At 25K x 384 one matrix-vector product and an argpartition take a few milliseconds and the
result is exact; tables of hundreds of thousands of rows carry `InvertedLists` (ivf.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from graphunified_query.indexes.ivf import InvertedLists


@dataclass(frozen=True)
class DenseIndex:
    ids: tuple[str, ...]
    matrix: np.ndarray  # (n, dimension) float32, rows L2-normalized
    lists: InvertedLists | None = None

    @classmethod
    def empty(cls, dimension: int) -> DenseIndex:
        return cls((), np.zeros((0, dimension), np.float32))

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def row(self) -> dict[str, int]:
        return {identifier: i for i, identifier in enumerate(self.ids)}

    def similarities(self, query: np.ndarray) -> np.ndarray:
        return self.matrix @ query if len(self.ids) else np.zeros(0, np.float32)

    def search(self, query: np.ndarray, k: int, *, exact: bool = False) -> list[tuple[int, float]]:
        """(row, cosine) of the k most similar rows, best first; ties broken by row."""
        if self.lists is None or exact:
            return top_k(self.similarities(query), k)
        rows = np.sort(self.lists.candidates(query))
        if len(rows) < k:
            return top_k(self.similarities(query), k)
        return [(int(rows[i]), score) for i, score in top_k(self.matrix[rows] @ query, k)]


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k highest scores as (index, score), best first, stable on ties."""
    if k <= 0 or len(scores) == 0:
        return []
    whole = k >= len(scores)
    candidates = np.arange(len(scores)) if whole else np.argpartition(-scores, k - 1)[:k]
    ordered = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [(int(i), float(scores[i])) for i in ordered]
