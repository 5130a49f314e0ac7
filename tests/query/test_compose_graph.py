"""GraphRetriever: BFS and DFS on a hand-built graph, exact decay, thresholds, the fuzzy fallback."""

from __future__ import annotations

import logging

import pytest

from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.factory import build
from graphunified_query.strategies.composable.graph import GraphParams, GraphRetriever
from graphunified_query.strategies.composable.traversal import traverse
from graphunified_query.strategies.results import Retrieval
from tests.query.compose_support import CHUNKS, ENTITIES, RELATIONSHIPS, WordEmbedder, make_context

QUERY = "alpha station"


def _context(**kwargs: object) -> RetrieverContext:
    return make_context(CHUNKS, ENTITIES, RELATIONSHIPS, **kwargs)  # type: ignore[arg-type]


def _visits(retrieval: Retrieval) -> list[tuple[str, int, str | None]]:
    """(title, depth, via) in visit order."""
    ordered = sorted(retrieval.results, key=lambda r: r.metadata["visit"])
    return [(r.entities[0], r.metadata["depth"], r.metadata["via"]) for r in ordered]


def test_bfs_and_dfs_visit_the_graph_in_their_orders() -> None:
    context = _context()
    bfs = build("graph_bfs", context, seed_k=1).retrieve(QUERY, 10)
    assert bfs.metadata["seeds"] == ["Alpha Station"] and bfs.metadata["seeding"] == "embedding"
    assert _visits(bfs) == [
        ("Alpha Station", 0, None),
        ("Bravo", 1, "a"),
        ("Charlie", 1, "a"),  # level by level: both neighbours of the seed first
        ("Delta", 2, "b"),
        ("Echo", 2, "c"),
    ]
    dfs = build("graph_dfs", context, seed_k=1).retrieve(QUERY, 10)
    assert _visits(dfs) == [
        ("Alpha Station", 0, None),
        ("Bravo", 1, "a"),  # the strongest edge first, then on down that chain
        ("Charlie", 2, "b"),  # reached through Bravo before Alpha's own edge to it
        ("Delta", 2, "b"),
    ]  # Echo would be depth 3 along Alpha -> Bravo -> Charlie: beyond max_hops
    assert {r.metadata["traversal"] for r in dfs.results} == {"dfs"}
    assert {r.metadata["traversal"] for r in bfs.results} == {"bfs"}


def test_scores_decay_exactly_by_depth_and_results_rank_by_score() -> None:
    retrieval = build("graph_bfs", _context(), seed_k=1).retrieve(QUERY, 10)
    seed = retrieval.results[0]
    assert seed.metadata["depth"] == 0 and seed.entities == ("Alpha Station",)
    for result in retrieval.results:
        assert result.score == seed.score * 0.7 ** result.metadata["depth"]
    assert [r.score for r in retrieval.results] == sorted((r.score for r in retrieval.results), reverse=True)
    halved = build("graph_bfs", _context(), seed_k=1, decay=0.5).retrieve(QUERY, 10)
    assert {r.metadata["depth"]: r.score for r in halved.results}[2] == seed.score * 0.5**2


def test_multiple_seeds_each_keep_their_own_score() -> None:
    visits = traverse(
        [("a", 0.9), ("d", 0.6)], lambda e: _adjacency()[e], method="bfs", max_hops=1, decay=0.5
    )
    by_entity = {v.entity: v for v in visits}
    assert by_entity["d"].depth == 0 and by_entity["d"].score == 0.6  # not a descendant of the better seed
    assert by_entity["b"].via == "a" and by_entity["b"].score == 0.9 * 0.5  # the better parent at depth 1


def _adjacency() -> dict[str, list[tuple[str, int]]]:
    adjacency: dict[str, list[tuple[str, int]]] = {e["id"]: [] for e in ENTITIES}
    for row, r in enumerate(RELATIONSHIPS):
        adjacency[r["source_id"]].append((r["target_id"], row))
        adjacency[r["target_id"]].append((r["source_id"], row))
    return adjacency


def test_min_score_max_hops_and_top_k() -> None:
    retriever = build("graph_bfs", _context(), seed_k=1)
    seed_score = retriever.retrieve(QUERY, 1).results[0].score
    shallow = retriever.retrieve(
        QUERY, 10, retriever.params.updated(min_score=seed_score * 0.6)
    )  # depth 2 scores 0.49x
    assert {r.metadata["depth"] for r in shallow.results} == {0, 1}
    assert len(retriever.retrieve(QUERY, 10, retriever.params.updated(max_hops=0)).results) == 1
    assert len(retriever.retrieve(QUERY, 2).results) == 2
    assert retriever.retrieve("   ", 5).results == ()


def test_results_cite_source_chunks_and_can_spell_out_the_path() -> None:
    plain = build("graph_bfs", _context(), seed_k=1).retrieve(QUERY, 10)
    delta = next(r for r in plain.results if r.entities == ("Delta",))
    assert delta.kind == "entity" and delta.chunk_ids == ("k3",) and delta.chunk_id == "k3"
    assert "links to" not in delta.text and delta.relationships == ()
    described = build("graph_bfs", _context(), seed_k=1, include_edge_descriptions=True).retrieve(QUERY, 10)
    delta = next(r for r in described.results if r.entities == ("Delta",))
    assert delta.text.startswith("Delta (PLACE): delta mill")
    assert "Alpha Station links to Bravo" in delta.text and "Bravo links to Delta" in delta.text
    assert delta.relationships == ("Alpha Station -> Bravo", "Bravo -> Delta")
    assert len(delta.metadata["edges"]) == 2


def test_fuzzy_fallback_when_there_are_no_entity_vectors(caplog: pytest.LogCaptureFixture) -> None:
    retriever = GraphRetriever(_context(entity_vectors=False), GraphParams(seed_k=1, max_hops=1))
    with caplog.at_level(logging.WARNING):
        first = retriever.retrieve("Which trains stop at Alpha Statoin?", 10)  # a typo, and no vectors
        second = retriever.retrieve("What is near Alpha Station?", 10)
    assert first.metadata["seeding"] == "fuzzy" and first.metadata["seeds"] == ["Alpha Station"]
    assert first.results[0].score == pytest.approx(12 / 13, abs=0.01)  # the typo costs one edit
    assert second.results[0].score == 1.0
    assert {r.entities[0] for r in first.results} == {"Alpha Station", "Bravo", "Charlie"}
    warnings = [r for r in caplog.records if "fuzzy" in r.getMessage()]
    assert len(warnings) == 1 and "no entity vectors" in warnings[0].getMessage()


def test_fuzzy_fallback_when_the_embedder_fails(caplog: pytest.LogCaptureFixture) -> None:
    embedder = WordEmbedder()
    retriever = GraphRetriever(_context(embedder=embedder), GraphParams(seed_k=1, max_hops=1))
    embedder.fail = True
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            retrieval = retriever.retrieve("Bravo", 10)
            assert retrieval.metadata["seeding"] == "fuzzy" and retrieval.metadata["seeds"] == ["Bravo"]
    warnings = [r for r in caplog.records if "fuzzy" in r.getMessage()]
    assert len(warnings) == 1 and "EmbeddingError" in warnings[0].getMessage()
    embedder.fail = False  # the provider is back: embedding seeds again
    assert (
        retriever.retrieve(QUERY, 10, retriever.params.updated(seed_k=1)).metadata["seeding"] == "embedding"
    )


def test_no_seed_similar_enough_returns_nothing() -> None:
    retrieval = build("graph_bfs", _context()).retrieve("zxqv blorf", 5)
    assert retrieval.results == () and retrieval.metadata["seeds"] == []


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="traversal"):
        GraphRetriever(_context(), GraphParams(traversal="random_walk"))
    with pytest.raises(ValueError, match="decay"):
        GraphRetriever(_context(), GraphParams(decay=0.0))


@pytest.mark.parametrize("method", ["bfs", "dfs"])
def test_max_nodes_bounds_the_visits_seeds_included(method: str) -> None:
    # More seeds than the budget: the best seeds fill it and nothing else is visited (DFS visited
    # every seed, 10 for max_nodes 6).
    seeds = [(e["id"], 1.0 - i / 10) for i, e in enumerate(ENTITIES)]
    for max_nodes in range(1, len(seeds) + 1):
        visits = traverse(seeds, lambda e: _adjacency()[e], method=method, max_hops=2, max_nodes=max_nodes)  # type: ignore[arg-type]
        assert len(visits) == max_nodes
        assert [v.entity for v in visits if v.depth == 0] == [e for e, _ in seeds][: len(visits)]
