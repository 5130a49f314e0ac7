"""Graph strategies return passages and graph elements together; this decides the mix.

Half of the slots go to passages (what the answer is read from), the rest to entities and
relationships (what ties the passages together); unused slots pass to the other kinds. The final
list is trimmed to a token budget and ordered by score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from graphunified_query.results import RetrievalResult

CHARS_PER_TOKEN = 4  # budget trimming only; the generator counts real tokens when packing


def mix(
    chunks: Sequence[RetrievalResult],
    elements: Sequence[RetrievalResult],
    top_k: int,
    *,
    chunk_share: float = 0.5,
    budget_tokens: int | None = None,
) -> tuple[RetrievalResult, ...]:
    chunks = sorted(chunks, key=lambda r: -r.score)
    elements = sorted(elements, key=lambda r: -r.score)
    n_chunks = min(len(chunks), math.ceil(top_k * chunk_share))
    n_elements = min(len(elements), top_k - n_chunks)
    n_chunks = min(len(chunks), top_k - n_elements)
    picked = sorted([*chunks[:n_chunks], *elements[:n_elements]], key=lambda r: -r.score)
    if budget_tokens is None:
        return tuple(picked)
    kept, used = [], 0
    for result in picked:
        cost = len(result.text) // CHARS_PER_TOKEN + 1
        if used + cost > budget_tokens and kept:
            continue
        kept.append(result)
        used += cost
    return tuple(kept)
