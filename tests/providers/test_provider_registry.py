"""The provider registry: one selection rule, and a new provider is one module plus one line.

The toy provider (tests/fakes/toy_provider.py) is registered with one `register_llm` call and then
indexes a corpus (extraction, summaries, reports) and answers a question, with no other change.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers import registry
from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.registry import provider_name, register_llm, resolve_llm
from graphunified_query.core.registry import UnknownName
from graphunified_query.core.settings.model import Settings, SettingsError, load_settings
from tests.fakes import toy_provider


@pytest.fixture
def toy() -> Iterator[None]:
    register_llm("toy", "tests.fakes.toy_provider:build")  # the one line a provider needs
    toy_provider.SENT.clear()
    yield
    registry.LLMS.unregister("toy")


def test_the_one_selection_rule() -> None:
    auto = Settings()
    assert provider_name(auto, {}) == "offline"
    assert provider_name(auto, {"ANTHROPIC_API_KEY": "k"}) == "anthropic"
    assert provider_name(
        Settings.model_validate({"llm": {"provider": "offline"}}), {"ANTHROPIC_API_KEY": "k"}
    ) == ("offline")
    assert resolve_llm(auto, cache=None, environ={}) is None


def test_an_unknown_provider_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("llm: {provider: gemini}\n")
    with pytest.raises(
        SettingsError, match=r"llm\.provider 'gemini' is not registered; use one of: auto, offline, anthropic"
    ):
        load_settings(tmp_path)


def test_reserved_names_cannot_be_registered() -> None:
    with pytest.raises(UnknownName, match="reserved"):
        register_llm("offline", "tests.fakes.toy_provider:build")


def test_a_registered_provider_is_an_llm(toy: None, tmp_path: Path) -> None:
    settings = Settings.model_validate({"llm": {"provider": "toy", "model": "toy-1"}})
    llm = resolve_llm(settings, cache=tmp_path / "llm.sqlite", environ={})
    assert isinstance(llm, LLM) and llm.label == "toy:toy-1"


@pytest.mark.slow
def test_toy_provider_indexes_and_answers(toy: None, home: Path, input_dir: Path) -> None:
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from graphunified_assets.ops.indexing import index
    from graphunified_query.engine.query_engine import QueryEngine

    llm = "{provider: toy, model: toy-1, max_gleanings: 0, summarize_above_tokens: 0}"  # every report by it
    (home / "settings.yaml").write_text(f"llm: {llm}\n")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    index(resource, echo=lambda _: None)
    tools = {r["tool_choice"]["name"] for r in toy_provider.SENT if r.get("tool_choice")}
    assert {"record_extraction", "community_report"} <= tools
    layout = HomeLayout.at(home)
    entities = {e["title"] for e in pq.read_table(layout.table_path("entities")).to_pylist()}
    assert {"Thomas Hale", "Hale Mill"} <= entities
    reports = pq.read_table(layout.table_path("community_reports")).to_pylist()
    assert reports and all(r["generator"] == "toy:toy-1" for r in reports)

    engine = QueryEngine.open(home, environ={})
    sent = len(toy_provider.SENT)
    response = engine.ask("Who founded the Hale Mill?", "hybrid")
    assert response.answer == "The toy model read the sources [1]."
    assert response.metadata["llm_calls"] == 1 and not response.metadata["cached"]
    assert len(toy_provider.SENT) == sent + 1
    again = engine.ask("Who founded the Hale Mill?", "hybrid")
    assert again.answer == response.answer and len(toy_provider.SENT) == sent + 1  # from the LLM cache
    assert again.metadata["cached"] and again.metadata["llm_calls"] == 0 and again.metadata["cost_usd"] == 0
    assert again.metadata["tokens_used"] == 0 and again.metadata["cached_tokens"] > 0
