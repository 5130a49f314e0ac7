"""Re-scoring retrieved contexts with a reranker, and `RerankingRetriever`, which wraps any retriever.

A reranker reads the query and each passage together (or at least scores them against each other
with more care than the first-stage index), so the wrapper over-retrieves ``top_k *
over_retrieve_multiplier`` candidates, rescores them, drops those below ``rerank_threshold`` and
keeps the best ``top_k`` (both knobs are `RerankParams`). Rerankers, all scoring in [0, 1] so
thresholds carry over:

- `LocalReranker` (`local_rerank`): local embedding cosine blended with query-term coverage; free.
- `LLMReranker` (`llm_rerank`): the configured LLM grades every passage 0-10 in one call.
- `VoyageReranker` (`voyage_rerank`): Voyage's hosted rerank model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from graphunified_query.context.candidates import admitted
from graphunified_query.core.providers.cost import Usage
from graphunified_query.strategies.base import Retriever, RetrieverContext
from graphunified_query.strategies.composable.base import ComposableRetriever, context_of, stats_of
from graphunified_query.strategies.params import FiniteFloat, StrategyParams
from graphunified_query.strategies.results import Retrieval, RetrievalResult


class RerankError(RuntimeError):
    """A hosted reranker failed for good; the message never holds a secret."""


@runtime_checkable
class Reranker(Protocol):
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in input order (higher is more relevant)."""
        ...


@dataclass(frozen=True)
class RerankOutcome:
    scores: list[float]
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    cost_usd: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)  # e.g. tokens billed, passages left unscored


def run_reranker(reranker: Reranker, query: str, texts: Sequence[str]) -> RerankOutcome:
    """Scores with what they cost: rerankers that call a paid API report it via `score_with_cost`."""
    if not texts:
        return RerankOutcome([])
    detailed = getattr(reranker, "score_with_cost", None)
    outcome = detailed(query, texts) if callable(detailed) else RerankOutcome(reranker.score(query, texts))
    if len(outcome.scores) != len(texts):
        raise ValueError(
            f"{reranker_name(reranker)} returned {len(outcome.scores)} scores for {len(texts)} texts"
        )
    return outcome


def reranker_name(reranker: Reranker) -> str:
    return str(getattr(reranker, "name", type(reranker).__name__))


class RerankParams(StrategyParams):
    over_retrieve_multiplier: int = Field(2, ge=1, le=20, description="Candidates = this x top_k.")
    # Named apart from a vector retriever's score_threshold (a cosine), which the inner one may take.
    rerank_threshold: FiniteFloat | None = Field(None, description="Rerank score a result needs.")


class RerankingRetriever(ComposableRetriever[RerankParams]):
    """The inner retriever runs with the parameters it was built with; a call's `RerankParams`
    are the wrapper's own."""

    name = "rerank"
    params_model = RerankParams

    def __init__(
        self,
        inner: Retriever,
        reranker: Reranker,
        params: RerankParams | None = None,
        *,
        context: RetrieverContext | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(context_of(inner, context), params)
        self.inner = inner
        self.reranker = reranker
        self.name = name or f"{inner.name}+rerank"

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        p = self.using(params)
        threshold = p.rerank_threshold
        if not query.strip() or top_k <= 0:
            return Retrieval(self.name, ())
        first = self.inner.retrieve(query, top_k * p.over_retrieve_multiplier)
        # Filters first: no reranker (nor its prompt) sees what the query's filters leave out.
        candidates = admitted(self.context.snapshot, first.results)
        outcome = run_reranker(self.reranker, query, [r.text for r in candidates])
        rescored = [
            _rescored(result, score) for result, score in zip(candidates, outcome.scores, strict=True)
        ]
        kept = [r for r in rescored if threshold is None or r.score >= threshold]
        kept.sort(key=lambda r: -r.score)  # stable: the inner order breaks ties
        metadata = {
            "reranker": reranker_name(self.reranker),
            "candidates": len(candidates),
            "dropped_below_threshold": len(rescored) - len(kept),
            "inner": dict(first.metadata),
            **outcome.metadata,
        }
        return Retrieval(
            self.name,
            tuple(kept[:top_k]),
            usage=first.usage + outcome.usage,
            llm_calls=first.llm_calls + outcome.llm_calls,
            cost_usd=first.cost_usd + outcome.cost_usd,
            metadata=metadata,
        )

    def get_stats(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "rerank",
            "reranker": reranker_name(self.reranker),
            **self.params.model_dump(),
            "inner": stats_of(self.inner),
        }


def _rescored(result: RetrievalResult, score: float) -> RetrievalResult:
    metadata = {**result.metadata, "retrieval_score": result.score, "rerank_score": float(score)}
    return replace(result, score=float(score), metadata=MappingProxyType(metadata))
