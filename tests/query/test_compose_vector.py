"""VectorRetriever: similarity, MMR diversification, the score threshold."""

from __future__ import annotations

import numpy as np
import pytest

from graphunified_query.context.candidates import filtering
from graphunified_query.context.filters import ContextFilter
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.combine import CombineParams, HybridCombiner
from graphunified_query.strategies.composable.factory import build
from graphunified_query.strategies.composable.mmr import mmr
from graphunified_query.strategies.composable.vector import VectorParams, VectorRetriever
from graphunified_query.strategies.rerank.rerank import RerankingRetriever, RerankParams
from graphunified_query.strategies.results import Retrieval
from tests.query.compose_support import make_context

FLOOD = "the great flood of the river harrow in 1894 drowned eastfold"
CHUNKS = [
    ("c1", "flood.md", FLOOD),
    ("c2", "flood-copy.md", FLOOD + " town"),  # near-duplicates of c1
    ("c3", "flood-copy2.md", FLOOD + " village"),
    ("c4", "relief.md", "harrow river flood relief came from millbrook volunteers"),
    ("c5", "mill.md", "thomas hale founded the hale mill in 1862"),
]
QUERY = "great flood river harrow eastfold"


@pytest.fixture
def context() -> RetrieverContext:
    return make_context(CHUNKS)


def _ids(retrieval: Retrieval) -> list[str | None]:
    return [r.chunk_id for r in retrieval.results]


def test_similarity_returns_the_near_duplicates_and_mmr_picks_a_different_passage_second(
    context: RetrieverContext,
) -> None:
    similar = VectorRetriever(context).retrieve(QUERY, 2)
    assert _ids(similar) == ["c1", "c2"]
    diverse = build("vector_mmr", context).retrieve(QUERY, 2)
    assert diverse.strategy == "vector_mmr"
    assert _ids(diverse) == ["c1", "c4"]  # not the duplicate c2, though c2 is more similar
    second = diverse.results[1]
    assert second.metadata["dense_score"] < similar.results[1].metadata["dense_score"]
    assert second.metadata["search_type"] == "mmr"
    # lambda_mult = 1 is relevance only: MMR falls back to similarity order.
    assert _ids(build("vector_mmr", context, lambda_mult=1.0).retrieve(QUERY, 2)) == ["c1", "c2"]


def test_mmr_only_chooses_among_fetch_k_candidates(context: RetrieverContext) -> None:
    # fetch_k=3 keeps only c1..c3 (the duplicates): nothing more diverse is on offer.
    assert _ids(build("vector_mmr", context, fetch_k=3).retrieve(QUERY, 2)) == ["c1", "c2"]


def test_mmr_scores_descend_and_match_langchain_picks() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(30, 16))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[0] + 0.1 * rng.normal(size=16)
    query /= np.linalg.norm(query)
    picks = mmr(query, vectors, 10, lambda_mult=0.3)
    scores = [s for _, s in picks]
    assert scores[1:] == sorted(scores[1:], reverse=True)
    langchain = pytest.importorskip("langchain_core.vectorstores.utils")
    expected = langchain.maximal_marginal_relevance(query, vectors.tolist(), lambda_mult=0.3, k=10)
    assert [i for i, _ in picks] == expected


def test_score_threshold_drops_low_scores(context: RetrieverContext) -> None:
    everything = VectorRetriever(context).retrieve(QUERY, 5)
    cosines = {r.chunk_id: r.score for r in everything.results}
    assert cosines["c4"] < 0.5 < cosines["c3"]  # c4 and c5 fall under the threshold
    kept = VectorRetriever(
        context, VectorParams(search_type="similarity_score_threshold", score_threshold=0.5)
    )
    retrieval = kept.retrieve(QUERY, 5)
    assert _ids(retrieval) == ["c1", "c2", "c3"]
    assert all(r.score >= 0.5 for r in retrieval.results)
    assert _ids(kept.retrieve(QUERY, 5, kept.params.updated(score_threshold=0.1))) == [
        "c1",
        "c2",
        "c3",
        "c4",
    ]  # per call
    with pytest.raises(ValueError, match="needs a score_threshold"):
        VectorRetriever(context, VectorParams(search_type="similarity_score_threshold"))
    with pytest.raises(ValueError, match="search_type"):
        VectorRetriever(context, VectorParams(search_type="nearest"))


def test_contract_empty_query_and_top_k(context: RetrieverContext) -> None:
    for name in ("vector", "vector_mmr"):
        retriever = build(name, context)
        assert retriever.retrieve("  ", 3).results == ()
        for top_k in (1, 3, 10):
            results = retriever.retrieve(QUERY, top_k).results
            assert len(results) == min(top_k, len(CHUNKS))
            scores = [r.score for r in results]
            assert scores == sorted(scores, reverse=True)
            assert all(
                r.kind == "chunk" and r.text == dict((c[0], c[2]) for c in CHUNKS)[r.chunk_id]
                for r in results
            )


def _leaving_out(document: str) -> ContextFilter:
    """A query's filters that keep every document of CHUNKS but ``document``."""
    kept = frozenset(d for _, d, _ in CHUNKS if d != document)
    return ContextFilter("medium", False, frozenset(), None, kept, "")


def test_mmr_chooses_among_the_candidates_the_querys_filters_keep(context: RetrieverContext) -> None:
    # c1 left out: MMR must not pick it first and diversify away from it (then lose it to the
    # filter), but choose among the rest: c2 first, then what differs from c2.
    with filtering(_leaving_out("flood.md")):
        assert _ids(build("vector_mmr", context).retrieve(QUERY, 2)) == ["c2", "c4"]
    assert _ids(build("vector_mmr", context).retrieve(QUERY, 2)) == ["c1", "c4"]  # outside a query


def test_rerankers_and_combiners_never_see_what_the_filters_leave_out(context: RetrieverContext) -> None:
    seen: list[str] = []

    class Recording:
        name = "recording"

        def score(self, query: str, texts: list[str]) -> list[float]:
            seen.extend(texts)
            return [0.5] * len(texts)

    reranked = RerankingRetriever(
        VectorRetriever(context), Recording(), RerankParams(over_retrieve_multiplier=3)
    )
    combined = HybridCombiner(
        VectorRetriever(context), build("vector_mmr", context), CombineParams(mode="concat")
    )
    with filtering(_leaving_out("flood.md")):
        assert "c1" not in _ids(reranked.retrieve(QUERY, 2))
        assert FLOOD not in seen and seen  # the reranker's input (an LLM's prompt) never held it
        assert "c1" not in _ids(combined.retrieve(QUERY, 4))
