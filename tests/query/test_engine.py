"""The engine end to end: routing, generation, metadata, Claude over the wire, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphunified_query.cli import main
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.settings.model import LLMSettings
from graphunified_query.engine.query_engine import QueryEngine
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use

KEYS = {"answer", "strategy", "contexts", "expanded_contexts", "metadata"}
CONTEXT_KEYS = {"text", "score", "source", "chunk_id", "document_id", "metadata"}
METADATA_KEYS = {
    "strategy",
    "latency_ms",
    "retrieval_latency_ms",
    "tokens_used",
    "cost_usd",
    "llm_calls",
    "context_count",
}


def test_offline_answer_cites_its_source_and_reports_metadata(engine: QueryEngine) -> None:
    response = engine.ask("Who founded the Hale Mill?", "hybrid")
    assert "Thomas Hale" in (response.answer or "")
    assert "[Source: thomas-hale.md > Thomas Hale]" in (response.answer or "") or "[Source: hale-mill.md" in (
        response.answer or ""
    )
    meta = response.metadata
    assert set(meta) >= METADATA_KEYS and meta["llm_calls"] == 0 and meta["cost_usd"] == 0
    assert meta["latency_ms"] >= meta["retrieval_latency_ms"] > 0 and meta["context_count"] >= 1


def test_auto_routes_and_says_why_explicit_strategy_wins(engine: QueryEngine) -> None:
    routed = engine.ask("What are the main themes across all these documents?", retrieve_only=True)
    assert routed.strategy == "graphrag_global" and routed.metadata["router_reason"]
    assert routed.answer is None
    explicit = engine.ask("What are the main themes across all these documents?", "naive", retrieve_only=True)
    assert explicit.strategy == "naive" and "router_reason" not in explicit.metadata


def test_unsupported_question_says_it_does_not_know(engine: QueryEngine) -> None:
    response = engine.ask("What is the airspeed of an unladen swallow?", "naive")
    assert response.metadata["supported"] is False and "don't know" in (response.answer or "")


def _claude_engine(engine: QueryEngine, server: FakeAnthropicServer) -> QueryEngine:
    settings = LLMSettings(base_url=server.base_url, max_retries=1, requests_per_minute=10_000)
    client = ClaudeClient(settings, engine.settings.prices, api_key="test-key", base_delay=0.001)
    return QueryEngine(engine.snapshot, engine.settings, engine.embedder, llm=client)


def test_global_map_reduce_with_claude(engine: QueryEngine) -> None:
    def respond(body: dict[str, Any]) -> Any:
        if body.get("tools") and body["tools"][0]["name"] == "map_points":
            report = body["messages"][0]["content"]
            if "Hale" in report:
                return tool_use(
                    "map_points", {"points": [{"description": "The Hale family ran a mill.", "score": 80}]}
                )
            return tool_use("map_points", {"points": [{"description": "Irrelevant.", "score": 0}]})
        return text("The collection is about a mill [Source: Community report].")

    with FakeAnthropicServer(respond) as server:
        claude = _claude_engine(engine, server)
        # A specific question keeps similarity selection, where points scored 0 are dropped.
        response = claude.ask("What did the Hale family run?", "graphrag_global", scope="specific")
        maps = [b for b in server.bodies if b.get("tools")]
        mapped = response.metadata["retrieval_communities_mapped"]
        assert len(maps) == mapped >= 2
        assert all(b["system"][0]["cache_control"] == {"type": "ephemeral"} for b in maps)
        assert [c.text for c in response.contexts] == ["The Hale family ran a mill."]  # score 0 dropped
        assert response.answer == "The collection is about a mill [Source: Community report]."
        assert response.metadata["llm_calls"] == mapped + 1 and response.metadata["cost_usd"] > 0
        assert response.metadata["tokens_used"] > 0
        reduce_body = server.bodies[-1]["messages"][0]["content"]
        assert "The Hale family ran a mill." in reduce_body


def test_cli_json_shape_and_compare(
    built_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert (
        main(["ask", "Who founded the Hale Mill?", "--home", str(built_home), "--json", "--top-k", "3"]) == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == KEYS and payload["strategy"]
    assert len(payload["contexts"]) <= 3 and all(set(c) == CONTEXT_KEYS for c in payload["contexts"])
    assert set(payload["metadata"]) >= METADATA_KEYS
    assert (
        main(
            [
                "ask",
                "Who founded the Hale Mill?",
                "--home",
                str(built_home),
                "--strategy",
                "lightrag",
                "--retrieve-only",
                "--param",
                "mode=local",
            ]
        )
        == 0
    )
    human = capsys.readouterr().out
    assert human.startswith("strategy: lightrag") and "Sources:\n[1] " in human
    assert main(["compare", "Who founded the Hale Mill?", "--home", str(built_home), "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert list(compared) == ["naive", "hybrid", "graphrag_local", "graphrag_global", "lightrag", "hipporag"]


def test_cli_names_the_build_command_when_there_is_no_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "anything", "--home", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "No index" in error and f"python -m graphunified_assets index --home {tmp_path}" in error
