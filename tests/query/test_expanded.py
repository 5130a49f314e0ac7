"""`expanded`: seeds, graph expansion, hybrid scores, reranking, the document filter and the cache.

Most tests run on a hand-built snapshot whose scores can be worked out by hand (bag-of-words
vectors, the small entity graph of `compose_support`); the rest on the indexed fixture corpus.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from graphunified_query.core.indexes.chunk_similarity import SimilarityEdges, similarity_edges
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.expanded import ExpandedParams, ExpandedRetriever
from graphunified_query.strategies.rerank.rerank import Reranker
from graphunified_query.strategies.results import Retrieval, RetrievalResult
from tests.query.compose_support import (
    ENTITIES,
    RELATIONSHIPS,
    ScriptedReranker,
    entity,
    make_context,
    relation,
)

CHUNKS = [
    ("k1", "doc1.md", "alpha station moor"),
    ("k2", "doc2.md", "bravo quarry charlie bridge"),
    ("k3", "doc3.md", "charlie bridge delta mill"),
    ("k4", "doc4.md", "echo tower"),
    ("k5", "doc5.md", "alpha station moor walk"),  # close to k1, mentions no entity
]
QUERY = "alpha station moor"
TWO_HOP = "On which river is the town where Ada Whitlock was born?"


def _context(*, similar: bool = True) -> RetrieverContext:
    """The graph: k1 mentions Alpha Station, which is RELATED_TO Bravo (k2, weight 3 of Alpha's 5)
    and Charlie (k2, k3; weight 2); Charlie is RELATED_TO Echo (k4). k1–k5 is a SIMILAR_TO edge."""
    context = make_context(CHUNKS, ENTITIES, RELATIONSHIPS)
    snap = context.snapshot
    edges = None
    if similar:
        table = similarity_edges(snap.chunks.ids, snap.chunk_vectors.matrix, threshold=0.6, neighbours=3)
        edges = SimilarityEdges.from_table(table)
    return replace(context, snapshot=replace(snap, chunk_similarity=edges, extras={}))


def _retriever(
    context: RetrieverContext | None = None, reranker: Reranker | None = None
) -> ExpandedRetriever:
    return ExpandedRetriever(context or _context(), reranker=reranker)


def _by_chunk(retrieval: Retrieval) -> dict[str, RetrievalResult]:
    return {r.chunk_id or "": r for r in retrieval.results}


def test_expansion_follows_relationships_and_similarity_with_the_documented_graph_score() -> None:
    found = _by_chunk(_retriever().retrieve(QUERY, 10, ExpandedParams(seed_k=1)))
    seed = found["k1"].metadata
    assert seed["hop"] == 0 and seed["expanded_from"] is None and seed["graph_score"] == 0.0
    v = seed["vector_score"]
    bravo = found["k2"].metadata  # Alpha, Bravo: in one chunk each (specificity 1); 3/5 of Alpha's weight
    assert bravo["hop"] == 1 and bravo["expanded_from"] == "k1"
    assert bravo["via"] == "related_to:Alpha Station -> Bravo"
    assert bravo["graph_score"] == pytest.approx(v * 1.0 * 1.0 * (0.5 + 0.5 * 3 / 5) * 0.8)
    charlie = found["k3"].metadata  # Charlie is in two chunks: specificity 1 / (1 + ln 2)
    assert charlie["graph_score"] == pytest.approx(v * (1 / (1 + math.log(2))) * (0.5 + 0.5 * 2 / 5) * 0.8)
    walk = found["k5"].metadata
    assert walk["via"] == "similar_to" and walk["graph_score"] == pytest.approx(v * (3 / (3**0.5 * 2)) * 0.8)
    assert "k4" not in found  # two hops away
    deeper = _by_chunk(_retriever().retrieve(QUERY, 10, ExpandedParams(seed_k=1, expansion_depth=2)))
    assert deeper["k4"].metadata["hop"] == 2 and deeper["k4"].metadata["expanded_from"] == "k1"
    assert deeper["k4"].metadata["via"] == "related_to:Charlie -> Echo"
    alone = _retriever().retrieve(QUERY, 10, ExpandedParams(seed_k=1, expansion_depth=0))
    assert [r.chunk_id for r in alone.results] == ["k1"]


def test_the_cap_admits_the_best_expanded_chunks_only() -> None:
    retrieval = _retriever().retrieve(QUERY, 10, ExpandedParams(seed_k=1, max_expanded_chunks=1))
    assert retrieval.metadata["expanded"] == 1
    assert [r.chunk_id for r in retrieval.results if r.metadata["hop"] > 0] == ["k5"]  # 0.69 beats 0.64
    wide = _retriever().retrieve(QUERY, 10, ExpandedParams(seed_k=1))
    assert wide.metadata["expanded"] == 3
    none = _retriever().retrieve(QUERY, 10, ExpandedParams(seed_k=1, max_expanded_chunks=0))
    assert none.metadata["expanded"] == 0 and len(none.results) == 1


def _hub_context() -> RetrieverContext:
    """Hub (in chunk h only) is RELATED_TO five entities, one chunk each, stored lightest-first
    but for the heaviest; its weighted degree is 5 + 4 + 3 + 2 + 1 = 15."""
    chunks = [
        ("h", "hub.md", "the hub square"),
        *[(f"n{w}", f"n{w}.md", f"far place {w}") for w in range(1, 6)],
    ]
    hub = entity("hub", "Hub", "the hub square", ["h"])
    around = {w: entity(f"e{w}", f"Place {w}", f"far place {w}", [f"n{w}"]) for w in range(1, 6)}
    stored = [5, 1, 2, 3, 4]  # weights in stored order: heaviest-first is not the stored order
    relations = [relation(i, hub, around[w], float(w)) for i, w in enumerate(stored)]
    return make_context(chunks, [hub, *around.values()], relations)


def test_a_hub_follows_only_its_heaviest_relationships_per_hop() -> None:
    retriever = _retriever(_hub_context())

    def expanded(**params: object) -> dict[str, RetrievalResult]:
        found = _by_chunk(retriever.retrieve("hub square", 10, ExpandedParams(seed_k=1, **params)))
        return {chunk: r for chunk, r in found.items() if r.metadata["hop"] == 1}

    capped = expanded(max_neighbours_per_hop=3)
    assert set(capped) == {"n5", "n4", "n3"}  # the three heaviest, not the first three stored
    v = _by_chunk(retriever.retrieve("hub square", 1, ExpandedParams(seed_k=1)))["h"].metadata["vector_score"]
    assert capped["n4"].metadata["via"] == "related_to:Hub -> Place 4"
    # A followed neighbour's share is still of the hub's whole weight, as without the cap.
    assert capped["n4"].metadata["graph_score"] == pytest.approx(v * (0.5 + 0.5 * 4 / 15) * 0.8)
    unbounded = expanded(max_neighbours_per_hop=100_000)
    assert set(unbounded) == {"n1", "n2", "n3", "n4", "n5"}
    for chunk, result in capped.items():
        assert result.metadata == unbounded[chunk].metadata
    # A neighbourhood within the cap is walked exactly as without it.
    assert expanded(max_neighbours_per_hop=5) == unbounded
    assert expanded() == unbounded  # the default (50)
    default = _by_chunk(_retriever().retrieve(QUERY, 10, ExpandedParams(seed_k=2, expansion_depth=2)))
    wide = _retriever().retrieve(
        QUERY, 10, ExpandedParams(seed_k=2, expansion_depth=2, max_neighbours_per_hop=100_000)
    )
    assert default == _by_chunk(wide)
    with pytest.raises(ValueError, match="max_neighbours_per_hop"):
        retriever.retrieve("hub square", 10, ExpandedParams(max_neighbours_per_hop=0))


def test_without_similarity_edges_only_entities_expand_and_metadata_says_so() -> None:
    retrieval = _retriever(_context(similar=False)).retrieve(QUERY, 10, ExpandedParams(seed_k=1))
    assert "k5" not in _by_chunk(retrieval) and "k2" in _by_chunk(retrieval)
    assert retrieval.metadata["similar_to"].startswith("missing")
    assert _retriever().retrieve(QUERY, 10).metadata["similar_to"]["edges"] == 1


def test_the_hybrid_formula_holds_for_every_result() -> None:
    query = "Where are Bravo and Charlie"  # names two entities; k2 mentions both
    retrieval = _retriever().retrieve(
        query,
        10,
        ExpandedParams(seed_k=2, chunk_weight=0.6, entity_weight=0.25, multi_entity_boost=0.1),
    )
    assert set(retrieval.metadata["query_entities"]) >= {"Bravo", "Charlie"}
    found = _by_chunk(retrieval)
    assert found["k2"].metadata["quality_boost"] == pytest.approx(0.1)
    assert found["k2"].metadata["entity_score"] > found["k3"].metadata["entity_score"] > 0
    for result in retrieval.results:
        m = result.metadata
        hybrid = (
            m["vector_score"] * 0.6 + m["graph_score"] * 0.4 + m["entity_score"] * 0.25 + m["quality_boost"]
        )
        assert result.score == m["hybrid_score"] == pytest.approx(hybrid, rel=1e-12)
        assert m["rerank_score"] is None
    assert any(r.metadata["graph_score"] > 0 for r in retrieval.results)


def test_reranking_blends_with_the_hybrid_score() -> None:
    retriever = _retriever()
    plain = retriever.retrieve(QUERY, 5, ExpandedParams(seed_k=5)).results
    hybrid_order = [r.chunk_id for r in plain]
    # The reranker prefers exactly the reverse of the hybrid order.
    reranker = ScriptedReranker({r.text: i / 10 for i, r in enumerate(plain)})
    scripted = _retriever(reranker=reranker)  # a reranker object is the retriever's, not a parameter
    blended = scripted.retrieve(QUERY, 5, ExpandedParams(seed_k=5, rerank_blend=0.5)).results
    for result in blended:
        m = result.metadata
        assert result.score == pytest.approx(m["rerank_score"] * 0.5 + m["hybrid_score"] * 0.5)
    assert [r.score for r in blended] == sorted((r.score for r in blended), reverse=True)
    only_rerank = scripted.retrieve(QUERY, 5, ExpandedParams(seed_k=5, rerank_blend=1.0)).results
    assert [r.chunk_id for r in only_rerank] == hybrid_order[::-1]
    only_hybrid = scripted.retrieve(QUERY, 5, ExpandedParams(seed_k=5, rerank_blend=0.0)).results
    assert [r.chunk_id for r in only_hybrid] == hybrid_order
    assert [r.chunk_id for r in blended] != hybrid_order  # the blend moved something
    scripted.retrieve(QUERY, 2, ExpandedParams(seed_k=5))
    assert len(reranker.seen[-1]) == 4  # the best 2 x top_k by hybrid score
    assert retriever.retrieve(QUERY, 3, ExpandedParams(rerank=True)).metadata["reranker"] == "local"
    with pytest.raises(ValueError, match="rerank_blend"):
        ExpandedParams(rerank=True, rerank_blend=1.5)


def test_document_filter_keeps_seeds_and_expansion_inside_the_chosen_documents() -> None:
    retrieval = _retriever().retrieve_within(
        QUERY, 10, ExpandedParams(expansion_depth=2), ["doc3.md", "doc4.md"]
    )
    assert retrieval.results and {r.document_id for r in retrieval.results} <= {"doc3.md", "doc4.md"}
    assert _retriever().retrieve_within(QUERY, 10, None, ["nowhere.md"]).results == ()


def test_expansion_reaches_the_second_hop_that_vector_search_misses(engine: QueryEngine) -> None:
    naive = [r.document_id for r in engine.retriever("naive").retrieve(TWO_HOP, 3).results]
    assert "carrowby.md" not in naive
    retrieval = engine.retriever("expanded").retrieve(TWO_HOP, 10, ExpandedParams(seed_k=3))
    found = {r.document_id: r for r in retrieval.results}
    assert "carrowby.md" in found
    carrowby = found["carrowby.md"].metadata
    assert carrowby["hop"] == 1 and carrowby["graph_score"] > 0
    assert engine.snapshot.chunks.document_ids[engine.snapshot.chunk_row[carrowby["expanded_from"]]] in naive
    seeds_only = engine.retriever("expanded").retrieve(
        TWO_HOP, 10, ExpandedParams(seed_k=3, expansion_depth=0)
    )
    assert "carrowby.md" not in {r.document_id for r in seeds_only.results}
    assert retrieval.metadata["similar_to"]["edges"] >= 1


def test_fixture_document_filter_and_cap(engine: QueryEngine) -> None:
    chosen = ["carrowby.md", "river-wear.md"]
    retrieval = engine.retriever("expanded").retrieve_within(TWO_HOP, 10, None, chosen)  # type: ignore[attr-defined]
    assert retrieval.results and {r.document_id for r in retrieval.results} <= set(chosen)
    capped = engine.retriever("expanded").retrieve(
        TWO_HOP, 10, ExpandedParams(seed_k=1, max_expanded_chunks=2)
    )
    assert capped.metadata["expanded"] == 2
    assert sum(1 for r in capped.results if r.metadata["hop"] > 0) == 2
