"""`HybridCombiner`: any two retrievers as one, in one of four modes (seed 004's HybridRetriever).

- ``concat``: both sides' results, ``first``'s before ``second``'s new ones. Each side keeps a
  share of ``top_k`` (``second`` at least half, rounded down, when it has that many), and a side
  that found fewer leaves its places to the other: one side never crowds the other out.
- ``rerank``: the union of both, re-scored by ``reranker`` (by default the cosine between the
  query's and each context's stored vector: chunk, entity or relationship vectors of the index,
  no re-embedding), best first.
- ``weighted``: a weighted selection: ``vector_weight / (vector_weight + graph_weight)`` of
  ``top_k`` from ``first``'s ranking, the rest from ``second``'s (a short side leaves its places
  to the other), ranked by each side's scores min-max normalized to [0, 1] (their scales differ:
  cosine, decayed graph scores, RRF...) as ``vector_weight * first + graph_weight * second``; a
  context both sides found gets both terms and counts in ``first``'s share.
- ``expand``: ``first``'s results are the core (``metadata["role"] = "core"``); ``second``'s new
  ones follow as related context (``"related"``), at most ``related_k`` of them (default: half of
  ``top_k``), more when ``first`` found fewer than its share.

The weights are named for the usual pairing, a vector retriever first and a graph one second, but
any two retrievers combine. Every mode deduplicates (same chunk id; same kind and text for graph
elements): the copy its side scored higher is kept, and ``metadata["sources"]`` /
``["source_scores"]`` record every side that found it. ``concat`` and ``expand`` are orderings,
not fusions, so their ``score`` is the position (1.0 for the first, falling evenly); the sides'
own scores stay in ``source_scores``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphunified_query.context.candidates import admitted
from graphunified_query.strategies.base import Retriever, RetrieverContext
from graphunified_query.strategies.composable.base import ComposableRetriever, context_of, stats_of
from graphunified_query.strategies.composable.dedup import Candidate, collect, dedup_key
from graphunified_query.strategies.params import FiniteFloat, StrategyParams
from graphunified_query.strategies.rerank.local import LocalReranker
from graphunified_query.strategies.rerank.rerank import Reranker, RerankOutcome, reranker_name, run_reranker
from graphunified_query.strategies.results import Retrieval, RetrievalResult

Mode = Literal["concat", "rerank", "weighted", "expand"]
MODES: tuple[Mode, ...] = ("concat", "rerank", "weighted", "expand")


class CombineParams(StrategyParams):
    mode: Mode = Field("concat", description="concat, rerank, weighted or expand.")
    vector_weight: FiniteFloat = Field(0.5, ge=0.0, description="weighted: weight of the first strategy.")
    graph_weight: FiniteFloat = Field(0.5, ge=0.0, description="weighted: weight of the second strategy.")
    related_k: int | None = Field(None, ge=1, le=1000, description="expand: most results of the second.")


class HybridCombiner(ComposableRetriever[CombineParams]):
    """Each side runs with the parameters it was built with; a call's `CombineParams` are the
    combiner's own (mode, weights, related_k)."""

    name = "hybrid_combiner"
    params_model = CombineParams

    def __init__(
        self,
        first: Retriever,
        second: Retriever,
        params: CombineParams | None = None,
        *,
        reranker: Reranker | None = None,
        context: RetrieverContext | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(context_of(first, context), params)
        self.first = first
        self.second = second
        self.reranker: Reranker = reranker or LocalReranker(self.context, semantic_weight=1.0)
        self.name = name or f"{first.name}+{second.name}:{self.params.mode}"
        # Source labels: the sides' names, unless they share one.
        same = first.name == second.name
        self.labels = ("first", "second") if same else (first.name, second.name)

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        config = self.using(params)
        if not query.strip() or top_k <= 0:
            return Retrieval(self.name, ())
        related_k = config.related_k if config.related_k is not None else top_k // 2
        first_k = max(top_k - related_k, 1) if config.mode == "expand" else top_k
        first = self.first.retrieve(query, first_k)
        second = self.second.retrieve(query, top_k)
        # Filters first: what the query's filters leave out takes no share, no rank, no rerank.
        snapshot = self.context.snapshot
        sides = [
            (self.labels[0], tuple(admitted(snapshot, first.results))),
            (self.labels[1], tuple(admitted(snapshot, second.results))),
        ]
        outcome = RerankOutcome([])
        if config.mode == "concat":
            chosen = _shares(collect(sides), self.labels[0], top_k - top_k // 2, top_k)
            results = _positional(chosen)
        elif config.mode == "expand":
            results = _expand(collect(sides), self.labels[0], top_k)
        elif config.mode == "weighted":
            results = _weighted(sides, (config.vector_weight, config.graph_weight), top_k)
        else:
            candidates = collect(sides)
            outcome = run_reranker(self.reranker, query, [c.result.text for c in candidates])
            order = sorted(range(len(candidates)), key=lambda i: -outcome.scores[i])[:top_k]
            results = tuple(
                candidates[i].finish(outcome.scores[i], rerank_score=outcome.scores[i]) for i in order
            )
        metadata = {
            "mode": config.mode,
            "sides": {self.labels[0]: dict(first.metadata), self.labels[1]: dict(second.metadata)},
            **outcome.metadata,
        }
        if config.mode == "rerank":
            metadata["reranker"] = reranker_name(self.reranker)
        return Retrieval(
            self.name,
            results,
            usage=first.usage + second.usage + outcome.usage,
            llm_calls=first.llm_calls + second.llm_calls + outcome.llm_calls,
            cost_usd=first.cost_usd + second.cost_usd + outcome.cost_usd,
            metadata=metadata,
        )

    def get_stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "name": self.name,
            "kind": "combiner",
            **self.params.model_dump(),
            "reranker": reranker_name(self.reranker),
        }
        return stats | {"first": stats_of(self.first), "second": stats_of(self.second)}


def _shares(candidates: list[Candidate], first: str, first_share: int, top_k: int) -> list[Candidate]:
    """``first``'s candidates (in its order), then the other side's new ones: ``first_share`` of
    ``top_k`` for ``first`` and the rest for the other, a short side leaving its places to the other."""
    own = [c for c in candidates if first in c.scores]
    other = [c for c in candidates if first not in c.scores]
    take_other = min(len(other), top_k - min(len(own), first_share))
    take_own = min(len(own), top_k - take_other)
    return own[:take_own] + other[:take_other]


def _positional(candidates: list[Candidate]) -> tuple[RetrievalResult, ...]:
    """An ordering as scores: 1.0 for the first, falling evenly, so the order is the ranking."""
    n = len(candidates)
    return tuple(c.finish(1.0 - i / n) for i, c in enumerate(candidates))


def _expand(candidates: list[Candidate], core: str, top_k: int) -> tuple[RetrievalResult, ...]:
    found = [c for c in candidates if core in c.scores][:top_k]
    # Related context fills what the core left of top_k: `related_k` of it when the core side
    # found its full share, more when it found fewer.
    related = [c for c in candidates if core not in c.scores][: top_k - len(found)]
    ordered = [(c, "core") for c in found] + [(c, "related") for c in related]
    n = len(ordered)
    return tuple(c.finish(1.0 - i / n, role=role) for i, (c, role) in enumerate(ordered))


def _weighted(
    sides: list[tuple[str, tuple[RetrievalResult, ...]]], weights: tuple[float, float], top_k: int
) -> tuple[RetrievalResult, ...]:
    fused: dict[tuple[str, str], dict[str, float]] = {}  # context -> side label -> weighted part
    for (label, results), weight in zip(sides, weights, strict=True):
        for result, norm in zip(results, _min_max([r.score for r in results]), strict=True):
            parts = fused.setdefault(dedup_key(result), {})
            # A context one side returned twice counts once, at its best.
            parts[label] = max(parts.get(label, 0.0), weight * norm)
    # The selection: each side's share of top_k is its weight's share (even when both are 0).
    total = sum(weights)
    first_share = round(top_k * weights[0] / total) if total > 0 else top_k - top_k // 2
    candidates = _shares(collect(sides), sides[0][0], first_share, top_k)
    scored = [(sum(fused[dedup_key(c.result)].values()), i) for i, c in enumerate(candidates)]
    scored.sort(key=lambda s: (-s[0], s[1]))  # ties: order of first appearance
    return tuple(
        candidates[i].finish(
            score, weighted_parts={k: round(v, 6) for k, v in fused[dedup_key(candidates[i].result)].items()}
        )
        for score, i in scored[:top_k]
    )


def _min_max(scores: list[float]) -> list[float]:
    """Scores mapped to [0, 1]; all equal (or just one) map to 1: the side's best is its best."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]
