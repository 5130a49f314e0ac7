"""`build`: a composable retriever by its registered name, configured, for Python compositions."""

from __future__ import annotations

from typing import Any

from graphunified_query.strategies.base import Retriever, RetrieverContext
from graphunified_query.strategies.registry import STRATEGIES


def build(name: str, context: RetrieverContext, **values: Any) -> Retriever:
    """``build("vector_mmr", context, fetch_k=40)``: the composable strategy ``name`` with its
    parameter model's values (checked: an unknown name or a bad value raises ValidationError)."""
    strategy = STRATEGIES.get(name)
    if strategy is None or strategy.tier != "composable":
        choices = ", ".join(n for n, s in STRATEGIES.items() if s.tier == "composable")
        raise ValueError(f"Unknown composable retriever {name!r}; choose one of: {choices}.")
    return strategy.build(context, strategy.params.model_validate(values))
