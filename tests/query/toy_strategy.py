"""A toy strategy in one module: what a new strategy writes (the test adds its one registry line)."""

from __future__ import annotations

from pydantic import Field

from graphunified_query.strategies.base import RetrieverBase
from graphunified_query.strategies.contexts import chunk_result
from graphunified_query.strategies.params import StrategyParams
from graphunified_query.strategies.registry import Strategy
from graphunified_query.strategies.results import Retrieval


class ToyParams(StrategyParams):
    stride: int = Field(1, ge=1, le=10, description="Take every stride-th chunk.")


class ToyRetriever(RetrieverBase[ToyParams]):
    name = "toy"
    params_model = ToyParams

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        rows = range(0, len(self.snapshot.chunks.ids), self.using(params).stride)
        return Retrieval(
            self.name, tuple(chunk_result(self.snapshot, r, 1.0 / (1 + r)) for r in rows)[:top_k]
        )


TOY = Strategy("toy", ToyRetriever, ToyParams, "core", "every stride-th chunk, in index order")
