"""An embedder that records what it is asked to embed: the one call-counting wrapper the tests share.

Tests that check how a component embeds (one batch, only the cache's misses, the question alone)
wrap the real model or a hand-made fake in `RecordingEmbedder` and read what reached it; the
wrapped embedder answers unchanged. A test that needs to act on a call (hold it, fail it)
subclasses it and calls ``super().embed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

import numpy as np

from graphunified_query.core.providers.embedding import Embedder, EmbeddingKind

E = TypeVar("E", bound=Embedder)


class RecordingEmbedder(Generic[E]):
    """``inner`` behind the Embedder protocol; ``calls`` holds (kind, texts) of every call, in order."""

    def __init__(self, inner: E) -> None:
        self.inner = inner
        self.calls: list[tuple[EmbeddingKind, tuple[str, ...]]] = []

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension  # read per call: some providers learn it from their first answer

    @property
    def batches(self) -> list[list[str]]:
        """The texts of each call."""
        return [list(texts) for _, texts in self.calls]

    @property
    def texts(self) -> list[str]:
        """Every text embedded, in call order."""
        return [text for _, texts in self.calls for text in texts]

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        self.calls.append((kind, tuple(texts)))
        return self.inner.embed(texts, kind=kind)
