"""The query path's one result cache (issue #30 item 5): every strategy, keyed on the generation and
the full request, `query.cache.enabled` / `ttl_seconds`, hits reported in the metadata."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graphunified_query.core.settings.model import Settings
from graphunified_query.core.settings.query import ResultCacheSettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.engine.result_cache import ResultCache, request_key
from graphunified_query.strategies.registry import STRATEGIES

QUESTION = "Who founded the Hale Mill?"


def test_the_settings_default_is_the_seeds_hour() -> None:
    assert Settings().query.cache == ResultCacheSettings(enabled=True, ttl_seconds=3600.0)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_strategy_is_served_again_from_the_cache(engine: QueryEngine, strategy: str) -> None:
    engine.result_cache.clear()
    first = engine.ask(QUESTION, strategy, 3, retrieve_only=True)
    again = engine.ask(QUESTION, strategy, 3, retrieve_only=True)
    assert first.metadata["result_cache"] == "miss" and again.metadata["result_cache"] == "hit"
    assert again.contexts == first.contexts and again.expanded_contexts == first.expanded_contexts
    assert again.metadata["llm_calls"] == 0 and again.metadata["cost_usd"] == 0.0  # costs nothing now


def test_any_part_of_the_request_is_part_of_the_key(engine: QueryEngine) -> None:
    engine.result_cache.clear()
    engine.ask(QUESTION, "naive", 3, retrieve_only=True)
    others = [
        engine.ask(QUESTION, "naive", 4, retrieve_only=True),  # top_k
        engine.ask(QUESTION, "hybrid", 3, retrieve_only=True),  # strategy
        engine.ask(QUESTION + " ", "naive", 3, retrieve_only=True, link_expansion=False),  # an option
        engine.ask(QUESTION, "naive", 3, retrieve_only=True, max_risk_level="high"),  # the risk filter
        engine.ask(QUESTION, "naive", 3, retrieve_only=True, document_ids=["mill.md"]),  # a metadata filter
        engine.ask(QUESTION, "hybrid", 3, retrieve_only=True, alpha=0.2),  # a strategy parameter
    ]
    assert [r.metadata["result_cache"] for r in others] == ["miss"] * len(others)
    # The answer is still written for a cached retrieval (the LLM cache is the answer's).
    answered = engine.ask(QUESTION, "naive", 3)
    assert answered.metadata["result_cache"] == "hit" and answered.answer


def test_switched_off_in_settings(engine: QueryEngine) -> None:
    query = engine.settings.query.model_copy(update={"cache": ResultCacheSettings(enabled=False)})
    settings = engine.settings.model_copy(update={"query": query})
    off = QueryEngine(engine.snapshot, settings, engine.embedder)
    assert off.ask(QUESTION, "naive", 3, retrieve_only=True).metadata["result_cache"] == "off"
    assert off.ask(QUESTION, "naive", 3, retrieve_only=True).metadata["result_cache"] == "off"


def test_entries_expire_after_ttl_and_the_least_recent_leave_first(engine: QueryEngine) -> None:
    now = [0.0]
    cache: ResultCache[str] = ResultCache(300, max_entries=2, clock=lambda: now[0])
    key = request_key(engine.snapshot, {"q": 1})
    assert cache.get_or_compute(key, lambda: "a") == ("a", False)
    assert cache.get_or_compute(key, lambda: "b") == ("a", True)
    now[0] = 301.0
    assert cache.get_or_compute(key, lambda: "c") == ("c", False)  # expired: computed again
    for n in (2, 3):
        cache.get_or_compute(request_key(engine.snapshot, {"q": n}), lambda: "x")
    assert len(cache) == 2 and cache.get_or_compute(key, lambda: "d") == ("d", False)


def test_another_generation_or_snapshot_never_meets_an_old_entry(engine: QueryEngine) -> None:
    snapshot = engine.snapshot
    key = request_key(snapshot, {"q": 1})
    assert key == request_key(snapshot, {"q": 1})
    newer = replace(snapshot, generation=snapshot.generation + 1)
    assert request_key(newer, {"q": 1}) != key
    reloaded = replace(snapshot, extras={})  # a reload at the same generation number
    assert request_key(reloaded, {"q": 1}) != key
    assert request_key(snapshot, {"reranker": object()}) is None  # not plain data: no key


def test_a_zero_ttl_is_no_cache() -> None:
    cache: ResultCache[int] = ResultCache(0)
    assert not cache.enabled
    assert cache.get_or_compute(("t", 0, "{}"), lambda: 1) == (1, False)
    assert cache.get_or_compute(("t", 0, "{}"), lambda: 2) == (2, False)
