"""Pick a diverse sample of chunks for tuning: farthest-point sampling over chunk embeddings.

The first N chunks of a corpus are usually one document's opening; prompts tuned on them fit that
document. Farthest-point sampling starts at the chunk closest to the corpus centroid (a typical
one) and repeatedly adds the chunk least similar to everything picked so far, so the sample spans
the corpus's topics. Deterministic: the same corpus gives the same sample.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphunified_assets.lib.tuning.corpus import CorpusChunk
from graphunified_query.core.providers.embedding import Embedder


def farthest_point_order(vectors: np.ndarray, k: int) -> list[int]:
    """Indices of ``k`` rows of L2-normalized ``vectors``: the most central, then max-min distance."""
    n = len(vectors)
    if n == 0 or k <= 0:
        return []
    centroid = vectors.mean(axis=0)
    picked = [int(np.argmax(vectors @ centroid))]
    # Highest cosine to any picked chunk; the next pick minimises it (ties: lowest index).
    closest = vectors @ vectors[picked[0]]
    while len(picked) < min(k, n):
        closest[picked] = np.inf
        nxt = int(np.argmin(closest))
        picked.append(nxt)
        closest = np.maximum(closest, vectors @ vectors[nxt])
    return picked


def diverse_sample(chunks: Sequence[CorpusChunk], embedder: Embedder, k: int) -> list[CorpusChunk]:
    if len(chunks) <= k:
        return list(chunks)
    vectors = np.asarray(embedder.embed([c.chunk.text for c in chunks]), dtype=np.float32)
    return [chunks[i] for i in farthest_point_order(vectors, k)]
