"""The embedding interface every provider implements, and how the configured one is chosen."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

import numpy as np

from graphunified_query.settings import EmbeddingSettings

EmbeddingKind = Literal["document", "query"]


class EmbeddingError(RuntimeError):
    """A provider could not embed after its retries; the message never holds a secret."""


class EmbeddingModelMismatch(ValueError):
    """Vectors from two models would be compared: refused."""


class Embedder(Protocol):
    model_name: str
    dimension: int

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        """float32 array (len(texts), dimension), each row L2-normalized."""
        ...


def check_same_model(recorded: str, current: str) -> None:
    if recorded != current:
        raise EmbeddingModelMismatch(
            f"The index was embedded with {recorded!r} but the configured model is {current!r}; "
            "vectors of different models are not comparable. Use a fresh --home, or re-embed everything."
        )


def make_embedder(settings: EmbeddingSettings, environ: Mapping[str, str] = os.environ) -> Embedder:
    key = environ.get("VOYAGE_API_KEY")
    provider = settings.provider
    if provider == "auto":
        provider = "voyage" if key else "local"
    if provider == "local":
        from graphunified_query.providers.local_embedder import LocalMiniLMEmbedder

        return LocalMiniLMEmbedder(max_length=settings.max_length, batch_size=settings.batch_size)
    if not key:
        raise EmbeddingError("embedding.provider is 'voyage' but VOYAGE_API_KEY is not set; export it.")
    from graphunified_query.providers.voyage_embedder import VoyageEmbedder  # imports are slow

    return VoyageEmbedder(
        key,
        model=settings.voyage_model,
        base_url=settings.voyage_base_url or environ.get("VOYAGE_BASE_URL"),
        batch_size=settings.batch_size,
        max_retries=settings.max_retries,
        timeout=settings.timeout_seconds,
    )


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
