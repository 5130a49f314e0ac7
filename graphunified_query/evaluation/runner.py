"""Every question through every strategy (and the router) over one loaded index."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from graphunified_query.engine.query_engine import AUTO, QueryEngine, QueryRequest
from graphunified_query.evaluation.dataset import Question
from graphunified_query.evaluation.home import passage_id
from graphunified_query.evaluation.metrics import (
    deduplicated,
    exact_match,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    rouge_l,
    semantic_similarity,
    token_f1,
)

Progress = Callable[[int, int, str], None]


@dataclass
class QuestionRun:
    question_id: str
    strategy: str  # for `auto`, the strategy the router picked is in `routed_to`
    ranking: list[str]  # passage ids, de-duplicated, best first
    recall: dict[int, float]
    mrr: float
    ndcg10: float
    retrieval_ms: float
    total_ms: float
    llm_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    answer: str | None = None
    exact_match: float | None = None
    f1: float | None = None
    rouge_l: float | None = None
    semantic: float | None = None  # cosine of answer and gold answer, the configured embedder
    routed_to: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    contexts: list[tuple[str | None, float]] = field(default_factory=list)  # (chunk id, score) returned
    question: str = ""  # the question's text: train-router reads it from results.json


_Run = TypeVar("_Run", bound=Callable[..., Any])


def _without_result_cache(run: _Run) -> _Run:
    """``run`` with the engine's result cache off, then back as it was: every run computes (the
    strategy `auto` routed a question to, asked next, would be a cache hit timed at 0.3 ms)."""

    @functools.wraps(run)
    def wrapped(engine: QueryEngine, *args: Any, **kwargs: Any) -> Any:
        cache = engine.result_cache
        enabled, cache.enabled = cache.enabled, False
        try:
            return run(engine, *args, **kwargs)
        finally:
            cache.enabled = enabled

    return cast(_Run, wrapped)


@_without_result_cache
def run_questions(
    engine: QueryEngine,
    questions: Sequence[Question],
    strategies: Sequence[str],
    *,
    ks: Sequence[int],
    generate: bool,
    progress: Progress | None = None,
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, list[QuestionRun]]:
    """Each question through the engine's one query path (risk and metadata filters included).

    Latencies are comparable across strategies: the engine and every strategy are warmed before any
    timing, each question is embedded before its strategies run, and the strategies of each question
    run in a seeded random order (the first used to pay the cold start and the query embedding).
    """
    depth = max(10, *ks)
    runs: dict[str, list[QuestionRun]] = {s: [] for s in strategies}
    total, done = len(strategies) * len(questions), 0
    shuffle = random.Random(seed)
    if questions:
        # Checked before anything runs: a misspelt --param fails as it does for `ask`.
        engine.compare_requests(questions[0].question, depth, params or {}, names=strategies)
        _warm(engine, strategies, depth, params or {})
    for question in questions:
        requests = engine.compare_requests(question.question, depth, params or {}, names=strategies)
        engine.embed_query(question.question)
        order = list(range(len(strategies)))
        shuffle.shuffle(order)
        for index in order:
            request = requests[index].model_copy(update={"retrieve_only": not generate})
            runs[strategies[index]].append(_run_one(engine, question, request, ks))
            done += 1
            if progress:
                progress(done, total, strategies[index])
    return runs


WARM_UP_QUESTION = "Which places and people does this collection mention?"  # no eval set asks it


def _warm(engine: QueryEngine, strategies: Sequence[str], depth: int, params: Mapping[str, Any]) -> None:
    """Every strategy once, untimed, on a question of no set: the cold start is paid by nobody."""
    engine.warm()
    for request in engine.compare_requests(WARM_UP_QUESTION, depth, params, names=strategies):
        engine.query(request.model_copy(update={"retrieve_only": True}))


def _run_one(
    engine: QueryEngine, question: Question, request: QueryRequest, ks: Sequence[int]
) -> QuestionRun:
    response = engine.query(request)
    meta = response.metadata
    ranking = deduplicated([passage_id(r.document_id) for r in response.contexts if r.document_id])
    gold = question.supporting_ids
    run = QuestionRun(
        question_id=question.id,
        strategy=request.strategy or AUTO,
        ranking=ranking,
        recall={k: recall_at_k(ranking, gold, k) for k in ks},
        mrr=reciprocal_rank(ranking, gold),
        ndcg10=ndcg_at_k(ranking, gold, 10),
        retrieval_ms=meta["retrieval_latency_ms"],
        total_ms=meta["latency_ms"],
        llm_calls=meta["llm_calls"],
        tokens=meta["tokens_used"],
        cost_usd=meta["cost_usd"],
        routed_to=response.strategy if request.strategy == AUTO else None,
        contexts=[(c.chunk_id, c.score) for c in response.contexts],
        question=question.question,
    )
    if response.answer is not None:
        run.answer = response.answer
        if question.answers:
            run.exact_match = exact_match(response.answer, question.answers)
            run.f1 = token_f1(response.answer, question.answers)
            run.rouge_l = rouge_l(response.answer, question.answers)
            run.semantic = semantic_similarity(engine.embedder, response.answer, question.answers)
    return run
