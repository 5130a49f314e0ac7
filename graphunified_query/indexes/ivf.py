"""Inverted lists for the large vector tables: search a few clusters instead of every row.

An exact scan reads the whole matrix per query: at the 12.6K-passage scale the relationship
table alone is ~300K x 384 floats (~0.5 GB), ~60 ms a query on two cores. Spherical k-means
splits the rows into 4*sqrt(n) lists; a query scores the centroids, then only the rows of its
nearest tenth of the lists. Questions embed differently from the statements they match, so they
land in the dense lists: on 66.5K relationship vectors (2,500 scale passages) and 100 2Wiki
questions, sqrt(n) lists probed 1/16 / 1/8 found 86.5 % / 94.8 % of the exact top-10, and
4*sqrt(n) lists 95.8 % / 98.5 % while scanning 8.6 % / 15.8 % of the rows; a tenth sits between.
Tables under ``MIN_ROWS`` stay exact.

Built at index time by the asset that writes the vectors, stored beside them with a digest of
the row ids, and used by `DenseIndex.search` only while that digest still matches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MIN_ROWS = 50_000
LISTS_PER_SQRT_ROWS = 4
PROBE_SHARE = 10  # probe 1/10 of the lists
TRAINING_ROWS = 32_768
ITERATIONS = 10


@dataclass(frozen=True)
class InvertedLists:
    centroids: np.ndarray  # (lists, dimension), unit rows
    rows: np.ndarray  # row numbers grouped by list
    offsets: np.ndarray  # list i holds rows[offsets[i]:offsets[i + 1]]
    ids_digest: str

    @property
    def probes(self) -> int:
        return max(1, -(-len(self.centroids) // PROBE_SHARE))

    def candidates(self, query: np.ndarray, probes: int | None = None) -> np.ndarray:
        """Row numbers in the ``probes`` lists whose centroids are nearest the query."""
        return np.concatenate([self.rows[start:end] for start, end in self.candidate_slices(query, probes)])

    def candidate_slices(self, query: np.ndarray, probes: int | None = None) -> list[tuple[int, int]]:
        """The ``probes`` nearest lists as [start, end) ranges of ``rows``, adjacent ones merged."""
        count = min(probes or self.probes, len(self.centroids))
        nearest = np.sort(np.argpartition(-(self.centroids @ query), count - 1)[:count])
        slices: list[tuple[int, int]] = []
        for i in nearest:
            start, end = int(self.offsets[i]), int(self.offsets[i + 1])
            if slices and slices[-1][1] == start:
                slices[-1] = (slices[-1][0], end)
            elif end > start:
                slices.append((start, end))
        return slices


def build(matrix: np.ndarray, ids: Sequence[str], *, seed: int = 0) -> InvertedLists:
    """Spherical k-means (cosine) on a sample, then every row to its nearest centroid."""
    count = len(matrix)
    lists = max(1, round(LISTS_PER_SQRT_ROWS * count**0.5))
    rng = np.random.default_rng(seed)
    sample = matrix[rng.choice(count, min(count, TRAINING_ROWS), replace=False)]
    centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(ITERATIONS):
        nearest = _nearest(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        empty = ~sums.any(axis=1)
        sums[empty] = centroids[empty]  # an empty list keeps its centroid
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    assignment = _nearest(matrix, centroids)
    rows = np.argsort(assignment, kind="stable").astype(np.int32)
    offsets = np.searchsorted(assignment[rows], np.arange(lists + 1)).astype(np.int64)
    return InvertedLists(centroids.astype(np.float32), rows, offsets, ids_digest(ids))


def _nearest(vectors: np.ndarray, centroids: np.ndarray, block: int = 16_384) -> np.ndarray:
    return np.concatenate(
        [np.argmax(vectors[i : i + block] @ centroids.T, axis=1) for i in range(0, len(vectors), block)]
    )


def ivf_file(vector_table: str) -> str:
    """Where a vector table's lists live, relative to the home's index folder."""
    return f"ivf/{vector_table}.npz"


def ids_digest(ids: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(ids).encode()).hexdigest()


def save(path: Path, lists: InvertedLists) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.npz")
    np.savez(
        tmp,
        centroids=lists.centroids,
        rows=lists.rows,
        offsets=lists.offsets,
        ids_digest=np.array(lists.ids_digest),
    )
    tmp.replace(path)  # atomic: a reader sees the old lists or the new ones


def load(path: Path, ids: Sequence[str]) -> InvertedLists | None:
    """The lists at ``path`` if they were built for exactly these rows, else None (exact search)."""
    if not path.exists():
        return None
    with np.load(path) as data:
        if str(data["ids_digest"]) != ids_digest(ids):
            return None
        return InvertedLists(data["centroids"], data["rows"], data["offsets"], str(data["ids_digest"]))
