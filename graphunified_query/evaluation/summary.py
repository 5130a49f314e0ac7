"""Per-strategy figures, per question type, and the router against the best strategy and the oracle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from graphunified_query.engine.query_engine import AUTO
from graphunified_query.evaluation.dataset import Question
from graphunified_query.evaluation.metrics import percentile
from graphunified_query.evaluation.runner import QuestionRun

ROUTER_METRIC_K = 5  # the router is judged on Recall@5, the headline figure of the multi-hop papers


def summarize(
    runs: Mapping[str, Sequence[QuestionRun]], questions: Sequence[Question], ks: Sequence[int]
) -> dict[str, Any]:
    types = {q.id: q.question_type for q in questions}
    strategies = {name: _strategy(rs, ks, types) for name, rs in runs.items()}
    summary: dict[str, Any] = {"strategies": strategies}
    singles = [s for s in runs if s != AUTO]
    if AUTO in runs and singles:
        summary["router"] = _router(runs, singles)
    return summary


def _strategy(
    runs: Sequence[QuestionRun], ks: Sequence[int], types: Mapping[str, str | None]
) -> dict[str, Any]:
    figures = _quality(runs, ks)
    latencies = [r.retrieval_ms for r in runs]
    totals = [r.total_ms for r in runs]
    figures |= {
        "retrieval_latency_p50_ms": round(percentile(latencies, 50), 2),
        "retrieval_latency_p95_ms": round(percentile(latencies, 95), 2),
        "total_latency_p50_ms": round(percentile(totals, 50), 2),
        "total_latency_p95_ms": round(percentile(totals, 95), 2),
        "llm_calls_per_query": round(fmean(r.llm_calls for r in runs), 3) if runs else 0,
        "tokens_per_query": round(fmean(r.tokens for r in runs), 1) if runs else 0,
        "cost_usd_per_query": round(fmean(r.cost_usd for r in runs), 6) if runs else 0,
        "cost_usd_total": round(sum(r.cost_usd for r in runs), 6),
    }
    by_type: dict[str, list[QuestionRun]] = defaultdict(list)
    for run in runs:
        if types.get(run.question_id):
            by_type[str(types[run.question_id])].append(run)
    if by_type:
        figures["by_question_type"] = {
            t: _quality(rs, ks) | {"questions": len(rs)} for t, rs in sorted(by_type.items())
        }
    routed = [r.routed_to for r in runs if r.routed_to]
    if routed:
        figures["routed_to"] = {s: routed.count(s) for s in sorted(set(routed))}
    return figures


def _quality(runs: Sequence[QuestionRun], ks: Sequence[int]) -> dict[str, Any]:
    if not runs:
        return {}
    figures: dict[str, Any] = {f"recall@{k}": round(100 * fmean(r.recall[k] for r in runs), 2) for k in ks}
    figures["mrr"] = round(fmean(r.mrr for r in runs), 4)
    figures["ndcg@10"] = round(fmean(r.ndcg10 for r in runs), 4)
    answered = [r for r in runs if r.f1 is not None]
    if answered:
        figures["exact_match"] = round(100 * fmean(r.exact_match or 0.0 for r in answered), 2)
        figures["f1"] = round(100 * fmean(r.f1 or 0.0 for r in answered), 2)
        figures["rouge_l"] = round(100 * fmean(r.rouge_l or 0.0 for r in answered), 2)
        figures["semantic_similarity"] = round(100 * fmean(r.semantic or 0.0 for r in answered), 2)
    return figures


def _router(runs: Mapping[str, Sequence[QuestionRun]], singles: Sequence[str]) -> dict[str, Any]:
    k = ROUTER_METRIC_K
    mean = {s: fmean(r.recall[k] for r in runs[s]) for s in singles}
    best = max(singles, key=lambda s: mean[s])
    by_question = {s: {r.question_id: r for r in runs[s]} for s in singles}
    oracle = fmean(max(by_question[s][r.question_id].recall[k] for s in singles) for r in runs[AUTO])
    auto = fmean(r.recall[k] for r in runs[AUTO])
    return {
        "metric": f"recall@{k}",
        "auto": round(100 * auto, 2),
        "best_single_strategy": best,
        "best_single": round(100 * mean[best], 2),
        "oracle": round(100 * oracle, 2),
        "gap_to_best_single": round(100 * (auto - mean[best]), 2),
        "gap_to_oracle": round(100 * (auto - oracle), 2),
        "auto_cost_usd_per_query": round(fmean(r.cost_usd for r in runs[AUTO]), 6),
        "best_single_cost_usd_per_query": round(fmean(r.cost_usd for r in runs[best]), 6),
    }
