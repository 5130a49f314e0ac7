"""`VoyageReranker`: Voyage AI's hosted cross-encoder (``POST /v1/rerank``) through the `voyageai` SDK.

The same client set-up and retry policy as `VoyageEmbedder`: the SDK's own retries off, ours
bounded and honouring retry-after, the key masked out of every error message. Relevance scores
are in [0, 1]; ``top_k`` is left unset so every passage is scored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import voyageai
from voyageai.object.reranking import RerankingObject

from graphunified_query.core.plugins import voyage_base_url
from graphunified_query.core.providers.voyage_embedder import RetryPolicy, _masker, call_with_retries
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.rerank.rerank import RerankError, RerankOutcome

log = logging.getLogger(__name__)
DEFAULT_MODEL = "rerank-2.5"


class VoyageReranker:
    name = "voyage"

    def __init__(
        self,
        api_key: str,
        *,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
    ) -> None:
        self.model = model
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._mask = _masker(api_key)
        self._client = voyageai.Client(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    def __repr__(self) -> str:
        return f"VoyageReranker(model={self.model!r})"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.score_with_cost(query, texts).scores

    def score_with_cost(self, query: str, texts: Sequence[str]) -> RerankOutcome:
        if not texts:
            return RerankOutcome([])
        documents = [text if text.strip() else " " for text in texts]  # Voyage rejects empty strings
        result = self._rerank(query, documents)
        scores = [0.0] * len(texts)
        for item in result.results:
            scores[item.index] = float(item.relevance_score)
        return RerankOutcome(scores, metadata={"rerank_tokens": int(result.total_tokens)})

    def _rerank(self, query: str, documents: list[str]) -> RerankingObject:
        return call_with_retries(
            lambda: self._client.rerank(query, documents, model=self.model, truncation=True),
            RetryPolicy("Voyage rerank", self.max_retries, self.base_delay, self.max_delay, self._mask),
            RerankError,
        )


def build(context: RetrieverContext, *, environ: Mapping[str, str], key: str) -> VoyageReranker:
    """The registry's factory (`rerank/registry.py`), given the key its entry declares; the endpoint
    and retry policy come from the embedding settings."""
    embedding = context.settings.embedding
    return VoyageReranker(
        key,
        base_url=voyage_base_url(embedding.voyage_base_url, environ),
        max_retries=embedding.max_retries,
        timeout=embedding.timeout_seconds,
    )
