"""Fit ranked contexts into the answer prompt's token budget."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from graphunified_query.results import RetrievalResult

TokenCounter = Callable[[str], int]


def pack_contexts(
    results: Sequence[RetrievalResult], budget_tokens: int, count_tokens: TokenCounter
) -> tuple[RetrievalResult, ...]:
    """The results that fit ``budget_tokens``, in rank order, each distinct text once.

    A context too big for what is left is skipped, so a smaller one further down may still fit.
    If the top context alone is over budget it is cut to the budget rather than returning nothing:
    the best evidence, shortened, beats no evidence.
    """
    packed: list[RetrievalResult] = []
    seen: set[str] = set()
    left = budget_tokens
    for result in results:
        key = " ".join(result.text.split())  # the same passage found twice, modulo whitespace
        if not key or key in seen:
            continue
        seen.add(key)
        tokens = count_tokens(result.text)
        if tokens <= left:
            packed.append(result)
            left -= tokens
        elif not packed and (cut := _truncate(result, budget_tokens, count_tokens)).text:
            packed.append(cut)
            left = 0
    return tuple(packed)


def _truncate(result: RetrievalResult, budget_tokens: int, count_tokens: TokenCounter) -> RetrievalResult:
    """The longest word prefix of the text within budget (binary search: O(log n) counts)."""
    words = result.text.split()
    low, high = 0, len(words)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(" ".join(words[:middle])) <= budget_tokens:
            low = middle
        else:
            high = middle - 1
    metadata = {**result.metadata, "truncated": True}
    return dataclasses.replace(result, text=" ".join(words[:low]), metadata=metadata)
