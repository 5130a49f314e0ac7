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
the row ids, and used by `DenseIndex.search` only while that digest still matches. An update
starts k-means from the previous lists' centroids (`previous`), which are already near a
solution for a table that changed by a few documents, so it runs `WARM_ITERATIONS` instead of
`ITERATIONS`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

MIN_ROWS = 50_000
LISTS_PER_SQRT_ROWS = 4
PROBE_SHARE = 10  # probe 1/10 of the lists
TRAINING_ROWS = 32_768
ITERATIONS = 10
# k-means from the previous build's converged centroids: one update moves a tiny fraction of the
# sample, so each centroid moves by about that fraction; two iterations absorb the move (measured
# by bench/ivf.py: recall of warm-started lists within 0.5 point of a fresh build).
WARM_ITERATIONS = 2


@dataclass(frozen=True)
class InvertedLists:
    centroids: np.ndarray  # (lists, dimension), unit rows
    rows: np.ndarray  # row numbers grouped by list
    offsets: np.ndarray  # list i holds rows[offsets[i]:offsets[i + 1]]
    ids_digest: str
    iterations: int = 0  # k-means iterations run to build these lists (0 when loaded)

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


def build(
    matrix: np.ndarray, ids: Sequence[str], *, seed: int = 0, previous: InvertedLists | None = None
) -> InvertedLists:
    """Spherical k-means (cosine) on a sample, then every row to its nearest centroid.

    With ``previous`` lists of the same dimension (the table before this update) k-means starts
    from their centroids and runs ``WARM_ITERATIONS``; otherwise from random sample rows."""
    count = len(matrix)
    lists = max(1, round(LISTS_PER_SQRT_ROWS * count**0.5))
    rng = np.random.default_rng(seed)
    sample = matrix[rng.choice(count, min(count, TRAINING_ROWS), replace=False)]
    if (
        previous is not None
        and previous.centroids.shape[1] == matrix.shape[1]
        and len(previous.centroids) > 0
    ):
        centroids = _resized(previous, lists, sample, rng)
        iterations = WARM_ITERATIONS
    else:
        centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
        iterations = ITERATIONS
    for _ in range(iterations):
        sums = _sums(sample, _nearest(sample, centroids), lists)
        empty = ~sums.any(axis=1)
        sums[empty] = centroids[empty]  # an empty list keeps its centroid
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    assignment = _nearest(matrix, centroids)
    rows = np.argsort(assignment, kind="stable").astype(np.int32)
    offsets = np.searchsorted(assignment[rows], np.arange(lists + 1)).astype(np.int64)
    return InvertedLists(centroids.astype(np.float32), rows, offsets, ids_digest(ids), iterations)


def _sums(sample: np.ndarray, nearest: np.ndarray, lists: int) -> np.ndarray:
    """Per list, the sum of its sample rows: ``np.add.at(sums, nearest, sample)`` without its
    per-element loop (~10x faster). A one-hot (lists x rows) CSR matrix keeps each list's rows in
    sample order and its product with ``sample`` adds them one after another in float32, as
    ``add.at`` does, so the sums match bit for bit (``np.add.reduceat`` does not: it reorders)."""
    one_hot = sparse.csr_matrix(
        (np.ones(len(nearest), sample.dtype), (nearest, np.arange(len(nearest)))),
        shape=(lists, len(nearest)),
    )
    return np.asarray(one_hot @ sample)


def _resized(previous: InvertedLists, lists: int, sample: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The previous centroids grown or shrunk to ``lists``: a table that shrank drops its smallest
    lists (they hold the fewest rows, so the fewest rows move); a table that grew adds centroids at
    random sample rows, where k-means' random start would have put them."""
    centroids = np.asarray(previous.centroids, dtype=sample.dtype)
    if lists < len(centroids):
        sizes = np.diff(previous.offsets)
        keep = np.sort(np.argsort(-sizes, kind="stable")[:lists])
        return centroids[keep].copy()
    extra = sample[rng.choice(len(sample), lists - len(centroids), replace=False)]
    return np.vstack([centroids, extra])


def _nearest(vectors: np.ndarray, centroids: np.ndarray, block: int = 16_384) -> np.ndarray:
    return np.concatenate(
        [np.argmax(vectors[i : i + block] @ centroids.T, axis=1) for i in range(0, len(vectors), block)]
    )


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


def load_previous(path: Path) -> InvertedLists | None:
    """The lists at ``path`` whatever rows they were built for: an update's warm start."""
    if not path.exists():
        return None
    with np.load(path) as data:
        return InvertedLists(data["centroids"], data["rows"], data["offsets"], str(data["ids_digest"]))
