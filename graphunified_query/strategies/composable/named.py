"""Compositions named in ``settings.yaml``: two registered strategies combined, or one reranked.

    strategies:
      vector_graph:                  # HybridCombiner(vector_mmr, graph_bfs)
        combine: [vector_mmr, graph_bfs]
        mode: weighted               # concat | rerank | weighted | expand
        vector_weight: 0.6
      hybrid_reranked:               # RerankingRetriever(hybrid, local reranker)
        rerank: hybrid
        reranker: local              # local | llm | voyage
        over_retrieve_multiplier: 3

Such a name is then a strategy like any other, on every entry point (``ask --strategy
vector_graph``, HTTP, eval, LangChain, ``GET /strategies``). ``combine``/``rerank`` and
``reranker`` say what is built; the other keys are the composition's parameters (`CombineParams`,
`RerankParams`), which a call may override. The strategies inside keep their own
``strategies.<name>`` settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field, ValidationError

from graphunified_query.strategies.base import Retriever, RetrieverBase, RetrieverContext
from graphunified_query.strategies.composable.combine import HybridCombiner, Mode
from graphunified_query.strategies.params import FiniteFloat, StrategyParams
from graphunified_query.strategies.registry import Strategy
from graphunified_query.strategies.rerank.registry import RerankerName, make_reranker
from graphunified_query.strategies.rerank.rerank import RerankingRetriever
from graphunified_query.strategies.results import Retrieval

STRUCTURE = frozenset({"combine", "rerank", "reranker"})  # what is built, not per-call parameters


class CombineParams(StrategyParams):
    mode: Mode = Field("concat", description="concat, rerank, weighted or expand.")
    vector_weight: FiniteFloat = Field(0.5, ge=0.0, description="weighted: weight of the first strategy.")
    graph_weight: FiniteFloat = Field(0.5, ge=0.0, description="weighted: weight of the second strategy.")
    related_k: int | None = Field(None, ge=1, le=1000, description="expand: most results of the second.")


class RerankParams(StrategyParams):
    over_retrieve_multiplier: int = Field(2, ge=1, le=20, description="Candidates = this x top_k.")
    rerank_threshold: FiniteFloat | None = Field(None, description="Rerank score a result needs.")


def is_composition(entry: Mapping[str, Any]) -> bool:
    return "combine" in entry or "rerank" in entry


def composition(
    name: str, entry: Mapping[str, Any], inner: Callable[[str], Retriever], known: Mapping[str, Strategy]
) -> Strategy:
    """The `Strategy` ``strategies.<name>`` defines; ``inner(n)`` is strategy ``n`` with its settings."""
    from graphunified_query.core.settings.model import SettingsError

    parts = entry.get("combine") if "combine" in entry else [entry.get("rerank")]
    if not isinstance(parts, list) or len(parts) != (2 if "combine" in entry else 1):
        raise SettingsError(f"strategies.{name}: combine takes two strategy names, rerank one; not {parts!r}")
    for part in parts:
        if part not in known:
            raise SettingsError(
                f"strategies.{name}: {part!r} is not a strategy; choose from: {', '.join(known)}"
            )
    reranker: RerankerName | None = entry.get("reranker")
    params = CombineParams if "combine" in entry else RerankParams
    try:
        params.model_validate({k: v for k, v in entry.items() if k not in STRUCTURE})
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        raise SettingsError(
            f"strategies.{name}.{'.'.join(map(str, problem['loc']))}: {problem['msg']}; "
            f"{name} takes: {', '.join([*STRUCTURE, *params.model_fields])}"
        ) from None

    def build(context: RetrieverContext) -> Retriever:
        chosen = make_reranker(reranker, context) if reranker else None
        if params is CombineParams:
            first, second = (inner(p) for p in parts)
            return HybridCombiner(first, second, reranker=chosen, context=context, name=name)
        return RerankingRetriever(inner(parts[0]), chosen or make_reranker("local", context), name=name)

    what = (
        f"{' + '.join(parts)}" if params is CombineParams else f"{parts[0]} reranked ({reranker or 'local'})"
    )
    return Strategy(name, build, params, "composable", f"settings: {what}", structure=STRUCTURE)


class WithSettings(RetrieverBase):
    """A strategy inside a composition, run with its ``strategies.<name>`` settings under the call's."""

    def __init__(self, inner: Retriever, defaults: Mapping[str, Any], context: RetrieverContext) -> None:
        super().__init__(context)
        self.inner = inner
        self.defaults = dict(defaults)
        self.name = inner.name

    def retrieve(self, query: str, top_k: int = 10, **params: Any) -> Retrieval:
        return self.inner.retrieve(query, top_k, **{**self.defaults, **params})
