"""Several embedding models as one: each vector is the models' unit vectors side by side, scaled.

Segment m of a fused vector is model m's L2-normalized vector times sqrt(w_m), with the weights
summing to 1, so the fused vector has unit length and the dot product of two fused vectors is
sum_m w_m * cos_m: a weighted mean of the models' cosines, itself a cosine in [-1, 1]. Every
index, vector store, strategy and score floor that ranks by a dot product therefore ranks by the
fused score unchanged.

With w_m proportional to 1/sigma_m (the spread of model m's query–passage cosines), the ranking
is the per-query z-scored sum's except that it uses a fixed sigma instead of each query's own:
subtracting a query's mean never changes its ranking, and its spread only rescales the sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

import numpy as np

from graphunified_query.core.providers.embedding import (
    Embedder,
    EmbeddingKind,
    HasCalibratedVariant,
    normalize_rows,
)

if TYPE_CHECKING:
    from graphunified_query.core.providers.embedding_cache import CachedEmbedder


class FusedEmbedder:
    """An Embedder over `parts`; the cache (CachedEmbedder) stores each part under its own name."""

    def __init__(self, parts: Sequence[Embedder], weights: Sequence[float]) -> None:
        if len(parts) != len(weights) or not parts:
            raise ValueError("FusedEmbedder needs one positive weight per part")
        if any(not (w > 0 and math.isfinite(w)) for w in weights):
            raise ValueError(f"fusion weights must be positive and finite, got {list(weights)}")
        total = float(sum(weights))
        self.parts = tuple(parts)
        self.weights = tuple(float(w) / total for w in weights)
        self._scales = [math.sqrt(w) for w in self.weights]
        # The weights shape the vectors, so they are part of the name the index records.
        named = "+".join(f"{p.model_name}:{w:.3f}" for p, w in zip(self.parts, self.weights, strict=True))
        self.model_name = f"fused({named})"

    @property
    def dimension(self) -> int:
        return sum(p.dimension for p in self.parts)

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        return self.combine([p.embed(texts, kind=kind) for p in self.parts])

    def combine(self, vectors: Sequence[np.ndarray]) -> np.ndarray:
        """The fused rows from each part's rows (in part order)."""
        scaled = [normalize_rows(v) * s for v, s in zip(vectors, self._scales, strict=True)]
        return np.hstack(scaled).astype(np.float32, copy=False)

    def segment(self, vectors: np.ndarray, index: int = 0) -> np.ndarray:
        """Part `index`'s unit vectors out of fused rows (its own cosines, for thresholds set on it)."""
        start = sum(p.dimension for p in self.parts[:index])
        end = start + self.parts[index].dimension
        return normalize_rows(np.asarray(vectors, dtype=np.float32)[:, start:end])


def primary_vectors(embedder: Embedder, vectors: np.ndarray) -> np.ndarray:
    """The first model's vectors when `embedder` fuses several (through a cache), else `vectors`.

    Absolute cosine thresholds calibrated on one model (synonym edges, SIMILAR_TO edges) keep
    their meaning this way: a compressed model (e5 puts almost any two texts at 0.7–0.9) would
    otherwise shift every fused cosine upwards and let far more pairs over the threshold.
    """
    provider = getattr(embedder, "provider", embedder)  # a CachedEmbedder wraps its provider
    if isinstance(provider, FusedEmbedder):
        return provider.segment(vectors, 0)
    return np.asarray(vectors, dtype=np.float32)


def primary_embedder(embedder: Embedder) -> Embedder:
    """The first model alone (behind the same cache) when `embedder` fuses several, else `embedder`:
    for index-time decisions whose cosine thresholds were calibrated on it (entity resolution,
    synonym edges), which then neither change nor pay for the other models' vectors."""
    from graphunified_query.core.providers.embedding_cache import CachedEmbedder  # it imports this module

    provider = getattr(embedder, "provider", embedder)
    if not isinstance(provider, FusedEmbedder):
        return embedder
    if isinstance(embedder, CachedEmbedder):
        return CachedEmbedder(provider.parts[0], embedder.cache)
    return provider.parts[0]


@overload
def calibrated_embedder(embedder: CachedEmbedder) -> CachedEmbedder: ...
@overload
def calibrated_embedder(embedder: Embedder) -> Embedder: ...
def calibrated_embedder(embedder: Embedder) -> Embedder:
    """`primary_embedder` in the variant its cosine thresholds were set on (MiniLM's `shipped`),
    behind the same cache: for entity resolution's name neighbours and synonym edges, which compare
    names against absolute thresholds. A faster variant's small drift (mean cosine 0.996 to
    shipped) moved about one synonym edge in ten across the threshold, and with them the graph; a
    name is a few tokens, so embedding the names with the calibrated variant costs little and keeps
    the resolved entities and synonym edges the shipped file's whatever variant embeds the tables."""
    from graphunified_query.core.providers.embedding_cache import CachedEmbedder  # it imports this module

    first = primary_embedder(embedder)
    provider = first.provider if isinstance(first, CachedEmbedder) else first
    if not isinstance(provider, HasCalibratedVariant):  # a provider, e5: one way to run it
        return first
    model = provider.calibrated()
    if model is provider:
        return first
    return CachedEmbedder(model, first.cache) if isinstance(first, CachedEmbedder) else model
