"""Cosine search over unit vectors with numpy: exact, or through inverted lists for large tables.

At 25K x 384 one matrix-vector product and an argpartition take a few milliseconds and the
result is exact; tables of hundreds of thousands of rows carry `InvertedLists` (ivf.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from graphunified_query.core.indexes.ivf import InvertedLists


@dataclass(frozen=True)
class DenseIndex:
    ids: tuple[str, ...]
    # (n, dimension) float32, rows L2-normalized, in storage order: row order unless `position` is
    # set, in which case rows are grouped by inverted list. Read vectors with `vectors(rows)`.
    matrix: np.ndarray
    lists: InvertedLists | None = None
    position: np.ndarray | None = None  # row -> its place in `matrix`

    @classmethod
    def empty(cls, dimension: int) -> DenseIndex:
        return cls((), np.zeros((0, dimension), np.float32))

    @classmethod
    def clustered(
        cls, ids: tuple[str, ...], matrix: np.ndarray, lists: InvertedLists, *, ordered: bool = False
    ) -> DenseIndex:
        """Rows regrouped list by list, so a probed list is one contiguous slice: gathering the
        candidate rows of a 300K-row table copied ~60 MB per query and dominated its latency.
        ``ordered``: ``matrix`` is already in list order (a mapped matrix is not copied)."""
        position = np.empty(len(lists.rows), np.int64)
        position[lists.rows] = np.arange(len(lists.rows))
        stored = matrix if ordered else np.ascontiguousarray(matrix[lists.rows])
        return cls(ids, stored, lists, position)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1])

    @cached_property
    def row(self) -> dict[str, int]:
        return {identifier: i for i, identifier in enumerate(self.ids)}

    def vectors(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The vectors of ``rows`` (table row numbers), in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.matrix[self.position[rows] if self.position is not None else rows]

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row, in row order."""
        if not len(self.ids):
            return np.zeros(0, np.float32)
        scores = self.matrix @ query
        return scores[self.position] if self.position is not None else scores

    def search(self, query: np.ndarray, k: int, *, exact: bool = False) -> list[tuple[int, float]]:
        """(row, cosine) of the k most similar rows, best first; ties broken by row."""
        if self.lists is None or exact:
            return top_k(self.similarities(query), k)
        if self.position is None:  # lists over rows in row order: gather the candidates
            rows = np.sort(self.lists.candidates(query))
            if len(rows) < k:
                return top_k(self.similarities(query), k)
            return [(int(rows[i]), score) for i, score in top_k(self.matrix[rows] @ query, k)]
        slices = self.lists.candidate_slices(query)
        if sum(end - start for start, end in slices) < k:
            return top_k(self.similarities(query), k)
        rows = np.concatenate([self.lists.rows[start:end] for start, end in slices])
        scores = np.concatenate([self.matrix[start:end] @ query for start, end in slices])
        order = np.argsort(rows, kind="stable")  # ties broken by row, as in the exact search
        rows, scores = rows[order], scores[order]
        return [(int(rows[i]), score) for i, score in top_k(scores, k)]


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k highest scores as (index, score), best first, stable on ties."""
    if k <= 0 or len(scores) == 0:
        return []
    whole = k >= len(scores)
    candidates = np.arange(len(scores)) if whole else np.argpartition(-scores, k - 1)[:k]
    ordered = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [(int(i), float(scores[i])) for i in ordered]
