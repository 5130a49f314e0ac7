"""The one registry of strategies: a name, how to build its retriever, its parameter model.

Written out by hand, with no import side effects: adding a strategy is its module plus one line in
`STRATEGIES`. Everything that lists strategies derives from this dict: the CLI's ``--strategy``
choices and ``compare`` (the ``core`` tier), ``GET /strategies`` and the OpenAPI schema, eval's
``all``, the router's fallbacks, the ``strategies:`` section of ``settings.yaml`` and the generated
``docs/settings.md``; and, with `core/artifacts.READS`, which strategies a build can serve (`served`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from graphunified_query.core.artifacts import needed_artifacts
from graphunified_query.strategies.base import Retriever, RetrieverContext
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

AUTO = "auto"  # not a strategy: the router picks one per question
# core: the six compared side by side (`compare`, eval `all`, the router's targets);
# extra: chosen by name only; composable: building blocks, also combinable in settings.yaml.
Tier = Literal["core", "extra", "composable"]


@dataclass(frozen=True)
class Strategy:
    name: str
    # The retriever, built with its parameters (the engine passes settings over defaults): what a
    # call without parameters of its own uses, and what `get_stats` reports.
    # Each factory takes its own strategy's model (`params`), which the registry validated.
    build: Callable[[RetrieverContext, Any], Retriever]
    params: type[StrategyParams]
    tier: Tier
    summary: str
    # Where the router sends this strategy's questions when the index cannot serve it, best first.
    fallbacks: tuple[str, ...] = ("naive",)
    # Keys of its settings.yaml entry that say what is built (a composition), not parameters.
    structure: frozenset[str] = frozenset()
    # Whether a deeper list may be asked for when filters leave fewer than top_k (`query_path`);
    # False where the candidates do not grow with top_k and asking again repeats LLM calls.
    deepens: bool = True
    # Relative cost of one query, cheapest 0: dense only < dense + BM25 < graph walks < LLM calls at
    # query time. Ties in the learned router's labels go to the cheaper strategy (`cost_order`).
    cost: int = 2
    # A composition's strategies (settings.yaml's combine/rerank): it reads what they read.
    composed_of: tuple[str, ...] = ()

    @property
    def reads(self) -> frozenset[str]:
        """The artifacts only some strategies read that this one does (`core/artifacts.READS`)."""
        return needed_artifacts([self.name, *self.composed_of])


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("naive", NaiveRetriever, NaiveParams, "core", "cosine over chunk vectors", (), cost=0),
        Strategy("hybrid", HybridRetriever, HybridParams, "core", "dense + BM25, weighted RRF", cost=1),
        Strategy(
            "graphrag_local",
            GraphRAGLocalRetriever,
            GraphRAGLocalParams,
            "core",
            "entity neighbourhoods (Microsoft GraphRAG local search)",
            ("lightrag", "hipporag", "hybrid", "naive"),
        ),
        Strategy(
            "graphrag_global",
            GraphRAGGlobalRetriever,
            GraphRAGGlobalParams,
            "core",
            "community reports, map-reduce (GraphRAG global search)",
            ("lightrag", "hybrid", "naive"),
            deepens=False,
            cost=4,  # an LLM map over community reports per question
        ),
        Strategy(
            "lightrag",
            LightRAGRetriever,
            LightRAGParams,
            "core",
            "entities and relationships, dual level (LightRAG)",
            ("hipporag", "graphrag_local", "hybrid", "naive"),
            cost=3,  # keyword extraction by the LLM when one is configured
        ),
        Strategy(
            "hipporag",
            HippoRAGRetriever,
            HippoRAGParams,
            "core",
            "personalized PageRank over the entity graph (HippoRAG 2)",
            ("lightrag", "graphrag_local", "hybrid", "naive"),
        ),
        Strategy("expanded", ExpandedRetriever, ExpandedParams, "extra", "vector seeds + graph expansion"),
        Strategy(
            "vector",
            partial(VectorRetriever, name="vector"),
            VectorParams,
            "composable",
            "chunk vectors",
        ),
        Strategy(
            "vector_mmr",
            partial(VectorRetriever, name="vector_mmr"),
            VectorMMRParams,
            "composable",
            "MMR",
        ),
        Strategy(
            "graph_bfs",
            partial(GraphRetriever, name="graph_bfs"),
            GraphParams,
            "composable",
            "BFS walk",
        ),
        Strategy(
            "graph_dfs",
            partial(GraphRetriever, name="graph_dfs"),
            GraphDFSParams,
            "composable",
            "DFS walk",
        ),
    )
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
