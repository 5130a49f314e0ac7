"""Settings the query contract reads: secrets, strategy defaults
with their precedence (call > settings > default), and compositions defined in settings.yaml."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphunified_query.cli import main
from graphunified_query.core.settings.model import SettingsError, load_settings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.engine.request import RequestError
from graphunified_query.server.app import create_app
from tests.serving import loopback_client

DOCUMENT = Path(__file__).resolve().parents[1] / "fixtures" / "seed_settings.yaml"  # test_seed_settings.py


def test_a_variable_that_is_not_set_is_named() -> None:
    with pytest.raises(SettingsError, match=r"llm.api_key reads \$\{ANTHROPIC_API_KEY\}, which is not set"):
        load_settings(file=DOCUMENT, environ={"VOYAGE_API_KEY": "x"})


def test_a_literal_api_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("llm:\n  api_key: sk-ant-real-secret\n")
    with pytest.raises(
        SettingsError, match=r"llm\.api_key holds a literal secret; remove it and set ANTHROPIC_API_KEY"
    ):
        load_settings(tmp_path, environ={})


def test_a_misspelt_key_names_the_closest_valid_one(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("chunking:\n  sise: 256\n")
    with pytest.raises(SettingsError, match=r"chunking.sise: .*did you mean 'chunking.size'"):
        load_settings(tmp_path, environ={})
    (tmp_path / "settings.yaml").write_text("strategies:\n  hybrid:\n    alpah: 0.2\n")
    with pytest.raises(SettingsError, match=r"strategies.hybrid.alpah: .*did you mean 'alpha'"):
        load_settings(tmp_path, environ={})


@pytest.fixture
def home(built_home: Path, tmp_path: Path) -> Path:
    """The built two-hop home with its own settings.yaml (the index files are shared, read-only)."""
    copy = tmp_path / "home"
    shutil.copytree(built_home, copy, ignore=shutil.ignore_patterns("dagster"))
    return copy


def _settings(home: Path, text: str) -> None:
    (home / "settings.yaml").write_text("embedding:\n  provider: local\nllm:\n  provider: offline\n" + text)


def test_strategy_defaults_follow_call_settings_default(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _settings(
        home, "query:\n  default_strategy: hybrid\n  top_k: 4\nstrategies:\n  hybrid:\n    alpha: 0.2\n"
    )
    engine = QueryEngine.open(home, environ={})
    used = engine.ask("Who founded the Hale Mill?", retrieve_only=True).metadata["params_used"]
    assert used["top_k"] == {"value": 4, "source": "settings"}
    assert used["alpha"] == {"value": 0.2, "source": "settings"}
    assert used["rrf_k"] == {"value": 60, "source": "default"}
    call = engine.ask("Who founded the Hale Mill?", top_k=2, retrieve_only=True, alpha=0.9).metadata
    assert call["params_used"]["alpha"] == {"value": 0.9, "source": "call"} and call["strategy"] == "hybrid"
    assert call["context_count"] == 2


def test_a_composition_defined_in_settings_is_a_strategy_everywhere(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _settings(
        home,
        "strategies:\n  hybrid:\n    alpha: 1.0\n"
        "  mixed:\n    combine: [naive, graph_bfs]\n    mode: weighted\n    vector_weight: 0.7\n"
        "  reranked:\n    rerank: hybrid\n    reranker: local\n    over_retrieve_multiplier: 3\n",
    )
    engine = QueryEngine.open(home, environ={})
    mixed = engine.ask("Who founded the Hale Mill?", "mixed", 3, retrieve_only=True)
    assert mixed.strategy == "mixed" and 0 < len(mixed.contexts) <= 3
    assert mixed.metadata["params_used"]["mode"] == {"value": "weighted", "source": "settings"}
    reranked = engine.ask(
        "Who founded the Hale Mill?", "reranked", 3, retrieve_only=True, rerank_threshold=0.0
    )
    assert reranked.metadata["params_used"]["over_retrieve_multiplier"]["value"] == 3
    with pytest.raises(RequestError, match="did you mean 'mode'"):
        engine.ask("Who founded the Hale Mill?", "mixed", mdoe="concat")
    names = [s["name"] for s in loopback_client(create_app(engine)).get("/strategies").json()["strategies"]]
    assert {"mixed", "reranked"} <= set(names)
    code = main(
        [
            "ask",
            "Who founded the Hale Mill?",
            "--home",
            str(home),
            "--strategy",
            "mixed",
            "--retrieve-only",
            "--json",
        ]
    )
    assert code == 0 and json.loads(capsys.readouterr().out)["strategy"] == "mixed"


def test_a_composition_of_an_unknown_strategy_is_a_settings_error(home: Path) -> None:
    _settings(home, "strategies:\n  mixed:\n    combine: [naive, graph_bsf]\n")
    with pytest.raises(SettingsError, match=r"strategies\.mixed: 'graph_bsf' is not a strategy"):
        QueryEngine.open(home, environ={})


def test_query_generation_reaches_the_answer_call(home: Path) -> None:
    from tests.fakes.anthropic_server import FakeAnthropicServer, text

    with FakeAnthropicServer(
        lambda _: text("Thomas Hale founded it. [Source: hale-mill.md]"), api_key="k"
    ) as fake:
        (home / "settings.yaml").write_text(
            "embedding:\n  provider: local\n"
            f"llm:\n  provider: anthropic\n  base_url: {fake.base_url}\n  model: claude-sonnet-4-5\n"
            "query:\n  generation:\n    model: claude-haiku-4-5\n    max_tokens: 333\n    temperature: 0.4\n"
        )
        engine = QueryEngine.open(home, environ={"ANTHROPIC_API_KEY": "k"})
        response = engine.ask("Who founded the Hale Mill?", "naive", 3)
        sent = len(response.contexts) + len(response.expanded_contexts)
        assert response.answer and response.metadata["contexts_sent"] == sent > 0
        (answer_call,) = fake.bodies
        assert answer_call["model"] == "claude-haiku-4-5" and engine.llm.settings.model == "claude-sonnet-4-5"
        assert answer_call["max_tokens"] == 333 and answer_call["temperature"] == 0.4
