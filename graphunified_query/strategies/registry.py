"""The one registry of strategies: a name, how to build its retriever, its parameter model.

Written out by hand, with no import side effects: adding a strategy is its module, its entry in
`catalog.CATALOG` (tier, summary, fallbacks, cost: what the CLI's parser reads without importing
any retriever) and its retriever and parameter model in `_BUILT` here. Everything that lists
strategies derives from `STRATEGIES`: the CLI's ``--strategy`` choices and ``compare`` (the
``core`` tier), ``GET /strategies`` and the OpenAPI schema, eval's ``all``, the router's
fallbacks, the ``strategies:`` section of ``settings.yaml`` and the generated ``docs/settings.md``;
and, with `core/artifacts.READS`, which strategies a build can serve (`served`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from graphunified_query.core.artifacts import needed_artifacts
from graphunified_query.strategies.base import Retriever, RetrieverContext
from graphunified_query.strategies.catalog import AUTO as AUTO  # where callers have always found it
from graphunified_query.strategies.catalog import CATALOG, Tier
from graphunified_query.strategies.composable.graph import GraphDFSParams, GraphParams, GraphRetriever
from graphunified_query.strategies.composable.vector import VectorMMRParams, VectorParams, VectorRetriever
from graphunified_query.strategies.expanded import ExpandedParams, ExpandedRetriever
from graphunified_query.strategies.graphrag_global import GraphRAGGlobalParams, GraphRAGGlobalRetriever
from graphunified_query.strategies.graphrag_local import GraphRAGLocalParams, GraphRAGLocalRetriever
from graphunified_query.strategies.hipporag import HippoRAGParams, HippoRAGRetriever
from graphunified_query.strategies.hybrid import HybridParams, HybridRetriever
from graphunified_query.strategies.lightrag import LightRAGParams, LightRAGRetriever
from graphunified_query.strategies.naive import NaiveParams, NaiveRetriever
from graphunified_query.strategies.params import StrategyParams


@dataclass(frozen=True)
class Strategy:
    name: str
    # The retriever, built with its parameters (the engine passes settings over defaults): what a
    # call without parameters of its own uses, and what `get_stats` reports.
    # Each factory takes its own strategy's model (`params`), which the registry validated.
    build: Callable[[RetrieverContext, Any], Retriever]
    params: type[StrategyParams]
    tier: Tier  # tier, summary, fallbacks, deepens, cost: as `catalog.Entry` says
    summary: str
    fallbacks: tuple[str, ...] = ("naive",)
    # Keys of its settings.yaml entry that say what is built (a composition), not parameters.
    structure: frozenset[str] = frozenset()
    deepens: bool = True
    cost: int = 2
    # A composition's strategies (settings.yaml's combine/rerank): it reads what they read.
    composed_of: tuple[str, ...] = ()

    @property
    def reads(self) -> frozenset[str]:
        """The artifacts only some strategies read that this one does (`core/artifacts.READS`)."""
        return needed_artifacts([self.name, *self.composed_of])


# Each catalog entry's retriever and parameter model: what the catalog declares without importing.
_BUILT: dict[str, tuple[Callable[[RetrieverContext, Any], Retriever], type[StrategyParams]]] = {
    "naive": (NaiveRetriever, NaiveParams),
    "hybrid": (HybridRetriever, HybridParams),
    "graphrag_local": (GraphRAGLocalRetriever, GraphRAGLocalParams),
    "graphrag_global": (GraphRAGGlobalRetriever, GraphRAGGlobalParams),
    "lightrag": (LightRAGRetriever, LightRAGParams),
    "hipporag": (HippoRAGRetriever, HippoRAGParams),
    "expanded": (ExpandedRetriever, ExpandedParams),
    "vector": (partial(VectorRetriever, name="vector"), VectorParams),
    "vector_mmr": (partial(VectorRetriever, name="vector_mmr"), VectorMMRParams),
    "graph_bfs": (partial(GraphRetriever, name="graph_bfs"), GraphParams),
    "graph_dfs": (partial(GraphRetriever, name="graph_dfs"), GraphDFSParams),
}
if _BUILT.keys() != CATALOG.keys():  # a strategy in one table only: fail at import, not at a query
    raise RuntimeError(f"catalog and registry disagree: {sorted(_BUILT.keys() ^ CATALOG.keys())}")

STRATEGIES: dict[str, Strategy] = {
    name: Strategy(name, *_BUILT[name], e.tier, e.summary, e.fallbacks, deepens=e.deepens, cost=e.cost)
    for name, e in CATALOG.items()
}


def names(tier: Tier | None = None) -> tuple[str, ...]:
    """Registered names in registry order, of one tier or all."""
    return tuple(name for name, s in STRATEGIES.items() if tier is None or s.tier == tier)


def fallbacks() -> dict[str, tuple[str, ...]]:
    """The router's fallback chains, read from the registry."""
    return {name: s.fallbacks for name, s in STRATEGIES.items() if s.tier == "core"}


def served(
    strategy: Strategy, built_for: Iterable[str] | None, parts: Mapping[str, Sequence[str]] | None = None
) -> bool:
    """Whether an index built for the strategies ``built_for`` (None: all, or a home built before
    `strategies.enabled`; ``parts``: its compositions' strategies) holds all ``strategy`` reads."""
    return strategy.reads <= needed_artifacts(built_for, parts)


def cost_order(name: str) -> tuple[int, int]:
    """Sort key, cheapest first: the strategy's `cost`, then registry order (unknown names last)."""
    order = list(STRATEGIES)
    if name not in STRATEGIES:
        return (10**6, len(order))
    return (STRATEGIES[name].cost, order.index(name))
