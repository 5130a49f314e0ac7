"""`strategies.enabled`: the pipeline builds only what the enabled strategies read (each strategy's
`reads` in the registry), a strategy left out is refused saying how to enable it, on every path,
and `auto` never routes to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.cli import main
from graphunified_query.core.artifacts import BUILT_FOR_FILE, READS
from graphunified_query.core.indexes.bm25 import BM25Index
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import read_table
from graphunified_query.core.stores.publication import current
from graphunified_query.engine.query_engine import QueryEngine, StrategyNotServed
from graphunified_query.server.app import create_app
from graphunified_query.strategies.registry import STRATEGIES, names
from tests.query.conftest import FIXTURE, OFFLINE_SETTINGS, index_offline
from tests.serving import loopback_client

QUESTION = "Who founded the Hale Mill?"
# Questions the rule router sends to each strategy it routes to (tests/query/test_router.py).
ROUTED = (
    "What are the main themes of the corpus?",
    "How is Eastfold related to Hale Mill?",
    "What is Hale Mill's founder's birthplace?",
    "Who is Thomas Hale?",
    "When was Thomas Hale born?",
)


def _with_enabled(engine: QueryEngine, enabled: list[str]) -> QueryEngine:
    settings = engine.settings.model_copy(update={"strategies": {"enabled": enabled}})
    return QueryEngine(engine.snapshot, settings, engine.embedder)


def _routed(engine: QueryEngine) -> set[str]:
    return {engine.ask(q, "auto", retrieve_only=True).strategy for q in ROUTED}


def test_what_strategies_read_is_declared_for_registered_strategies() -> None:
    assert set(READS) <= set(names())  # a renamed strategy cannot leave its artifacts unbuilt
    assert {n for n in names() if STRATEGIES[n].reads} == set(READS)


def test_the_questions_reach_every_routed_strategy(engine: QueryEngine) -> None:
    """So the generated test below could fail: with all enabled, `auto` sends them everywhere."""
    assert _routed(engine) == set(names("core")) - {"naive"}


@pytest.mark.parametrize("disabled", names("core"))
def test_a_disabled_strategy_is_refused_and_the_others_answer(engine: QueryEngine, disabled: str) -> None:
    restricted = _with_enabled(engine, [n for n in names("core") if n != disabled])
    with pytest.raises(StrategyNotServed, match=rf"'{disabled}' is not enabled: strategies.enabled .*add"):
        restricted.ask(QUESTION, disabled, retrieve_only=True)
    for other in names("core"):
        if other != disabled:
            assert restricted.ask(QUESTION, other, retrieve_only=True).contexts, other
    assert disabled not in _routed(restricted)
    assert disabled not in [r.strategy for r in restricted.compare_requests(QUESTION, None, {})]


def test_the_cli_and_http_refuse_a_disabled_strategy_saying_how_to_enable_it(
    built_home: Path, engine: QueryEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    restricted = _with_enabled(engine, ["naive", "hybrid"])
    reply = loopback_client(create_app(restricted)).post(
        "/ask", json={"question": QUESTION, "strategy": "hipporag"}
    )
    assert reply.status_code == 422
    assert "strategies.enabled" in reply.json()["detail"][0]["msg"]
    settings = HomeLayout.at(built_home).home / "settings.yaml"
    original = settings.read_text()
    try:
        settings.write_text(original + "strategies:\n  enabled: [naive, hybrid]\n")
        assert main(["ask", QUESTION, "--home", str(built_home), "--strategy", "lightrag"]) == 2
        error = capsys.readouterr().err
        assert "'lightrag' is not enabled" in error and "add lightrag there" in error
        assert "Traceback" not in error
    finally:
        settings.write_text(original)


def test_a_misspelt_enabled_strategy_names_the_closest(engine: QueryEngine) -> None:
    with pytest.raises(
        ValueError, match=r"strategies.enabled: no such strategy 'hipporg' \(did you mean 'hipporag'"
    ):
        _with_enabled(engine, ["naive", "hipporg"])


@pytest.fixture(scope="module")
def lean_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    settings = OFFLINE_SETTINGS + "strategies:\n  enabled: [naive, graphrag_local]\n"
    return index_offline(FIXTURE, tmp_path_factory.mktemp("lean-home"), settings)


def test_the_artifacts_only_disabled_strategies_read_are_built_empty(lean_home: Path) -> None:
    layout = HomeLayout.at(lean_home)
    read = {
        a for name in ("hybrid", "graphrag_global", "lightrag", "hipporag") for a in STRATEGIES[name].reads
    }
    assert read == {
        "bm25",
        "ppr_graph.npz",
        "communities",
        "community_reports",
        "facts",
        "relationship_keywords",
    }
    assert len(BM25Index.load(layout.index_path("bm25")).ids) == 0
    assert PPRGraph.load(layout.index_path("ppr_graph.npz")).n_entities == 0
    for table in ("communities", "community_reports", "facts"):
        assert read_table(layout.table_path(table)).num_rows == 0, table
    assert not any(read_table(layout.table_path("relationships")).column("keywords").to_pylist())
    assert read_table(layout.table_path("entities")).num_rows > 0  # shared: always built
    recorded = json.loads(layout.index_path(BUILT_FOR_FILE).read_text())
    assert recorded == {"enabled": ["naive", "graphrag_local"]}


def test_a_lean_index_answers_its_strategies_and_asks_for_a_refresh_for_the_others(lean_home: Path) -> None:
    lean = QueryEngine.open(lean_home, environ={})
    for name in ("naive", "graphrag_local"):
        assert lean.ask(QUESTION, name, retrieve_only=True).contexts, name
    assert _routed(lean) <= {"naive", "graphrag_local"}
    # Enabled in settings since the build: the index lacks what it reads, so a refresh is named.
    everything = _with_enabled(lean, list(names("core")))
    for name in ("hybrid", "graphrag_global", "lightrag", "hipporag"):
        with pytest.raises(
            StrategyNotServed, match=rf"'{name}' is enabled, but .* index --home .* --refresh"
        ):
            everything.ask(QUESTION, name, retrieve_only=True)
    assert everything.ask(QUESTION, "naive", retrieve_only=True).contexts


def test_enabling_them_and_refreshing_builds_what_they_read(lean_home: Path) -> None:
    """Last in the module: it turns the lean home into a full one."""
    lean = current(HomeLayout.at(lean_home), rebuild_hint="").index_path(BUILT_FOR_FILE)
    (lean_home / "settings.yaml").write_text(OFFLINE_SETTINGS)  # strategies.enabled unset: all
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(lean_home / "dagster"))
        index(
            GraphUnifiedResource(home=str(lean_home), input_dir=str(FIXTURE)),
            echo=lambda _: None,
            refresh=True,
        )
    full = QueryEngine.open(lean_home, environ={})
    assert full.snapshot.built_for is None
    # The lean generation, still kept for its readers, still says what it served: the refresh wrote
    # a new file rather than rewriting the one the generation hard-links (which it once emptied).
    assert json.loads(lean.read_text()) == {"enabled": ["naive", "graphrag_local"]}
    for name in names("core"):
        assert full.ask(QUESTION, name, retrieve_only=True).contexts, name
    assert read_table(HomeLayout.at(lean_home).table_path("community_reports")).num_rows > 0
