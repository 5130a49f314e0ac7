"""Compositions named in ``settings.yaml``: two registered strategies combined, or one reranked.

    strategies:
      vector_graph:                  # HybridCombiner(vector_mmr, graph_bfs)
        combine: [vector_mmr, graph_bfs]
        mode: weighted               # concat | rerank | weighted | expand
        vector_weight: 0.6
      hybrid_reranked:               # RerankingRetriever(hybrid, local reranker)
        rerank: hybrid
        reranker: local              # local | llm | voyage
        over_retrieve_multiplier: 3

Such a name is then a strategy like any other, on every entry point (``ask --strategy
vector_graph``, HTTP, eval, LangChain, ``GET /strategies``). ``combine``/``rerank`` and
``reranker`` say what is built; the other keys are the composition's parameters (`CombineParams`,
`RerankParams`), which a call may override. The strategies inside keep their own
``strategies.<name>`` settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from graphunified_query.core.settings.model import COMPOSITION_KEYS
from graphunified_query.strategies.base import Retriever, RetrieverContext
from graphunified_query.strategies.composable.combine import CombineParams, HybridCombiner
from graphunified_query.strategies.params import StrategyParams
from graphunified_query.strategies.registry import Strategy
from graphunified_query.strategies.rerank.registry import RerankerName, make_reranker
from graphunified_query.strategies.rerank.rerank import RerankingRetriever, RerankParams

# The kinds of composition: the key naming what is composed, and the composition's parameters.
KINDS: dict[str, type[StrategyParams]] = dict(
    zip(COMPOSITION_KEYS, (CombineParams, RerankParams), strict=True)
)
STRUCTURE = frozenset({*KINDS, "reranker"})  # what is built, not per-call parameters


def is_composition(name: str, entry: Mapping[str, Any], known: Mapping[str, Strategy]) -> bool:
    """Whether ``strategies.<name>`` defines a strategy. A registered name's entry holds its
    parameters, whatever their names: ``strategies.expanded.rerank: true`` is expanded's own
    ``rerank`` switch, not a composition."""
    return name not in known and any(kind in entry for kind in KINDS)


def composition(
    name: str, entry: Mapping[str, Any], inner: Callable[[str], Retriever], known: Mapping[str, Strategy]
) -> Strategy:
    """The `Strategy` ``strategies.<name>`` defines; ``inner(n)`` is strategy ``n`` with its settings.
    The composition is built with the entry's parameters, so ``get_stats`` reports them."""
    from graphunified_query.core.settings.model import SettingsError

    parts = entry.get("combine") if "combine" in entry else [entry.get("rerank")]
    if not isinstance(parts, list) or len(parts) != (2 if "combine" in entry else 1):
        raise SettingsError(f"strategies.{name}: combine takes two strategy names, rerank one; not {parts!r}")
    for part in parts:
        if not isinstance(part, str) or part not in known:
            raise SettingsError(
                f"strategies.{name}: {part!r} is not a strategy; choose from: {', '.join(known)}"
            )
    reranker: RerankerName | None = entry.get("reranker")
    params = KINDS["combine" if "combine" in entry else "rerank"]
    try:
        params.model_validate({k: v for k, v in entry.items() if k not in STRUCTURE})
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        raise SettingsError(
            f"strategies.{name}.{'.'.join(map(str, problem['loc']))}: {problem['msg']}; "
            f"{name} takes: {', '.join([*STRUCTURE, *params.model_fields])}"
        ) from None

    def build(context: RetrieverContext, values: Any) -> Retriever:
        chosen = make_reranker(reranker, context) if reranker else None
        if isinstance(values, CombineParams):
            first, second = (inner(p) for p in parts)
            return HybridCombiner(first, second, values, reranker=chosen, context=context, name=name)
        return RerankingRetriever(
            inner(parts[0]), chosen or make_reranker("local", context), values, name=name
        )

    what = (
        f"{' + '.join(parts)}" if params is CombineParams else f"{parts[0]} reranked ({reranker or 'local'})"
    )
    return Strategy(
        name, build, params, "composable", f"settings: {what}", structure=STRUCTURE, composed_of=tuple(parts)
    )


def with_compositions(
    entries: Mapping[str, Mapping[str, Any]], known: Mapping[str, Strategy], inner: Callable[[str], Retriever]
) -> dict[str, Strategy]:
    """``known`` and the strategies the ``strategies.<name>`` ``entries`` define (`composition`)."""
    registry = dict(known)
    for name, entry in entries.items():
        if is_composition(name, entry, known):
            registry[name] = composition(name, entry, inner, known)
    return registry
