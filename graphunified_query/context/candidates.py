"""The query's filters where a strategy chooses among candidates: filters first, then choose.

The query path (`query_path.run_path`) filters what a strategy returns, but a strategy that picks
among candidates (MMR diversifying, a reranker grading, a combiner fusing two lists) would pick
with the left-out ones still there: MMR chose an injected chunk first and diversified away from
it, and a reranker's prompt held it. So the path makes the query's risk and metadata filters
current while the strategy runs (`filtering`), and those steps keep only the candidates the
filters admit (`admitted`) before they choose. Outside the query path nothing is filtered.

A context variable rather than a parameter: every retriever's signature stays the same, and the
filters follow the query into whatever it calls in the same thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from graphunified_query.context.facts import facts_of
from graphunified_query.context.filters import ContextFilter
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.results import RetrievalResult

_ACTIVE: ContextVar[ContextFilter | None] = ContextVar("candidate_filter", default=None)


@contextmanager
def filtering(filters: ContextFilter) -> Iterator[None]:
    """``filters`` are the query's while the block runs."""
    token = _ACTIVE.set(filters)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def admitted(snapshot: Snapshot, results: Sequence[RetrievalResult]) -> list[RetrievalResult]:
    """The candidates the current query's filters keep (all of them outside a query)."""
    filters = _ACTIVE.get()
    if filters is None:
        return list(results)
    return [r for r in results if filters.reason(facts_of(snapshot, r)) is None]
