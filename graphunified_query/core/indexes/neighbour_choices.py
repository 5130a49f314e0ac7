"""Each chunk's own choice of SIMILAR_TO neighbours: its ``k`` most similar chunks at or above a
cosine threshold, ties going to the smaller chunk id.

Candidates come from blocked float32 matrix products (a block of rows against every row, never the
n x n matrix), but a pair is ranked by its exact cosine: the float64 sum of the products of the two
float32 unit vectors, rounded to float32. That number depends on the two vectors alone, not on the
block, the run or the row order that computed it, so the choices an update keeps from an earlier
run (`similarity_update`) compare exactly with those it computes now. A float32 product differs
from it by a few ulps from one block shape to another, enough to flip a near-tie; it only
preselects, with a margin that bounds its rounding error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_BLOCK_CELLS = 8_000_000  # float32 similarities held at once (32 MB), whatever the corpus size
_PAIRS = 8_192  # pairs rescored at once: two float64 rows each (50 MB at 384 dimensions)


@dataclass(frozen=True)
class Choices:
    """``chooser`` chose ``chosen`` (row positions) at exact cosine ``similarity``."""

    chooser: np.ndarray  # int64
    chosen: np.ndarray  # int64
    similarity: np.ndarray  # float32

    @classmethod
    def none(cls) -> Choices:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))

    @classmethod
    def concat(cls, parts: Sequence[Choices]) -> Choices:
        if not parts:
            return cls.none()
        return cls(
            np.concatenate([p.chooser for p in parts]),
            np.concatenate([p.chosen for p in parts]),
            np.concatenate([p.similarity for p in parts]),
        )

    def __len__(self) -> int:
        return len(self.chooser)

    def best(self, id_rank: np.ndarray, *, threshold: float, neighbours: int) -> Choices:
        """Each chooser's top ``neighbours`` at or above ``threshold``, sorted by chooser, best
        first, equal cosines in chunk id order."""
        above = self.similarity >= np.float32(threshold)
        chooser, chosen, similarity = self.chooser[above], self.chosen[above], self.similarity[above]
        order = np.lexsort((id_rank[chosen], -similarity, chooser))
        chooser, chosen, similarity = chooser[order], chosen[order], similarity[order]
        keep = _rank_in_run(chooser) < neighbours
        return Choices(chooser[keep], chosen[keep], similarity[keep])


@dataclass(frozen=True)
class ChunkSpace:
    """The chunks compared: ids, unit vectors, and each id's place in sorted order (the tie-break,
    so that it does not depend on the row order of the vector table)."""

    ids: pa.Array  # strings
    unit: np.ndarray  # float32, a unit row per chunk (zero for a zero vector)
    id_rank: np.ndarray  # int64

    @classmethod
    def of(cls, ids: pa.Array | pa.ChunkedArray | Sequence[str], vectors: np.ndarray) -> ChunkSpace:
        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        ids = ids.cast(pa.string()) if isinstance(ids, pa.Array) else pa.array(list(ids), pa.string())
        rank = np.empty(len(ids), np.int64)
        rank[pc.sort_indices(ids).to_numpy()] = np.arange(len(ids))  # code point order, as str's <
        matrix = np.asarray(vectors, np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return cls(ids, matrix / np.where(norms > 0, norms, 1.0), rank)

    def __len__(self) -> int:
        return len(self.unit)

    @property
    def margin(self) -> float:
        """More than any gap between a float32 product of two unit rows and their exact cosine:
        a dot product of d terms is off by at most d units of 2**-24 (|cos| <= 1), and the exact
        cosine's rounding by one more; doubled for the rows' norms being 1 only to float32."""
        return 2 * (self.unit.shape[1] + 2) * 2.0**-24

    def blocks(self, rows: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(a block of ``rows``, their float32 cosines with every row), a row's own cell -inf."""
        n = len(self)
        step = max(1, _BLOCK_CELLS // max(n, 1))
        for start in range(0, len(rows), step):
            block = rows[start : start + step]
            sims = self.unit[block] @ self.unit.T
            sims[np.arange(len(block)), block] = -np.inf  # a chunk is not its own neighbour
            yield block, sims

    def exact(self, chooser: np.ndarray, chosen: np.ndarray) -> Choices:
        """The pairs with their exact cosines (products of float32 are exact in float64)."""
        parts = [
            (self.unit[chooser[i : i + _PAIRS]].astype(np.float64) * self.unit[chosen[i : i + _PAIRS]])
            .sum(axis=1)
            .astype(np.float32)
            for i in range(0, len(chooser), _PAIRS)
        ]
        similarity = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        return Choices(chooser, chosen, similarity)


def candidates(
    space: ChunkSpace, block: np.ndarray, sims: np.ndarray, *, threshold: float, neighbours: int
) -> tuple[np.ndarray, np.ndarray]:
    """(chooser, chosen): every pair that can be among the ``block`` rows' top ``neighbours`` by
    exact cosine. Only cells within the margin of the threshold are ranked, not whole rows, and a
    row's cells more than two margins below its k-th float32 value cannot make its top k."""
    rows, cols = np.nonzero(sims >= threshold - space.margin)
    values = sims[rows, cols]
    order = np.lexsort((-values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    kth = np.full(len(block), -np.inf, np.float32)
    at_k = _rank_in_run(rows) == neighbours - 1
    kth[rows[at_k]] = values[at_k]
    keep = values >= kth[rows] - 2 * space.margin
    return block[rows[keep]], cols[keep].astype(np.int64)


def choose(space: ChunkSpace, rows: np.ndarray, *, threshold: float, neighbours: int) -> Choices:
    """The choices of ``rows`` among all chunks (every row: a first build's)."""
    if len(space) < 2 or neighbours < 1:
        return Choices.none()
    pairs = [
        candidates(space, block, sims, threshold=threshold, neighbours=neighbours)
        for block, sims in space.blocks(rows)
    ]
    found = (
        space.exact(*(np.concatenate(side) for side in zip(*pairs, strict=True))) if pairs else Choices.none()
    )
    return found.best(space.id_rank, threshold=threshold, neighbours=neighbours)


def _rank_in_run(sorted_keys: np.ndarray) -> np.ndarray:
    """Each element's position among the equal keys before it (``sorted_keys`` ascending)."""
    return np.arange(len(sorted_keys)) - np.searchsorted(sorted_keys, sorted_keys)
