"""Each distinct text embedded once per call, however often the rows repeat it.

The graph tables repeat texts heavily: the offline extractor relates every pair of entities in a
sentence, so relationships share descriptions (66.5K relationships over 9.5K descriptions on 2,500
scale passages) and every relationship names two of a few thousand entities. The embedding cache
would skip the model for repeats, but each repeat was still hashed, looked up, copied out of
SQLite and stacked into a matrix of every row: one vector per row three times over for the
relationships. Here the distinct texts are embedded (or fetched) once and rows index into them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Embed = Callable[[list[str]], np.ndarray]


def embed_distinct(texts: Sequence[str], embed: Embed) -> tuple[np.ndarray, np.ndarray]:
    """(unique vectors, row → unique index): ``vectors[index]`` is the per-row matrix."""
    positions: dict[str, int] = {}
    index = np.fromiter((positions.setdefault(t, len(positions)) for t in texts), np.int64, len(texts))
    if not positions:
        return np.zeros((0, 0), np.float32), index
    return np.asarray(embed(list(positions)), dtype=np.float32), index


def embed_rows(texts: Sequence[str], embed: Embed) -> np.ndarray:
    """One vector per row, each distinct text embedded once."""
    vectors, index = embed_distinct(texts, embed)
    return vectors[index]


def unit(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
