"""RerankingRetriever and the local reranker: over-retrieval, threshold, order, kept scores."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from graphunified_query.core.providers.cost import Usage
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.factory import build
from graphunified_query.strategies.rerank.local import LocalReranker, term_coverage
from graphunified_query.strategies.rerank.rerank import RerankingRetriever, RerankOutcome, RerankParams
from tests.query.compose_support import ScriptedReranker, StaticRetriever, WordEmbedder, chunk, make_context

CHUNKS = [
    ("c1", "a.md", "the river harrow floods eastfold every spring"),
    ("c2", "b.md", "the hale mill wove wool cloth"),
    ("c3", "c.md", "eastfold lies on the river harrow"),
]


@pytest.fixture
def context() -> RetrieverContext:
    return make_context(CHUNKS)


def _inner(context: RetrieverContext, n: int = 8) -> StaticRetriever:
    return StaticRetriever(context, "inner", [chunk(f"p{i}", 1.0 - i / 10, f"text {i}") for i in range(n)])


def test_over_retrieves_reorders_by_rerank_score_and_keeps_both_scores(context: RetrieverContext) -> None:
    inner = _inner(context)
    reranker = ScriptedReranker({f"text {i}": i / 10 for i in range(8)})  # the reverse of inner's order
    retrieval = RerankingRetriever(inner, reranker).retrieve("q", 3)
    assert inner.asked == [6] and len(reranker.seen[0]) == 6  # top_k x over_retrieve_multiplier (2)
    assert [r.chunk_id for r in retrieval.results] == ["p5", "p4", "p3"]
    best = retrieval.results[0]
    assert best.score == best.metadata["rerank_score"] == 0.5
    assert best.metadata["retrieval_score"] == 0.5  # inner scored p5 1.0 - 5/10
    assert retrieval.metadata["candidates"] == 6 and retrieval.metadata["reranker"] == "scripted"
    RerankingRetriever(inner, reranker, RerankParams(over_retrieve_multiplier=4)).retrieve("q", 2)
    assert inner.asked[-1] == 8
    RerankingRetriever(inner, reranker).retrieve("q", 2, RerankParams(over_retrieve_multiplier=3))  # per call
    assert inner.asked[-1] == 6


def test_threshold_drops_low_rerank_scores(context: RetrieverContext) -> None:
    reranker = ScriptedReranker({f"text {i}": s for i, s in enumerate([0.9, 0.1, 0.7, 0.2, 0.8, 0.05])})
    retrieval = RerankingRetriever(_inner(context, 6), reranker, RerankParams(rerank_threshold=0.5)).retrieve(
        "q", 3
    )
    assert [r.chunk_id for r in retrieval.results] == ["p0", "p4", "p2"]
    assert retrieval.metadata["dropped_below_threshold"] == 3
    fewer = RerankingRetriever(_inner(context, 6), reranker, RerankParams(rerank_threshold=0.85)).retrieve(
        "q", 3
    )
    assert [r.chunk_id for r in fewer.results] == ["p0"]  # fewer than top_k rather than weak contexts
    relaxed = RerankingRetriever(_inner(context, 6), reranker, RerankParams(rerank_threshold=0.85))
    assert len(relaxed.retrieve("q", 3, RerankParams(rerank_threshold=0.0)).results) == 3


def test_reranker_cost_is_added_to_the_retrieval(context: RetrieverContext) -> None:
    class Paid:
        name = "paid"

        def score(self, query: str, texts: Sequence[str]) -> list[float]:
            raise AssertionError("score_with_cost is preferred")

        def score_with_cost(self, query: str, texts: Sequence[str]) -> RerankOutcome:
            return RerankOutcome([0.5] * len(texts), Usage(100, 10), llm_calls=1, cost_usd=0.002)

    retrieval = RerankingRetriever(_inner(context), Paid()).retrieve("q", 2)
    assert retrieval.llm_calls == 1 and retrieval.cost_usd == 0.002 and retrieval.usage == Usage(100, 10)


def test_local_reranker_blends_cosine_with_query_term_coverage(context: RetrieverContext) -> None:
    texts = ["floods in eastfold", "a flood", "nothing here"]
    assert term_coverage("Eastfold flood", texts) == [1.0, 0.5, 0.0]  # stemmed: floods -> flood
    lexical = LocalReranker(context, semantic_weight=0.0).score("Eastfold flood", texts)
    assert lexical == [1.0, 0.5, 0.0]
    semantic = LocalReranker(context, semantic_weight=1.0).score("river harrow", [CHUNKS[2][2], CHUNKS[1][2]])
    embedder = context.embedder
    vectors = embedder.embed(["river harrow", CHUNKS[2][2]])
    assert semantic[0] == pytest.approx(float(vectors[0] @ vectors[1])) and semantic[1] == 0.0
    blended = LocalReranker(context).score("river harrow", [CHUNKS[2][2]])
    assert blended[0] == pytest.approx(0.7 * semantic[0] + 0.3 * 1.0)


def test_local_reranker_reuses_the_index_vectors_of_chunks() -> None:
    embedder = WordEmbedder()
    context = make_context(CHUNKS, embedder=embedder)
    LocalReranker(context).score("eastfold", [CHUNKS[0][2], CHUNKS[2][2]])
    assert embedder.calls == [("query", ("eastfold",))]  # the passages were not embedded again
    LocalReranker(context).score("eastfold", ["a passage the index does not hold"])
    assert ("document", ("a passage the index does not hold",)) in embedder.calls


def test_reranking_a_real_retriever_with_the_local_reranker(context: RetrieverContext) -> None:
    retriever = RerankingRetriever(
        build("vector", context), LocalReranker(context), RerankParams(over_retrieve_multiplier=3)
    )
    retrieval = retriever.retrieve("Does the river flood Eastfold?", 2)
    assert retrieval.results[0].chunk_id == "c1"  # the one naming every query term (floods: flood)
    scores = [r.score for r in retrieval.results]
    assert scores == sorted(scores, reverse=True) and retrieval.strategy == "vector+rerank"
