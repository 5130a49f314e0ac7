"""Declared once, read where declared: every parameter a strategy's model declares is read by its
retriever, generated from the registries (every registered strategy and every composition kind).

A retriever receives its typed model whole (``retrieve(query, top_k, params)``); a field it never
reads would be accepted from a call, reported in ``params_used`` and silently ignored. Each
retriever here is called with the defaults and with every field at each boundary value (alone,
then beside every other field's boundary, for fields read only under another's value, e.g.
``vector_weight`` under ``mode: weighted``), through a model whose attribute reads are recorded.
A new parameter is covered without anyone writing a test.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.base import Retriever
from graphunified_query.strategies.composable.named import KINDS, composition
from graphunified_query.strategies.params import NoParams, StrategyParams
from graphunified_query.strategies.registry import STRATEGIES
from tests.query.param_values import boundaries

QUESTION = "On which river is the town where Ada Whitlock was born?"
# Fields read only where the built index cannot take them, each with the test that reaches them.
UNREACHABLE = {
    (
        "graph_bfs",
        "fuzzy_min_ratio",
    ): "embeddings fail (test_compose_graph.py::test_fuzzy_fallback_when_the_embedder_fails)",
    (
        "graph_dfs",
        "fuzzy_min_ratio",
    ): "embeddings fail (test_compose_graph.py::test_fuzzy_fallback_when_the_embedder_fails)",
}
# What each composition kind composes here: the cheapest registered strategies of each shape.
COMPOSED = {"combine": {"combine": ["vector", "graph_bfs"]}, "rerank": {"rerank": "naive"}}


def _builders(engine: QueryEngine) -> dict[str, tuple[type[StrategyParams], Callable[[], Retriever]]]:
    """name -> (its parameter model, a fresh retriever built with the defaults)."""
    found: dict[str, tuple[type[StrategyParams], Callable[[], Retriever]]] = {}
    for name, strategy in STRATEGIES.items():
        found[name] = (strategy.params, lambda s=strategy: s.build(engine.context, s.params()))
    for kind in KINDS:
        made = composition(f"{kind}_kind", COMPOSED[kind], engine.retriever, STRATEGIES)
        found[f"{kind}_kind"] = (made.params, lambda m=made: m.build(engine.context, m.params()))
    return found


NAMES = [*STRATEGIES, *(f"{kind}_kind" for kind in KINDS)]


def recording(params: StrategyParams) -> tuple[StrategyParams, set[str]]:
    """``params`` as an instance of a subclass of its model that records which fields are read."""
    model = type(params)
    fields = set(model.model_fields)
    read: set[str] = set()

    class Recording(model):  # type: ignore[valid-type, misc]
        def __getattribute__(self, name: str) -> Any:
            if name in fields:
                read.add(name)
            return object.__getattribute__(self, name)

    return Recording.model_validate(params.model_dump()), read


def _reads(build: Callable[[], Retriever], params: StrategyParams) -> set[str]:
    recorded, read = recording(params)
    # A value the index cannot serve (reranker 'llm' offline) raises: what it read so far counts.
    with contextlib.suppress(ValueError):
        build().retrieve(QUESTION, 5, recorded)
    return read


def _changed(model: type[StrategyParams], **values: Any) -> StrategyParams | None:
    try:
        return model.model_validate(values)
    except ValidationError:
        return None  # fields tied by a rule of the model


@pytest.mark.parametrize("name", NAMES)
def test_every_declared_parameter_is_read_by_its_retriever(engine: QueryEngine, name: str) -> None:
    model, build = _builders(engine)[name]
    singles = [(f, v) for f in model.model_fields for v in boundaries(model, f)]
    read = _reads(build, model())
    for field, value in singles:
        if (params := _changed(model, **{field: value})) is not None:
            read |= _reads(build, params)
    unread = set(model.model_fields) - read - {f for (n, f) in UNREACHABLE if n == name}
    for field in sorted(unread):  # read only under another field's value: try them in pairs
        for other, value in singles:
            for mine in boundaries(model, field):
                if other != field and (params := _changed(model, **{other: value, field: mine})):
                    read |= _reads(build, params)
    unread -= read
    assert not unread, f"{name} declares parameters its retriever never reads: {sorted(unread)}"


def test_the_unreachable_list_names_declared_parameters() -> None:
    for name, field in UNREACHABLE:
        assert field in STRATEGIES[name].params.model_fields, (name, field)


@pytest.mark.parametrize("name", NAMES)
def test_retrieve_takes_the_typed_model_and_nothing_else(engine: QueryEngine, name: str) -> None:
    """No ``**params`` catch-all, and another strategy's model is refused rather than ignored."""
    model, build = _builders(engine)[name]
    retriever = build()
    signature = inspect.signature(retriever.retrieve)
    assert list(signature.parameters) == ["query", "top_k", "params"], signature
    assert not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    assert isinstance(retriever.params, model)
    foreign = NoParams() if model is not NoParams else STRATEGIES["hybrid"].params()
    with pytest.raises(TypeError, match=type(foreign).__name__):
        retriever.retrieve(QUESTION, 3, foreign)


def test_reading_is_what_the_recording_observes(engine: QueryEngine) -> None:
    """The recorder itself: a model read in part reports exactly that part."""
    params, read = recording(STRATEGIES["hybrid"].params())
    assert params.alpha == 0.5 and read == {"alpha"}  # type: ignore[attr-defined]
