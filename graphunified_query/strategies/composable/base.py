"""What every composable retriever shares: per-call parameter overrides, stats, and its context."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

from graphunified_query.strategies.base import Retriever, RetrieverBase, RetrieverContext

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Config = TypeVar("Config", bound="DataclassInstance")


class ComposableRetriever(RetrieverBase):
    """A `Retriever` that can also describe itself (`get_stats`) so a composition can be inspected."""

    def get_stats(self) -> dict[str, Any]:
        raise NotImplementedError


def with_overrides(config: Config, params: Mapping[str, Any]) -> Config:
    """``config`` with the per-call ``params`` that name one of its fields applied.

    Other keys are ignored on purpose: a combiner forwards one set of params to both of its sides,
    and each side takes only the ones it understands (as the registered strategies do).
    """
    known = {f.name for f in fields(config)}
    chosen = {k: v for k, v in params.items() if k in known}
    return replace(config, **chosen) if chosen else config


def stats_of(retriever: Retriever) -> dict[str, Any]:
    """The retriever's own stats, or just its name for plain strategies (e.g. the registered six)."""
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
