"""Fit ranked contexts into the answer prompt's token budget, in the order they are worth most."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence

from graphunified_query.core.settings.model import QuerySettings
from graphunified_query.strategies.results import RetrievalResult

TokenCounter = Callable[[str], int]
# What the prompt adds around each context: "[n] (Source: file > section)", an occasional risk
# mark and the untrusted-data markers. An estimate: labels vary, so it is generous.
CONTEXT_FRAME_TOKENS = 24
SCORE_DECIMALS = 6  # scores equal to this many decimals tie (float noise is not a preference)


def context_budget(settings: QuerySettings) -> int:
    """Tokens the contexts may fill: the context window less what the system prompt and the
    question (with the prompt's framing) are reserved."""
    return settings.context_window - settings.reserved_system_tokens - settings.reserved_query_tokens


def framed(count_tokens: TokenCounter) -> TokenCounter:
    """A counter that charges each context its text plus the prompt's frame around it."""
    return lambda text: count_tokens(text) + CONTEXT_FRAME_TOKENS


def order_contexts(results: Sequence[RetrievalResult]) -> tuple[RetrievalResult, ...]:
    """Best first: higher score, then the shallower section (an overview before its details),
    then the document used least so far (source diversity), then the retriever's own order."""
    remaining = list(enumerate(results))
    used: Counter[str] = Counter()
    ordered: list[RetrievalResult] = []
    while remaining:  # greedy, because diversity depends on what is already chosen
        best = min(
            remaining,
            key=lambda item: (
                -round(item[1].score, SCORE_DECIMALS),
                section_depth(item[1]),
                used[_document(item[1])],
                item[0],
            ),
        )
        remaining.remove(best)
        used[_document(best[1])] += 1
        ordered.append(best[1])
    return tuple(ordered)


def section_depth(result: RetrievalResult) -> int:
    """Headings in the context's section path, read from its ``file > section`` label."""
    label = result.source
    if result.document_id and label.startswith(f"{result.document_id} > "):
        return label[len(result.document_id) + 3 :].count(" > ") + 1
    if result.document_id and label == result.document_id:
        return 0
    return label.count(" > ")


def _document(result: RetrievalResult) -> str:
    return result.document_id or result.source


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


def pack_after(
    packed: Sequence[RetrievalResult],
    more: Sequence[RetrievalResult],
    budget_tokens: int,
    count_tokens: TokenCounter,
) -> tuple[RetrievalResult, ...]:
    """What of ``more`` fits in the budget ``packed`` left, in rank order, no text twice and none
    cut: the expanded contexts, which follow a strategy's own and never take their room."""
    left = budget_tokens - sum(count_tokens(r.text) for r in packed)
    seen = {" ".join(r.text.split()) for r in packed}
    added: list[RetrievalResult] = []
    for result in more:
        key = " ".join(result.text.split())
        if not key or key in seen:
            continue
        seen.add(key)
        tokens = count_tokens(result.text)
        if tokens <= left:
            added.append(result)
            left -= tokens
    return tuple(added)


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
