"""HybridCombiner: each mode's ordering, and deduplication across the two sides."""

from __future__ import annotations

import pytest

from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.combine import CombineParams, HybridCombiner
from graphunified_query.strategies.composable.factory import build
from graphunified_query.strategies.results import Retrieval
from tests.query.compose_support import (
    CHUNKS,
    ENTITIES,
    RELATIONSHIPS,
    StaticRetriever,
    WordEmbedder,
    chunk,
    element,
    make_context,
)


@pytest.fixture
def context() -> RetrieverContext:
    return make_context([("c1", "d.md", "alpha station passage"), ("c2", "d.md", "unrelated words")])


def _sides(context: RetrieverContext) -> tuple[StaticRetriever, StaticRetriever]:
    vector = StaticRetriever(context, "vec", [chunk("c1", 0.9), chunk("c2", 0.8), chunk("c3", 0.5)])
    graph = StaticRetriever(
        context,
        "graph",
        [element("Alpha: a station", 2.0), chunk("c2", 0.3), element("Bravo: a quarry", 1.0)],
    )
    return vector, graph


def _keys(retrieval: Retrieval) -> list[str]:
    return [r.chunk_id or r.text.split(":")[0] for r in retrieval.results]


def test_concat_puts_first_before_second_and_merges_duplicates(context: RetrieverContext) -> None:
    vector, graph = _sides(context)
    retrieval = HybridCombiner(vector, graph, CombineParams(mode="concat")).retrieve("q", 10)
    assert _keys(retrieval) == ["c1", "c2", "c3", "Alpha", "Bravo"]
    assert [r.score for r in retrieval.results] == pytest.approx([1.0, 0.8, 0.6, 0.4, 0.2])
    c2 = retrieval.results[1]
    assert c2.metadata["sources"] == ["vec", "graph"]
    assert c2.metadata["source_scores"] == {"vec": 0.8, "graph": 0.3}
    assert retrieval.results[0].metadata["sources"] == ["vec"]
    # Both sides keep a share of top_k (the second at least half, rounded down)...
    assert _keys(HybridCombiner(vector, graph, CombineParams(mode="concat")).retrieve("q", 2)) == [
        "c1",
        "Alpha",
    ]
    assert _keys(HybridCombiner(vector, graph, CombineParams(mode="concat")).retrieve("q", 3)) == [
        "c1",
        "c2",
        "Alpha",
    ]
    # ...and a short side leaves its places to the other.
    short = StaticRetriever(context, "vec", [chunk("c1", 0.9)])
    assert _keys(HybridCombiner(short, graph, CombineParams(mode="concat")).retrieve("q", 4)) == [
        "c1",
        "Alpha",
        "c2",
        "Bravo",
    ]
    assert retrieval.strategy == "vec+graph:concat" and retrieval.metadata["sides"]["graph"] == {
        "static": True
    }


def test_dedup_keeps_the_higher_scored_copy(context: RetrieverContext) -> None:
    vector = StaticRetriever(
        context, "vec", [chunk("c1", 0.4, origin="vec"), element("Alpha:  A station", 0.2)]
    )
    graph = StaticRetriever(
        context, "graph", [chunk("c1", 0.7, origin="graph"), element("alpha: a STATION", 0.9)]
    )
    retrieval = HybridCombiner(vector, graph, CombineParams(mode="concat")).retrieve("q", 10)
    assert len(retrieval.results) == 2  # same chunk id; same kind and text up to case and spacing
    first, alpha = retrieval.results
    assert first.metadata["origin"] == "graph" and first.metadata["source_scores"] == {
        "vec": 0.4,
        "graph": 0.7,
    }
    assert alpha.text == "alpha: a STATION" and alpha.metadata["sources"] == ["vec", "graph"]


def test_weighted_normalizes_each_side_and_sums(context: RetrieverContext) -> None:
    vector, graph = _sides(context)
    even = HybridCombiner(vector, graph, CombineParams(mode="weighted")).retrieve("q", 10)
    # vec: c1 1.0, c2 0.75, c3 0.0; graph: Alpha 1.0, c2 0.0, Bravo (1.0-0.3)/1.7.
    assert _keys(even) == ["c1", "Alpha", "c2", "Bravo", "c3"]  # c1 and Alpha tie: first seen first
    scores = {k: r.score for k, r in zip(_keys(even), even.results, strict=True)}
    assert scores["c1"] == pytest.approx(0.5) and scores["c2"] == pytest.approx(0.375)
    assert scores["Bravo"] == pytest.approx(0.5 * 0.7 / 1.7)
    assert even.results[2].metadata["weighted_parts"] == {"vec": 0.375, "graph": 0.0}
    graph_heavy = HybridCombiner(
        vector, graph, CombineParams(mode="weighted", vector_weight=0.2, graph_weight=0.8)
    )
    assert _keys(graph_heavy.retrieve("q", 10)) == ["Alpha", "Bravo", "c1", "c2", "c3"]
    assert _keys(
        graph_heavy.retrieve("q", 10, graph_heavy.params.updated(vector_weight=1.0, graph_weight=0.0))
    )[:3] == ["c1", "c2", "c3"]


def test_weighted_takes_each_side_by_its_weights_ratio(context: RetrieverContext) -> None:
    vector, graph = _sides(context)
    vector_heavy = HybridCombiner(
        vector, graph, CombineParams(mode="weighted", vector_weight=0.75, graph_weight=0.25)
    )
    assert sorted(_keys(vector_heavy.retrieve("q", 4))) == sorted(["c1", "c2", "c3", "Alpha"])  # 3 : 1
    graph_heavy = HybridCombiner(
        vector, graph, CombineParams(mode="weighted", vector_weight=0.25, graph_weight=0.75)
    )
    # 1 : 3, but the graph side has only two contexts of its own (c2 is the vector side's too)
    assert sorted(_keys(graph_heavy.retrieve("q", 4))) == sorted(["c1", "c2", "Alpha", "Bravo"])
    assert _keys(graph_heavy.retrieve("q", 2)) == ["Alpha", "c1"]  # ranked by the weighted scores
    only_vector = vector_heavy.retrieve(
        "q", 2, vector_heavy.params.updated(vector_weight=1.0, graph_weight=0.0)
    )
    assert _keys(only_vector) == ["c1", "c2"]


def test_rerank_mode_scores_graph_contexts_by_their_stored_vectors() -> None:
    embedder = WordEmbedder()
    context = make_context(CHUNKS, ENTITIES, RELATIONSHIPS, embedder=embedder)
    combined = HybridCombiner(
        build("vector", context), build("graph_bfs", context), CombineParams(mode="rerank")
    )
    embedder.calls.clear()
    retrieval = combined.retrieve("alpha station", 10)
    assert {r.kind for r in retrieval.results} == {"chunk", "entity"}
    # The query, embedded once per side and once to rerank; no context text embedded (it re-embedded
    # every entity text per query: 12.5 s a query on the sample).
    assert {kind for kind, _ in embedder.calls} == {"query"}


def test_expand_marks_the_second_side_as_related(context: RetrieverContext) -> None:
    vector, graph = _sides(context)
    retrieval = HybridCombiner(vector, graph, CombineParams(mode="expand")).retrieve("q", 4)
    assert vector.asked == [2] and graph.asked == [4]  # the core gets top_k - related_k (top_k // 2)
    assert _keys(retrieval) == ["c1", "c2", "Alpha", "Bravo"]
    assert [r.metadata["role"] for r in retrieval.results] == ["core", "core", "related", "related"]
    assert retrieval.results[1].metadata["sources"] == ["vec", "graph"]  # c2, found by both: core
    one_related = HybridCombiner(vector, graph, CombineParams(mode="expand", related_k=1)).retrieve("q", 4)
    assert _keys(one_related) == ["c1", "c2", "c3", "Alpha"]


def test_expand_fills_up_with_related_when_the_core_is_short(context: RetrieverContext) -> None:
    short = StaticRetriever(context, "vec", [chunk("c1", 0.9)])
    _, graph = _sides(context)
    retrieval = HybridCombiner(short, graph, CombineParams(mode="expand")).retrieve("q", 4)
    assert _keys(retrieval) == ["c1", "Alpha", "c2", "Bravo"]
    assert [r.metadata["role"] for r in retrieval.results] == ["core", "related", "related", "related"]


class LengthReranker:
    name = "length"

    def score(self, query: str, texts: list[str]) -> list[float]:
        return [len(t) / 100 for t in texts]


def test_rerank_rescores_the_deduplicated_union(context: RetrieverContext) -> None:
    vector, graph = _sides(context)
    retrieval = HybridCombiner(
        vector, graph, CombineParams(mode="rerank"), reranker=LengthReranker()
    ).retrieve("q", 10)
    texts = [r.text for r in retrieval.results]
    assert texts == sorted(texts, key=len, reverse=True) and len(texts) == 5  # c2 once
    assert all(r.score == r.metadata["rerank_score"] == len(r.text) / 100 for r in retrieval.results)
    assert retrieval.metadata["reranker"] == "length"


def test_rerank_defaults_to_query_embedding_cosine(context: RetrieverContext) -> None:
    vector = StaticRetriever(context, "vec", [chunk("c2", 0.9, "unrelated words")])
    graph = StaticRetriever(context, "graph", [element("Alpha Station: on the moor", 0.1)])
    retrieval = HybridCombiner(vector, graph, CombineParams(mode="rerank")).retrieve("alpha station", 10)
    assert retrieval.results[0].text.startswith("Alpha Station") and retrieval.results[1].score == 0.0
    assert retrieval.metadata["reranker"] == "local"


def test_combines_real_retrievers_and_names_same_named_sides_apart() -> None:
    context = make_context(CHUNKS, ENTITIES, RELATIONSHIPS)
    twin = HybridCombiner(
        build("graph_bfs", context),
        build("graph_bfs", context, traversal="dfs"),
        CombineParams(mode="concat"),
    )
    results = twin.retrieve("alpha station", 5).results
    assert results[0].metadata["sources"] == ["first", "second"]
    hybrid = HybridCombiner(
        build("vector", context), build("graph_dfs", context), CombineParams(mode="weighted")
    )
    kinds = {r.kind for r in hybrid.retrieve("alpha station", 10).results}
    assert kinds == {"chunk", "entity"}
    with pytest.raises(ValueError, match="mode"):
        HybridCombiner(build("vector", context), build("graph_dfs", context), CombineParams(mode="zip"))  # type: ignore[arg-type]
