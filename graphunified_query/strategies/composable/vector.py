"""`VectorRetriever`: dense search over the chunk vectors, with LangChain's three search types.

- ``similarity``: the ``top_k`` chunks most cosine-similar to the query.
- ``mmr``: fetch the ``fetch_k`` most similar, then pick ``top_k`` of them by maximal marginal
  relevance (``lambda_mult``), so near-duplicate passages do not crowd out the rest.
- ``similarity_score_threshold``: ``similarity`` without the chunks below ``score_threshold``.

A ``score_threshold`` given with another search type filters that one's results by cosine too.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from graphunified_query.context.candidates import admitted
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.base import ComposableRetriever
from graphunified_query.strategies.composable.mmr import mmr
from graphunified_query.strategies.contexts import chunk_result
from graphunified_query.strategies.params import Cosine, StrategyParams, Unit
from graphunified_query.strategies.results import Retrieval

SearchType = Literal["similarity", "mmr", "similarity_score_threshold"]
SEARCH_TYPES: tuple[SearchType, ...] = ("similarity", "mmr", "similarity_score_threshold")


class VectorParams(StrategyParams):
    search_type: SearchType = Field(
        "similarity", description="similarity, mmr or similarity_score_threshold."
    )
    fetch_k: int = Field(20, ge=1, le=5000, description="mmr: candidates considered before diversifying.")
    lambda_mult: Unit = Field(0.5, description="mmr: 1 = relevance only, 0 = diversity only.")
    score_threshold: Cosine | None = Field(None, description="Minimum cosine similarity kept.")

    @model_validator(mode="after")
    def _threshold_given(self) -> VectorParams:
        if self.search_type == "similarity_score_threshold" and self.score_threshold is None:
            raise ValueError("search_type 'similarity_score_threshold' needs a score_threshold")
        return self


class VectorMMRParams(VectorParams):
    search_type: SearchType = Field("mmr", description="similarity, mmr or similarity_score_threshold.")


class VectorRetriever(ComposableRetriever[VectorParams]):
    name = "vector"
    params_model = VectorParams

    def __init__(
        self, context: RetrieverContext, params: VectorParams | None = None, *, name: str | None = None
    ) -> None:
        super().__init__(context, params)
        self.name = name or self.name

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        config = self.using(params)
        if not query.strip() or top_k <= 0:
            return Retrieval(self.name, ())
        index = self.snapshot.chunk_vectors
        q = self.context.embed_query(query)
        # (row, ranking score, cosine, extra metadata)
        ranked: list[tuple[int, float, float, dict[str, float]]] = []
        if config.search_type == "mmr":
            found = index.search(q, max(config.fetch_k, top_k))
            # Filters first: a left-out chunk must neither be picked nor push the others away.
            kept = {
                r.chunk_id
                for r in admitted(self.snapshot, [chunk_result(self.snapshot, row, c) for row, c in found])
            }
            candidates = [(row, c) for row, c in found if self.snapshot.chunks.ids[row] in kept]
            rows = [row for row, _ in candidates]
            floor = float("inf")
            for position, marginal in mmr(q, index.vectors(rows), top_k, config.lambda_mult):
                # The marginal score ranks the picks; a running minimum keeps it descending even when
                # the second pick is dissimilar to the first (see `mmr`).
                floor = min(floor, marginal)
                row, cosine = candidates[position]
                ranked.append((row, floor, cosine, {"mmr_score": round(marginal, 6)}))
        else:
            ranked = [(row, cosine, cosine, {}) for row, cosine in index.search(q, top_k)]
        if config.score_threshold is not None:
            ranked = [r for r in ranked if r[2] >= config.score_threshold]
        results = tuple(
            chunk_result(
                self.snapshot,
                row,
                score,
                search_type=config.search_type,
                dense_score=round(cosine, 6),
                **extra,
            )
            for row, score, cosine, extra in ranked
        )
        return Retrieval(self.name, results, metadata={"search_type": config.search_type})

    def get_stats(self) -> dict[str, Any]:
        index = self.snapshot.chunk_vectors
        return {
            "name": self.name,
            "kind": "vector",
            "search_type": self.params.search_type,
            "fetch_k": self.params.fetch_k,
            "lambda_mult": self.params.lambda_mult,
            "score_threshold": self.params.score_threshold,
            "chunks": len(index),
            "dimension": index.dimension,
            "model": self.snapshot.model,
        }
