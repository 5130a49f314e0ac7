"""Model providers shared by the pipeline and the query side (never imports Dagster)."""

from graphunified_query.providers.embedding import (
    Embedder,
    EmbeddingError,
    EmbeddingModelMismatch,
    check_same_model,
    make_embedder,
)
from graphunified_query.providers.embedding_cache import CachedEmbedder, EmbeddingCache
from graphunified_query.providers.tokenizer import count_tokens, load_tokenizer

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "EmbeddingModelMismatch",
    "check_same_model",
    "count_tokens",
    "load_tokenizer",
    "make_embedder",
]
