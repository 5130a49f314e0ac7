"""A strategy registered in two lines (its catalog entry, its retriever) appears in the CLI,
GET /strategies, eval and the router."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphunified_query.cli import main
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.evaluation.command import parse_strategies
from graphunified_query.evaluation.dataset import Question
from graphunified_query.evaluation.runner import run_questions
from graphunified_query.server.app import create_app
from graphunified_query.strategies.catalog import CATALOG, Entry
from graphunified_query.strategies.registry import STRATEGIES
from tests.query.toy_strategy import TOY
from tests.serving import loopback_client


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CATALOG, "toy", Entry(TOY.tier, TOY.summary))  # what --help lists
    monkeypatch.setitem(STRATEGIES, "toy", TOY)  # what runs


@pytest.mark.usefixtures("registered")
def test_a_registered_strategy_reaches_every_entry_point(
    built_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["ask", "--help"])
    assert "toy" in capsys.readouterr().out
    argv = ["ask", "Who founded the Hale Mill?", "--home", str(built_home), "--strategy", "toy"]
    assert main([*argv, "--top-k", "2", "--param", "stride=3", "--retrieve-only", "--json"]) == 0
    response = json.loads(capsys.readouterr().out)
    assert response["strategy"] == "toy" and len(response["contexts"]) <= 2
    assert response["metadata"]["params_used"]["stride"] == {"value": 3, "source": "call"}
    assert main([*argv, "--param", "strid=3"]) == 2
    assert "did you mean 'stride'?" in capsys.readouterr().err

    engine = QueryEngine.open(built_home, environ={})
    described = loopback_client(create_app(engine)).get("/strategies").json()
    toy = next(s for s in described["strategies"] if s["name"] == "toy")
    assert toy["tier"] == "core" and toy["params"]["stride"]["maximum"] == 10

    assert "toy" in parse_strategies("all") and parse_strategies("toy") == ("toy",)
    question = Question("q", "Who founded the Hale Mill?", ("Thomas Hale",), ("hale-mill.md",), None)
    runs = run_questions(engine, [question], ["toy"], ks=(2,), generate=False, params={"stride": 2})
    assert runs["toy"][0].contexts


def test_registry_defaults_match_the_retrievers_own() -> None:
    """The engine passes only chosen values, so a retriever's signature defaults must be the model's."""
    import inspect

    for name, strategy in STRATEGIES.items():
        if strategy.tier == "composable":
            continue  # configured from the model by the registry itself
        cls = strategy.build
        methods = [getattr(cls, m) for m in ("retrieve", "_retrieve") if hasattr(cls, m)]
        signature = {
            p.name: p.default
            for method in methods
            for p in inspect.signature(method).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }
        for param, field in strategy.params.model_fields.items():
            if param in signature:
                assert signature[param] == field.default, (name, param)


def test_the_docs_strategy_table_is_generated_from_the_registry() -> None:
    from graphunified_query.core.settings.reference import strategy_table

    page = (Path(__file__).resolve().parents[2] / "docs" / "strategies.md").read_text(encoding="utf-8")
    between = page.split("<!-- strategy-table:start -->\n", 1)[1].split("<!-- strategy-table:end -->", 1)[0]
    assert between == strategy_table(), (
        "regenerate docs/strategies.md's table with reference.strategy_table()"
    )
