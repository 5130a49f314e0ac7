"""`naive`: cosine similarity between the query and every chunk vector."""

from __future__ import annotations

from graphunified_query.strategies.base import RetrieverBase
from graphunified_query.strategies.contexts import chunk_result
from graphunified_query.strategies.params import NoParams, StrategyParams
from graphunified_query.strategies.results import Retrieval

NaiveParams = NoParams  # cosine search has no knobs beyond top_k


class NaiveRetriever(RetrieverBase[NaiveParams]):
    name = "naive"
    params_model = NaiveParams

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        self.using(params)  # nothing to read, but another strategy's parameters are refused
        if not query.strip():
            return Retrieval(self.name, ())
        hits = self.snapshot.chunk_vectors.search(self.context.embed_query(query), top_k)
        results = tuple(
            chunk_result(self.snapshot, row, min(max(score, 0.0), 1.0), dense_score=round(score, 6))
            for row, score in hits
        )
        return Retrieval(self.name, results)
