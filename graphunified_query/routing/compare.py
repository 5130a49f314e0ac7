"""Rule router, learned router (cross-validated), best single strategy and oracle on one question set,
from each question's recorded Recall@5 per strategy: no retrieval is run again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from graphunified_query.routing.fit import FOLDS, Scored
from graphunified_query.routing.labels import LABEL_K, Labelled


def comparison(
    examples: Sequence[Labelled], rule_picks: Sequence[str], scored: Sequence[Scored]
) -> dict[str, Any]:
    strategies = list(examples[0].outcomes)
    mean = {s: fmean(e.outcomes[s].recall for e in examples) for s in strategies}
    best = max(strategies, key=lambda s: mean[s])
    return {
        "metric": f"recall@{LABEL_K}",
        "questions": len(examples),
        "rule": _pct(fmean(e.outcomes[p].recall for e, p in zip(examples, rule_picks, strict=True))),
        "learned_cv": _pct(fmean(s.recall for s in scored)),
        "learned_cv_folds": min(FOLDS, len(examples)),  # fewer questions than folds: one each
        "best_single_strategy": best,
        "best_single": _pct(mean[best]),
        "oracle": _pct(fmean(max(o.recall for o in e.outcomes.values()) for e in examples)),
        "labels": dict(Counter(e.label for e in examples).most_common()),
        "rule_routed_to": dict(Counter(rule_picks).most_common()),
        "learned_cv_routed_to": dict(Counter(s.predicted for s in scored).most_common()),
    }


def held_out(examples: Sequence[Labelled], picks: Sequence[str]) -> float:
    """Mean Recall@5 of ``picks`` (one strategy per question), in percent."""
    return _pct(fmean(e.outcomes[p].recall for e, p in zip(examples, picks, strict=True)))


def _pct(value: float) -> float:
    return round(100 * value, 2)
