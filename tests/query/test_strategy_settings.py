"""A strategy's settings.yaml entry: its own parameters (whatever their names) or a composition, and
what a built retriever reports about itself (`get_stats`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphunified_query.core.settings.model import Settings, load_settings
from graphunified_query.engine.query_engine import QueryEngine, QueryRequest
from graphunified_query.strategies.registry import STRATEGIES

QUESTION = "On which river is the town where Ada Whitlock was born?"


def _configured(engine: QueryEngine, strategies: dict[str, Any]) -> QueryEngine:
    settings = Settings.model_validate({**engine.settings.model_dump(), "strategies": strategies})
    return QueryEngine(engine.snapshot, settings, engine.embedder)


def _expanded(engine: QueryEngine) -> dict[str, Any]:
    request = QueryRequest(question=QUESTION, strategy="expanded", top_k=3, retrieve_only=True)
    return dict(engine.query(request).metadata)


@pytest.mark.parametrize("value", [True, False])
def test_expanded_rerank_in_settings_is_its_own_switch_not_a_composition(
    engine: QueryEngine, value: bool
) -> None:
    """It was read as a composition: every query failed with "strategies.expanded: True is not a
    strategy"."""
    meta = _expanded(_configured(engine, {"expanded": {"rerank": value}}))
    assert meta["params_used"]["rerank"] == {"value": value, "source": "settings"}
    assert meta["retrieval_reranker"] == ("local" if value else None)


def test_expanded_rerank_from_the_environment(engine: QueryEngine, built_home: Path) -> None:
    environ = {"GRAPHUNIFIED__STRATEGIES__EXPANDED__RERANK": "true"}
    settings = load_settings(built_home, environ=environ)
    assert settings.strategies["expanded"]["rerank"] in (True, "true")
    meta = _expanded(QueryEngine(engine.snapshot, settings, engine.embedder))
    assert meta["params_used"]["rerank"] == {"value": True, "source": "settings"}
    assert meta["retrieval_reranker"] == "local"


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_get_stats_on_every_registered_strategy_reports_its_parameters(
    engine: QueryEngine, name: str
) -> None:
    """It raised AttributeError on the registered strategies (only the composable ones had it)."""
    retriever = engine.retriever(name)
    stats = retriever.get_stats()
    assert stats["name"] == name
    reported = stats.get("params", stats)
    for field in type(retriever.params).model_fields:
        assert reported[field] == getattr(retriever.params, field), (name, field)


def test_get_stats_reports_what_settings_configured(engine: QueryEngine) -> None:
    """A composition defined in settings reported its constructor defaults (0.5/0.5), and the
    strategies inside it their defaults, instead of the configured values."""
    configured = _configured(
        engine,
        {
            "hybrid": {"alpha": 0.7},
            "mixed": {
                "combine": ["naive", "hybrid"],
                "mode": "weighted",
                "vector_weight": 0.6,
                "graph_weight": 0.4,
            },
            "reranked": {"rerank": "hybrid", "reranker": "local", "over_retrieve_multiplier": 3},
        },
    )
    mixed = configured.retriever("mixed").get_stats()
    assert (mixed["mode"], mixed["vector_weight"], mixed["graph_weight"]) == ("weighted", 0.6, 0.4)
    assert mixed["second"]["params"]["alpha"] == 0.7
    reranked = configured.retriever("reranked").get_stats()
    assert reranked["over_retrieve_multiplier"] == 3 and reranked["inner"]["params"]["alpha"] == 0.7
    assert configured.retriever("hybrid").get_stats()["params"]["alpha"] == 0.7


def test_a_call_overrides_settings_and_params_used_says_what_ran(engine: QueryEngine) -> None:
    configured = _configured(engine, {"hybrid": {"alpha": 0.7}})
    request = QueryRequest(question=QUESTION, strategy="hybrid", top_k=3, params={"rrf_k": 10})
    used = configured.query(request).metadata["params_used"]
    assert used["alpha"] == {"value": 0.7, "source": "settings"}
    assert used["rrf_k"] == {"value": 10, "source": "call"}
    fused = configured.query(request).contexts[0].metadata["fusion"]
    assert fused == "rrf(k=10, alpha=0.7)"  # what the retriever read, not only what was reported
