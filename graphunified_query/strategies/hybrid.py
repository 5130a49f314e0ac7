"""`hybrid`: dense and BM25 rankings fused by weighted reciprocal rank fusion.

RRF needs no score calibration between the two signals: each list contributes
``weight / (k + rank)``; ``alpha`` is the dense weight.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from graphunified_query.core.indexes.dense import top_k as top_scores
from graphunified_query.strategies.base import RetrieverBase
from graphunified_query.strategies.contexts import chunk_result
from graphunified_query.strategies.params import StrategyParams, Unit
from graphunified_query.strategies.results import Retrieval


def weighted_rrf(rankings: Sequence[tuple[float, Sequence[int]]], k: int = 60) -> dict[int, float]:
    """``rankings`` are (weight, items best first); returns item → fused score."""
    fused: dict[int, float] = {}
    for weight, items in rankings:
        for rank, item in enumerate(items, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


class HybridParams(StrategyParams):
    alpha: Unit = Field(0.5, description="Weight of the dense ranking in the fusion (1 - alpha: BM25).")
    # Not `k`: LangChain and most callers mean "number of results" by k.
    rrf_k: int = Field(
        60, ge=1, le=10_000, description="RRF constant: each list adds weight / (rrf_k + rank)."
    )


class HybridRetriever(RetrieverBase[HybridParams]):
    name = "hybrid"
    params_model = HybridParams

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        p = self.using(params)
        if not query.strip():
            return Retrieval(self.name, ())
        depth = 2 * top_k
        dense = self.snapshot.chunk_vectors.search(self.context.embed_query(query), depth)
        lexical_scores = self.snapshot.bm25.scores(query)
        lexical = [(row, s) for row, s in top_scores(lexical_scores, depth) if s > 0]
        fused = weighted_rrf(
            [(p.alpha, [r for r, _ in dense]), (1 - p.alpha, [r for r, _ in lexical])], k=p.rrf_k
        )
        dense_at = {row: (rank, score) for rank, (row, score) in enumerate(dense, start=1)}
        bm25_at = {row: (rank, score) for rank, (row, score) in enumerate(lexical, start=1)}
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:top_k]
        results = tuple(
            chunk_result(
                self.snapshot,
                row,
                score,
                dense_rank=dense_at.get(row, (None, None))[0],
                dense_score=_rounded(dense_at.get(row, (None, None))[1]),
                bm25_rank=bm25_at.get(row, (None, None))[0],
                bm25_score=_rounded(bm25_at.get(row, (None, None))[1]),
                fusion=f"rrf(k={p.rrf_k}, alpha={p.alpha})",
            )
            for row, score in ranked
        )
        return Retrieval(self.name, results)


def _rounded(value: float | np.floating | None) -> float | None:
    return None if value is None else round(float(value), 6)
