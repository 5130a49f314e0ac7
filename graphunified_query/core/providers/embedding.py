"""The embedding interface every provider implements, and how the configured one is chosen."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

import numpy as np

from graphunified_query.core.settings.embedding import EmbeddingSettings

EmbeddingKind = Literal["document", "query"]
VOYAGE_KEY_VARIABLE = "VOYAGE_API_KEY"
VOYAGE_URL_VARIABLE = "VOYAGE_BASE_URL"


class EmbeddingError(RuntimeError):
    """A provider could not embed after its retries; the message never holds a secret."""


class EmbeddingModelMismatch(ValueError):
    """Vectors from two models would be compared: refused."""


class Embedder(Protocol):
    # Read-only properties, so both plain class attributes and delegating properties conform.
    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        """float32 array (len(texts), dimension), each row L2-normalized, in input order."""
        ...


def check_same_model(recorded: str, current: str) -> None:
    """Refuse to mix an index's vectors with vectors from a different model."""
    if recorded != current:
        raise EmbeddingModelMismatch(
            f"The index was embedded with {recorded!r} but the configured model is {current!r}; "
            "vectors of different models are not comparable. Use a fresh --home, or re-embed everything."
        )


def make_embedder(settings: EmbeddingSettings, environ: Mapping[str, str] = os.environ) -> Embedder:
    """The configured provider: 'auto' picks Voyage when its key is in `environ`, else the local
    `embedding.models` (fused when several)."""
    key = environ.get(VOYAGE_KEY_VARIABLE, "").strip()
    provider = settings.provider
    if provider == "auto":
        provider = "voyage" if key else "local"
    if provider == "local":
        from graphunified_query.core.providers.local_models import local_embedder

        return local_embedder(settings)
    if not key:
        raise EmbeddingError(
            f"embedding.provider is 'voyage' but {VOYAGE_KEY_VARIABLE} is not set; export it, "
            "or set embedding.provider to 'local' or 'auto'."
        )
    from graphunified_query.core.providers.voyage_embedder import VoyageEmbedder  # the SDK is slow to import

    return VoyageEmbedder(
        key,
        model=settings.voyage_model,
        base_url=settings.voyage_base_url or environ.get(VOYAGE_URL_VARIABLE) or None,
        batch_size=settings.batch_size,
        max_retries=settings.max_retries,
        timeout=settings.timeout_seconds,
    )


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (an all-zero row stays zero rather than becoming NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
