"""The factory, get_stats, and the composed retrievers on the built two-hop index."""

from __future__ import annotations

import asyncio
import math

import pytest

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.combine import CombineParams, HybridCombiner
from graphunified_query.strategies.composable.factory import build
from graphunified_query.strategies.composable.graph import GraphRetriever
from graphunified_query.strategies.composable.vector import VectorRetriever
from graphunified_query.strategies.naive import NaiveRetriever
from graphunified_query.strategies.registry import names
from graphunified_query.strategies.rerank.local import LocalReranker
from graphunified_query.strategies.rerank.rerank import RerankingRetriever, RerankParams
from tests.query.compose_support import CHUNKS, ENTITIES, RELATIONSHIPS, make_context

BUILDERS = names("composable")  # the composable tier: what `build` hands out

TWO_HOP = "On which river is the town where Ada Whitlock was born?"


@pytest.fixture
def context() -> RetrieverContext:
    return make_context(CHUNKS, ENTITIES, RELATIONSHIPS)


def test_build_names_each_composable_retriever(context: RetrieverContext) -> None:
    assert set(BUILDERS) == {"vector", "vector_mmr", "graph_bfs", "graph_dfs"}
    built = {name: build(name, context) for name in BUILDERS}
    assert isinstance(built["vector"], VectorRetriever) and built["vector_mmr"].params.search_type == "mmr"
    assert isinstance(built["graph_dfs"], GraphRetriever) and built["graph_dfs"].params.traversal == "dfs"
    assert {r.name for r in built.values()} == set(BUILDERS)
    assert build("graph_bfs", context, max_hops=3).params.max_hops == 3
    assert not set(BUILDERS) & {"naive", "hybrid", "hipporag"}  # no clash with the strategies
    with pytest.raises(ValueError, match="vector_mmr"):
        build("vector_similarity", context)


def test_get_stats_reports_parameters_and_index_sizes(context: RetrieverContext) -> None:
    vector = build("vector_mmr", context).get_stats()
    assert vector["search_type"] == "mmr" and vector["fetch_k"] == 20 and vector["lambda_mult"] == 0.5
    assert vector["chunks"] == len(CHUNKS) and vector["dimension"] == 512 and "score_threshold" in vector
    graph = build("graph_dfs", context).get_stats()
    assert graph["traversal"] == "dfs" and graph["max_hops"] == 2 and graph["decay"] == 0.7
    assert graph["seed_k"] == 5 and graph["min_score"] == 0.0 and graph["include_edge_descriptions"] is False
    assert (graph["entities"], graph["relationships"], graph["entity_vectors"]) == (5, 5, 5)
    assert graph["seeding"] == "embedding"
    assert (
        GraphRetriever(make_context(CHUNKS, ENTITIES, entity_vectors=False)).get_stats()["seeding"] == "fuzzy"
    )
    hybrid = HybridCombiner(
        build("vector", context), build("graph_bfs", context), CombineParams(mode="weighted")
    )
    reranked = RerankingRetriever(
        hybrid, LocalReranker(context), RerankParams(over_retrieve_multiplier=3, rerank_threshold=0.2)
    )
    stats = reranked.get_stats()
    assert (
        stats["over_retrieve_multiplier"] == 3
        and stats["rerank_threshold"] == 0.2
        and stats["reranker"] == "local"
    )
    inner = stats["inner"]
    assert inner["mode"] == "weighted" and inner["vector_weight"] == 0.5 and inner["graph_weight"] == 0.5
    assert inner["first"]["name"] == "vector" and inner["second"]["traversal"] == "bfs"
    plain = RerankingRetriever(NaiveRetriever(context), LocalReranker(context))
    assert plain.get_stats()["inner"] == {"name": "naive", "params": {}}  # a registered strategy wraps too


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_contract_on_the_built_two_hop_index(engine: QueryEngine, name: str) -> None:
    context = RetrieverContext(engine.snapshot, engine.embedder, engine.settings)
    retriever = build(name, context)
    snapshot = engine.snapshot
    for top_k in (1, 5):
        retrieval = retriever.retrieve(TWO_HOP, top_k)
        assert retrieval.strategy == name and 0 < len(retrieval.results) <= top_k
        scores = [r.score for r in retrieval.results]
        assert all(math.isfinite(s) for s in scores) and scores == sorted(scores, reverse=True)
        for result in retrieval.results:
            assert result.text and result.source and set(result.chunk_ids) <= set(snapshot.chunk_row)
            if result.chunk_id is not None:
                assert snapshot.chunks.document_ids[snapshot.chunk_row[result.chunk_id]] == result.document_id
    assert asyncio.run(retriever.aretrieve(TWO_HOP, 3)).results == retriever.retrieve(TWO_HOP, 3).results


def test_vector_plus_graph_reaches_the_second_hop(engine: QueryEngine) -> None:
    context = RetrieverContext(engine.snapshot, engine.embedder, engine.settings)
    graph = build("graph_bfs", context, include_edge_descriptions=True)
    titles = {title for r in graph.retrieve(TWO_HOP, 20).results for title in r.entities}
    assert {"Ada Whitlock", "Carrowby"} <= titles  # born in Carrowby: one hop from the seed
    hybrid = HybridCombiner(build("vector", context), graph, CombineParams(mode="expand"))
    retrieval = RerankingRetriever(hybrid, LocalReranker(context)).retrieve(TWO_HOP, 6)
    assert {r.metadata["role"] for r in retrieval.results} <= {"core", "related"}
    assert retrieval.metadata["inner"]["mode"] == "expand"
