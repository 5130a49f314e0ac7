"""What every composable retriever shares: stats, and the context a wrapper runs in."""

from __future__ import annotations

from typing import Any

from graphunified_query.strategies.base import P, Retriever, RetrieverBase, RetrieverContext


class ComposableRetriever(RetrieverBase[P]):
    """A `Retriever` that describes itself in more detail (`get_stats`: configuration and index sizes)."""


def stats_of(retriever: Retriever) -> dict[str, Any]:
    """The retriever's own stats (a retriever written outside `RetrieverBase` may have none: its name)."""
    get_stats = getattr(retriever, "get_stats", None)
    return get_stats() if callable(get_stats) else {"name": retriever.name}


def context_of(retriever: Retriever, given: RetrieverContext | None) -> RetrieverContext:
    """The context a wrapper runs in: the one given, else the wrapped retriever's own."""
    context = given or getattr(retriever, "context", None)
    if not isinstance(context, RetrieverContext):
        raise TypeError(
            f"{type(retriever).__name__} carries no RetrieverContext; pass context= to the wrapper."
        )
    return context
