"""Maximal marginal relevance, as LangChain's `maximal_marginal_relevance` defines it.

Pick the candidate most similar to the query, then repeatedly the one maximizing
``lambda_mult * sim(query, d) - (1 - lambda_mult) * max(sim(d, s) for s in selected)``.
``lambda_mult = 1`` is plain similarity ranking, ``0`` is maximal diversity.
"""

from __future__ import annotations

import numpy as np


def mmr(
    query: np.ndarray, candidates: np.ndarray, k: int, lambda_mult: float = 0.5
) -> list[tuple[int, float]]:
    """(candidate index, marginal score at selection) for up to ``k`` picks, in pick order.

    ``query`` and the rows of ``candidates`` must be unit vectors (cosine = dot product). From the
    second pick on, the marginal score never rises (each candidate's penalty only grows with the
    selection); the first pick carries no penalty, so a later one can score above it only when it
    is dissimilar (negative cosine) to the first.
    """
    n = min(k, len(candidates))
    if n <= 0:
        return []
    to_query = candidates @ query
    # The first pick is the most similar whatever lambda is (LangChain does the same).
    first = int(np.argmax(to_query))
    picks = [(first, float(lambda_mult * to_query[first]))]
    # Running max similarity of every candidate to the selection: one matrix-vector product per pick.
    redundancy = candidates @ candidates[first]
    chosen = np.zeros(len(candidates), bool)
    chosen[first] = True
    while len(picks) < n:
        marginal = lambda_mult * to_query - (1 - lambda_mult) * redundancy
        marginal[chosen] = -np.inf
        best = int(np.argmax(marginal))  # first maximum: ties go to the earlier candidate
        picks.append((best, float(marginal[best])))
        chosen[best] = True
        redundancy = np.maximum(redundancy, candidates @ candidates[best])
    return picks
