"""Every question through every strategy (and the router) over one loaded index."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphunified_query.engine import AUTO, QueryEngine
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


def run_questions(
    engine: QueryEngine,
    questions: Sequence[Question],
    strategies: Sequence[str],
    *,
    ks: Sequence[int],
    generate: bool,
    progress: Progress | None = None,
) -> dict[str, list[QuestionRun]]:
    depth = max(10, *ks)
    runs: dict[str, list[QuestionRun]] = {s: [] for s in strategies}
    total, done = len(strategies) * len(questions), 0
    for strategy in strategies:
        for question in questions:
            runs[strategy].append(_run_one(engine, question, strategy, depth, ks, generate))
            done += 1
            if progress:
                progress(done, total, strategy)
    return runs


def _run_one(
    engine: QueryEngine, question: Question, strategy: str, depth: int, ks: Sequence[int], generate: bool
) -> QuestionRun:
    started = time.perf_counter()
    retrieval, routing = engine.retrieve(question.question, strategy, depth)
    retrieved = time.perf_counter()
    ranking = deduplicated([passage_id(r.document_id) for r in retrieval.results if r.document_id])
    gold = question.supporting_ids
    run = QuestionRun(
        question_id=question.id,
        strategy=strategy,
        ranking=ranking,
        recall={k: recall_at_k(ranking, gold, k) for k in ks},
        mrr=reciprocal_rank(ranking, gold),
        ndcg10=ndcg_at_k(ranking, gold, 10),
        retrieval_ms=(retrieved - started) * 1000,
        total_ms=(retrieved - started) * 1000,
        llm_calls=retrieval.llm_calls,
        tokens=_tokens(retrieval.usage),
        cost_usd=retrieval.cost_usd,
        routed_to=routing["strategy"] if strategy == AUTO else None,
    )
    if generate:
        answer = engine.generator.generate(question.question, retrieval.results)
        run.total_ms = (time.perf_counter() - started) * 1000
        run.answer = answer.text
        run.llm_calls += answer.llm_calls
        run.tokens += _tokens(answer.usage)
        run.cost_usd += answer.cost_usd
        if question.answers:
            run.exact_match = exact_match(answer.text, question.answers)
            run.f1 = token_f1(answer.text, question.answers)
            run.rouge_l = rouge_l(answer.text, question.answers)
            run.semantic = semantic_similarity(engine.embedder, answer.text, question.answers)
    return run


def _tokens(usage: Any) -> int:
    return usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def terminal_progress(done: int, total: int, label: str) -> None:
    """A one-line progress bar on stderr."""
    width = 30
    filled = int(width * done / total) if total else width
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<16}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()
