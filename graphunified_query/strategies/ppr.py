"""Personalized PageRank by sparse power iteration (scipy): milliseconds at 30K nodes.

The iteration stops once an update moves less than ``tolerance`` of the mass (L1); the result
is then within ``tolerance * damping / (1 - damping)`` of the fixed point (a contraction by
``damping`` per step), so HippoRAG's damping 0.5 stops within ``tolerance`` of it after ~10
steps instead of running a fixed budget on a graph of millions of edges.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

DEFAULT_TOLERANCE = 1e-6


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
    tolerance: float = DEFAULT_TOLERANCE,
) -> np.ndarray:
    """Stationary distribution of: follow an edge with probability ``damping``, else jump to ``reset``.

    Mass on nodes without edges (dangling) returns to the reset distribution, so the result sums to 1.
    """
    scores, _ = pagerank_iterations(
        transition, reset, damping=damping, max_iterations=max_iterations, tolerance=tolerance
    )
    return scores


def pagerank_iterations(
    transition: sp.csr_matrix,
    reset: np.ndarray,
    *,
    damping: float = 0.85,
    max_iterations: int = 50,
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[np.ndarray, int]:
    """`personalized_pagerank` and the number of power-iteration steps it took."""
    total = reset.sum()
    if total <= 0:
        return np.zeros_like(reset, dtype=np.float32), 0
    reset = (reset / total).astype(np.float32)
    scores = reset.copy()
    for step in range(1, max_iterations + 1):
        spread = damping * (transition @ scores)
        updated = spread + (1.0 - spread.sum()) * reset
        if np.abs(updated - scores).sum() < tolerance:
            return updated, step
        scores = updated
    return scores, max_iterations
