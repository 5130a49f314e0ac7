"""The embedding interface every provider implements, and how the configured one is chosen."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from graphunified_query.core.plugins import AUTO, EMBEDDERS
from graphunified_query.core.registry import MissingKey
from graphunified_query.core.settings.embedding import EmbeddingSettings

EmbeddingKind = Literal["document", "query"]


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


@runtime_checkable
class HasCalibratedVariant(Protocol):
    """A model that runs in variants, one of which the graph's cosine thresholds were set on."""

    def calibrated(self) -> Embedder:
        """The same model in that variant (itself when it runs it)."""
        ...


def check_same_model(recorded: str, current: str) -> None:
    """Refuse to mix an index's vectors with vectors from a different model."""
    if recorded != current:
        raise EmbeddingModelMismatch(
            f"The index was embedded with {recorded!r} but the configured model is {current!r}; "
            "vectors of different models are not comparable. Use a fresh --home, or re-embed everything."
        )


def make_embedder(settings: EmbeddingSettings, environ: Mapping[str, str] = os.environ) -> Embedder:
    """The configured provider (`embedders.EMBEDDERS`): 'auto' picks Voyage when its key is in
    `environ`, else the local `embedding.models` (fused when several)."""
    provider = resolved_provider(settings, environ)
    try:
        return EMBEDDERS.create(provider, settings, environ=environ)
    except MissingKey as error:
        raise EmbeddingError(f"{error}, or set embedding.provider to 'local' or 'auto'.") from None


def resolved_provider(settings: EmbeddingSettings, environ: Mapping[str, str] = os.environ) -> str:
    """The embedder `make_embedder` builds: 'auto' is Voyage when its key is in ``environ``."""
    if settings.provider == AUTO:
        return "voyage" if EMBEDDERS.key("voyage", environ) else "local"
    return settings.provider


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (an all-zero row stays zero rather than becoming NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
