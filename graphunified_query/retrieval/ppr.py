"""Personalized PageRank by sparse power iteration (scipy): milliseconds at 30K nodes."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def transition_matrix(adjacency: sp.csr_matrix) -> sp.csr_matrix:
    """Column-stochastic: column j spreads node j's mass over its neighbours by edge weight."""
    degree = np.asarray(adjacency.sum(axis=0)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree, dtype=np.float64), where=degree > 0)
    return (adjacency @ sp.diags(inverse)).tocsr().astype(np.float32)


def personalized_pagerank(
    transition: sp.csr_matrix,
    reset: np.ndarray,
    *,
    damping: float = 0.85,
    max_iterations: int = 50,
    tolerance: float = 1e-6,
) -> np.ndarray:
    """Stationary distribution of: follow an edge with probability ``damping``, else jump to ``reset``.

    Mass on nodes without edges (dangling) returns to the reset distribution, so the result sums to 1.
    """
    total = reset.sum()
    if total <= 0:
        return np.zeros_like(reset, dtype=np.float32)
    reset = (reset / total).astype(np.float32)
    scores = reset.copy()
    for _ in range(max_iterations):
        spread = damping * (transition @ scores)
        updated = spread + (1.0 - spread.sum()) * reset
        if np.abs(updated - scores).sum() < tolerance:
            return updated
        scores = updated
    return scores
