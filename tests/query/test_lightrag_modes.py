"""LightRAG as LightRAG on the shared two-hop index: each mode returns what defines it (local: the
entity index and the relationships around its hits; global: the relationship index and their
endpoints; hybrid: both; mix: both and the nearest chunks; naive: chunks only), and
`entity_weight` is the entities' share of the graph contexts."""

from __future__ import annotations

import pytest

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.results import RetrievalResult

QUESTIONS = (
    "Who founded the Hale Mill?",
    "What connects Thomas Hale and Ada Whitlock?",
    "Who designed the Kestrel Dam?",
    "Which river runs through Carrowby?",
    "What did Ada Whitlock catalogue?",
)
TOP_K = 10


def _run(engine: QueryEngine, question: str, **params: object) -> tuple[RetrievalResult, ...]:
    lightrag = engine.retriever("lightrag")
    return lightrag.retrieve(question, TOP_K, lightrag.params.updated(**params)).results


def _kinds(results: tuple[RetrievalResult, ...]) -> set[str]:
    return {r.kind for r in results}


def _index_hits(engine: QueryEngine, question: str, index: str) -> set[str]:
    """Titles of the entities the entity index matches (``entities``), or the "source -> target"
    labels of the relationships the relationship index matches, as deep as the retriever looks."""
    snap = engine.snapshot
    q = engine.retriever("lightrag").context.embed_query(question)
    if index == "entities":
        return {snap.entities[row]["title"] for row, _ in snap.entity_vectors.search(q, 2 * TOP_K)}
    return {
        f"{snap.relationships[row]['source']} -> {snap.relationships[row]['target']}"
        for row, _ in snap.relationship_vectors.search(q, 2 * TOP_K)
    }


@pytest.mark.parametrize("question", QUESTIONS)
def test_each_mode_returns_what_defines_it(engine: QueryEngine, question: str) -> None:
    naive = _run(engine, question, mode="naive")
    assert _kinds(naive) == {"chunk"}

    local = _run(engine, question, mode="local")
    entities = _index_hits(engine, question, "entities")
    assert "entity" in _kinds(local)
    for result in local:  # entity-centric: entities from the entity index, relationships around them
        if result.kind == "entity":
            assert result.entities[0] in entities, result.text
        if result.kind == "relationship":
            assert set(result.entities) & entities, result.text

    global_ = _run(engine, question, mode="global", dual_keywords=False)  # matched on the question
    relationships = _index_hits(engine, question, "relationships")
    assert "relationship" in _kinds(global_)
    for result in global_:  # relationship-centric: relationships from their index, their endpoints
        if result.kind == "relationship":
            assert result.relationships[0] in relationships, result.text
        if result.kind == "entity":
            ends = {name for label in relationships for name in label.split(" -> ")}
            assert result.entities[0] in ends, result.text

    hybrid = _run(engine, question, mode="hybrid")
    assert {"chunk", "entity", "relationship"} <= _kinds(hybrid)
    assert all("vector" not in str(r.metadata.get("retrieved_by", "")) for r in hybrid)

    mix = _run(engine, question, mode="mix")
    assert {"chunk", "entity", "relationship"} <= _kinds(mix)
    nearest = {r.chunk_id for r in naive[: TOP_K // 4]}
    by_vector = {r.chunk_id for r in mix if "vector" in str(r.metadata.get("retrieved_by", ""))}
    lightrag = engine.retriever("lightrag")
    deeper = lightrag.retrieve(question, 2 * TOP_K, lightrag.params.updated(mode="naive")).results
    deeper_ids = {r.chunk_id for r in deeper}
    assert by_vector and by_vector <= deeper_ids  # the nearest chunks are in
    assert nearest & by_vector


@pytest.mark.parametrize("weight", [0.2, 0.5, 0.6, 0.8])
@pytest.mark.parametrize("mode", ["hybrid", "mix"])
def test_entity_weight_is_the_entities_share_of_the_graph_contexts(
    engine: QueryEngine, weight: float, mode: str
) -> None:
    kinds = [r.kind for q in QUESTIONS for r in _run(engine, q, mode=mode, entity_weight=weight)]
    graph = [k for k in kinds if k in ("entity", "relationship")]
    share = graph.count("entity") / len(graph)
    assert abs(share - weight) <= 0.1, (share, weight, len(graph))


def test_an_unknown_mode_names_the_modes(engine: QueryEngine) -> None:
    with pytest.raises(ValueError, match="'local', 'global', 'hybrid', 'mix' or 'naive'"):
        engine.retriever("lightrag").params.updated(mode="bogus")
