"""Graph strategies return passages and graph elements together; this decides the mix.

`mix_shares` splits the ``top_k`` slots and the token budget between any number of kinds in given
proportions (GraphRAG's local search: text units, entities, relationships; LightRAG: chunks, then
entities and relationships by ``entity_weight``); unused slots pass to the other kinds. The final
list is trimmed to the token budget and ordered by score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from graphunified_query.strategies.results import RetrievalResult

CHARS_PER_TOKEN = 4  # budget trimming only; the generator counts real tokens when packing


def mix_shares(
    groups: Mapping[str, Sequence[RetrievalResult]],
    shares: Mapping[str, float],
    top_k: int,
    *,
    budget_tokens: int | None = None,
) -> tuple[RetrievalResult, ...]:
    """GraphRAG's local context split: each kind gets its share of the ``top_k`` slots and of the
    token budget, taken in the order given (each group comes ranked within its kind); slots and
    tokens a kind leaves unused go to the best of the rest. The result is ordered by score."""
    ranked = {kind: list(items) for kind, items in groups.items()}
    quotas = _apportion(top_k, {kind: shares.get(kind, 0.0) for kind in ranked})
    picked: list[RetrievalResult] = []
    leftover: list[RetrievalResult] = []
    for kind, items in ranked.items():
        allowed = None if budget_tokens is None else budget_tokens * shares.get(kind, 0.0)
        used = 0
        for n, result in enumerate(items):
            cost = _tokens(result)
            if n < quotas[kind] and (allowed is None or used + cost <= allowed or not used):
                picked.append(result)
                used += cost
            else:
                leftover.append(result)
    picked += sorted(leftover, key=lambda r: -r.score)[: max(top_k - len(picked), 0)]
    picked.sort(key=lambda r: -r.score)
    return tuple(picked) if budget_tokens is None else trim_to_budget(picked, budget_tokens)


def _apportion(total: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Whole slots in proportion to ``shares`` (largest remainder; ties go to the earlier kind)."""
    weight = sum(shares.values()) or 1.0
    exact = {kind: total * share / weight for kind, share in shares.items()}
    quotas = {kind: math.floor(value) for kind, value in exact.items()}
    by_remainder = sorted(exact, key=lambda kind: -(exact[kind] - quotas[kind]))
    for kind in by_remainder[: total - sum(quotas.values())]:
        quotas[kind] += 1
    return quotas


def _tokens(result: RetrievalResult) -> int:
    return len(result.text) // CHARS_PER_TOKEN + 1


def trim_to_budget(picked: Sequence[RetrievalResult], budget_tokens: int) -> tuple[RetrievalResult, ...]:
    """``picked`` in order, leaving out what no longer fits ``budget_tokens`` (the first always fits)."""
    kept: list[RetrievalResult] = []
    used = 0
    for result in picked:
        cost = _tokens(result)
        if used + cost > budget_tokens and kept:
            continue
        kept.append(result)
        used += cost
    return tuple(kept)
