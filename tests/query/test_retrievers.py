"""Every strategy honours the contract; each one does what it is for on a corpus with known answers."""

from __future__ import annotations

import asyncio
import math

import pytest

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.graphrag_local import GraphRAGLocalParams
from graphunified_query.strategies.hybrid import HybridParams
from graphunified_query.strategies.registry import STRATEGIES, names

TWO_HOP = "On which river is the town where Ada Whitlock was born?"


def _documents(engine: QueryEngine, strategy: str, question: str, top_k: int, **params: object) -> list[str]:
    retrieval = engine.retriever(strategy).retrieve(question, top_k, **params)
    return [r.document_id for r in retrieval.results if r.document_id]


def test_the_six_core_strategies_are_registered() -> None:
    assert names("core") == ("naive", "hybrid", "graphrag_local", "graphrag_global", "lightrag", "hipporag")


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("question", [TWO_HOP, "Who founded the Hale Mill?", "zxqv blorf quux"])
def test_retriever_contract(engine: QueryEngine, strategy: str, question: str) -> None:
    snapshot = engine.snapshot
    for top_k in (1, 3, 10):
        retrieval = engine.retriever(strategy).retrieve(question, top_k)
        assert retrieval.strategy == strategy
        assert len(retrieval.results) <= top_k
        scores = [r.score for r in retrieval.results]
        assert all(math.isfinite(s) for s in scores) and scores == sorted(scores, reverse=True)
        titles = {e["title"] for e in snapshot.entities}
        for result in retrieval.results:
            assert result.text and result.source
            if result.chunk_id is not None:
                row = snapshot.chunk_row[result.chunk_id]  # a real, live chunk
                assert snapshot.chunks.document_ids[row] == result.document_id
            assert set(result.chunk_ids) <= set(snapshot.chunk_row)
            assert set(result.entities) <= titles
            if result.kind == "chunk":
                assert result.text == snapshot.chunks.texts[snapshot.chunk_row[result.chunk_id or ""]]
    assert engine.retriever(strategy).retrieve("   ", 5).results == ()


@pytest.mark.parametrize("strategy", [*names("core"), *names("extra")])
def test_async_retrieval_matches_sync(engine: QueryEngine, strategy: str) -> None:
    retriever = engine.retriever(strategy)
    expected = retriever.retrieve(TWO_HOP, 5)
    assert asyncio.run(retriever.aretrieve(TWO_HOP, 5)).results == expected.results


def test_hipporag_takes_the_second_hop_that_dense_search_misses(engine: QueryEngine) -> None:
    assert "carrowby.md" not in _documents(engine, "naive", TWO_HOP, 3)
    found = _documents(engine, "hipporag", TWO_HOP, 3)
    assert found[0] == "ada-whitlock.md" and "carrowby.md" in found
    retrieval = engine.retriever("hipporag").retrieve(TWO_HOP, 3)
    assert "Carrowby" in retrieval.metadata["seeds"] and "1889" not in retrieval.metadata["seeds"]
    assert all(r.metadata["ppr_mass"] > 0 for r in retrieval.results)


def test_hybrid_fuses_dense_and_keyword_ranks(engine: QueryEngine) -> None:
    retrieval = engine.retriever("hybrid").retrieve("Kestrel Beck", 3)
    top = retrieval.results[0]
    assert top.document_id == "eastfold.md" and top.metadata["bm25_rank"] == 1
    assert top.score == pytest.approx(
        0.5 / (60 + top.metadata["dense_rank"]) + 0.5 / (60 + top.metadata["bm25_rank"])
    )
    dense_only = engine.retriever("hybrid").retrieve("Kestrel Beck", 3, HybridParams(alpha=1.0)).results
    assert dense_only[0].score == pytest.approx(1.0 / (60 + dense_only[0].metadata["dense_rank"]))


def test_naive_scores_are_cosines_in_unit_interval(engine: QueryEngine) -> None:
    results = engine.retriever("naive").retrieve("Who founded the Hale Mill?", 5).results
    assert results[0].document_id in {"thomas-hale.md", "hale-mill.md"}
    assert all(0.0 <= r.score <= 1.0 for r in results)


def test_graphrag_local_walks_the_neighbourhood_and_falls_back(engine: QueryEngine) -> None:
    retrieval = engine.retriever("graphrag_local").retrieve("Who founded the Hale Mill?", 10)
    kinds = {r.kind for r in retrieval.results}
    assert {"chunk", "entity"} <= kinds and ("relationship" in kinds or len(retrieval.results) < 10)
    assert any("Hale Mill" in r.entities for r in retrieval.results if r.kind == "entity")
    hops = [
        r.metadata["hop"]
        for r in engine.retriever("graphrag_local").retrieve("Who founded the Hale Mill?", 30).results
        if r.kind == "entity"
    ]
    assert 0 in hops and max(hops) >= 1
    fallback = engine.retriever("graphrag_local").retrieve(
        "Who founded the Hale Mill?", 3, GraphRAGLocalParams(min_similarity=0.99)
    )
    assert fallback.metadata["fallback"].startswith("naive") and all(
        r.kind == "chunk" for r in fallback.results
    )


def test_global_search_maps_several_communities(engine: QueryEngine) -> None:
    retrieval = engine.retriever("graphrag_global").retrieve(
        "What are the main themes of these documents: astronomers, rivers and mills?", 10
    )
    assert retrieval.metadata["communities_mapped"] >= 2
    assert len({r.metadata["community"] for r in retrieval.results}) >= 2
    assert all(r.kind == "community_report" and r.chunk_ids for r in retrieval.results)
    assert retrieval.llm_calls == 0 and retrieval.metadata["map"] == "extractive"


def test_name_linking_finds_the_entities_a_question_names() -> None:
    from graphunified_query.strategies.entity_linking import NameIndex

    index = NameIndex.build(
        [{"title": t} for t in ("Jump for Glory", "Jump", "Raoul Walsh", "state", "Mach's principle", "Iowa")]
    )
    linked = index.link("Who directed Jump for Glory, in which state is Iowa, and what is Mach's principle?")
    assert [span for span, _ in linked] == ["Jump for Glory", "Iowa", "Mach s principle"]  # longest first
    assert linked[0][1] == (0,) and index.link("who was jumping") == []
