"""The Claude extractor against the loopback Messages API: records, gleaning, salvage, cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphunified_assets.defs.assets.extraction import extractions_table
from graphunified_assets.lib.extraction.llm_extractor import LLMExtractor
from graphunified_assets.lib.extraction.records import ChunkText, Extractor
from graphunified_assets.lib.extraction.tool_turns import TOOL_NAME
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.providers.cost import BudgetExceeded, price_usd
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.settings.model import LLMSettings, Settings
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use

FIRST = {
    "entities": [
        {"name": "Thomas Hale", "type": "PERSON", "description": "Founder of the Hale Mill."},
        {"name": "Hale Mill", "type": "ORGANIZATION", "description": "A wool mill."},
        {"type": "PERSON", "description": "missing its name"},
    ],
    "relationships": [
        {
            "source": "Thomas Hale",
            "target": "Hale Mill",
            "type": "FOUNDED",
            "description": "d",
            "strength": 9,
            "keywords": ["Industry", "founding", "industry"],
        },
        {"source": "Thomas Hale", "target": "Eastfold", "type": "LIVED_IN", "strength": 99},
        {"source": "Thomas Hale", "target": "Somebody Else", "type": "KNEW", "strength": 3},
    ],
    "facts": [{"subject": "Thomas Hale", "predicate": "founded", "object": "Hale Mill"}],
}
GLEANED = {
    "entities": [
        {"name": "Eastfold", "type": "location", "description": "His birthplace."},
        {"name": "thomas hale", "type": "PERSON", "description": "Seen again: not a new entity."},
    ],
    "relationships": [
        {"source": "Thomas Hale", "target": "Eastfold", "type": "BORN_IN", "strength": 8},
        {"source": "Thomas Hale", "target": "Hale Mill", "type": "FOUNDED", "strength": 9},
    ],
    "facts": [{"subject": "Thomas Hale", "predicate": "was born in", "object": "Eastfold"}],
}
NOTHING = {"entities": [], "relationships": [], "facts": []}


def _responder(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A model whose first two replies are cut off at max_tokens: each asks for a gleaning turn."""
    turn = len(body["messages"]) // 2  # user; user, assistant, user; ...
    return tool_use(TOOL_NAME, [FIRST, GLEANED][turn] if turn < 2 else NOTHING, cut=turn < 2)


def _complete(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The same model when its first reply ends on its own."""
    return tool_use(TOOL_NAME, FIRST)


def _client(server: FakeAnthropicServer, tmp_path: Path, **settings: Any) -> ClaudeClient:
    config = LLMSettings(base_url=server.base_url, requests_per_minute=100_000, **settings)
    cache = LLMCache(tmp_path / "llm.sqlite")
    return ClaudeClient(config, Settings().prices, api_key="test-key", cache=cache, base_delay=0.001)


def _extractor(
    server: FakeAnthropicServer, tmp_path: Path, max_gleanings: int = 1, **settings: Any
) -> LLMExtractor:
    client = _client(server, tmp_path, **settings)
    return LLMExtractor(
        client, entity_types=["PERSON", "ORGANIZATION", "LOCATION"], max_gleanings=max_gleanings
    )


def test_extraction_with_gleaning_and_salvage(tmp_path: Path) -> None:
    with FakeAnthropicServer(_responder) as server:
        extractor: Extractor = _extractor(server, tmp_path)
        (result,) = extractor.extract([ChunkText("c1", "Thomas Hale, born in Eastfold, ...")])
    assert extractor.name == "anthropic:claude-sonnet-4-5"  # the label of the LLM that extracted
    assert len(server.requests) == 2  # the extraction and exactly one gleaning turn
    first, glean = server.bodies
    assert first["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert first["tools"][0]["name"] == TOOL_NAME and first["messages"][0]["content"].endswith(
        "Eastfold, ..."
    )
    # The gleaning turn replays the first one: the tool call, its result, then the glean prompt.
    assert glean["messages"][0] == first["messages"][0]
    assert glean["messages"][1]["role"] == "assistant"
    assert glean["messages"][1]["content"][0]["input"] == FIRST
    call_id = glean["messages"][1]["content"][0]["id"]
    result_block, prompt = glean["messages"][2]["content"]
    assert result_block == {"type": "tool_result", "tool_use_id": call_id, "content": "Recorded."}
    assert prompt["text"].startswith("MANY entities and relationships were missed in the last extraction.")
    # Merged and deduplicated by name/type and by source/target.
    assert [(e.name, e.type) for e in result.entities] == [
        ("Thomas Hale", "PERSON"),
        ("Hale Mill", "ORGANIZATION"),
        ("Eastfold", "LOCATION"),
    ]
    assert {(r.source, r.type, r.target) for r in result.relationships} == {
        ("Thomas Hale", "FOUNDED", "Hale Mill"),
        ("Thomas Hale", "BORN_IN", "Eastfold"),
    }
    # LightRAG's high-level keywords: asked for in the tool, kept (cleaned) on the relationship.
    relationship_item = first["tools"][0]["input_schema"]["properties"]["relationships"]["items"]
    assert "keywords" in relationship_item["required"]
    founded = next(r for r in result.relationships if r.type == "FOUNDED")
    assert founded.keywords == ("industry", "founding")
    stored = extractions_table([result], {"c1": "d1"}, extractor.name).to_pylist()[0]["relationships"]
    assert next(r for r in stored if r["type"] == "FOUNDED")["keywords"] == ["industry", "founding"]
    assert len(result.facts) == 2
    # Nameless entity, strength 99, and the edge to an entity never extracted: dropped and counted.
    assert result.dropped_records == 3
    assert result.extra["calls"] == 2 and result.extra["cached_calls"] == 0


def test_static_prompt_is_marked_for_and_long_enough_for_prompt_caching(tmp_path: Path) -> None:
    with FakeAnthropicServer(_responder) as server:
        _extractor(server, tmp_path, max_gleanings=0).extract(
            [ChunkText("c1", "one"), ChunkText("c2", "two")]
        )
    bodies = sorted(server.bodies, key=lambda b: b["messages"][0]["content"])
    (system,) = bodies[0]["system"]
    assert system["cache_control"] == {"type": "ephemeral"}
    assert "Allowed entity types: PERSON, ORGANIZATION, LOCATION" in system["text"]
    assert (
        "{entity_types}" not in system["text"] and '"relationships": [' in system["text"]
    )  # worked examples
    # Claude caches nothing below 1024 prompt tokens (Sonnet 4.5, Opus 4.1); ~4 characters per token.
    assert (len(system["text"]) + len(json.dumps(bodies[0]["tools"]))) // 4 >= 1500
    assert bodies[0]["system"] == bodies[1]["system"] and bodies[0]["tools"] == bodies[1]["tools"]


def test_counters_in_extra_match_the_ledger(tmp_path: Path) -> None:
    with FakeAnthropicServer(_responder) as server:
        extractor = _extractor(server, tmp_path)
        results = extractor.extract([ChunkText(f"c{i}", f"chunk number {i}") for i in range(6)])
    assert [r.chunk_id for r in results] == [f"c{i}" for i in range(6)]  # input order kept
    ledger = extractor.client.ledger
    assert sum(r.extra["calls"] for r in results) == ledger.calls == len(server.requests) == 12
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        assert sum(r.extra[name] for r in results) == getattr(ledger.usage, name)
    assert ledger.usage.cache_read_tokens > 0  # the shared static prompt is read from the prompt cache
    assert ledger.dollars == pytest.approx(price_usd(ledger.usage, Settings().prices["claude-sonnet-4-5"]))


def test_gleaning_stops_when_a_turn_finds_nothing_new(tmp_path: Path) -> None:
    with FakeAnthropicServer(_responder) as server:
        (result,) = _extractor(server, tmp_path, max_gleanings=4).extract([ChunkText("c1", "text")])
    assert len(server.requests) == 3  # extraction, a productive gleaning, an empty one: then stop
    assert len(result.entities) == 3


def test_a_reply_that_ended_on_its_own_is_not_gleaned(tmp_path: Path) -> None:
    # Gleaning every chunk made half of all indexing calls; only a reply cut off at max_tokens
    # (certainly incomplete) gets another turn.
    with FakeAnthropicServer(_complete) as server:
        results = _extractor(server, tmp_path, max_gleanings=2).extract(
            [ChunkText("c1", "one"), ChunkText("c2", "two")]
        )
    assert len(server.requests) == 2  # one call per chunk
    assert all(r.extra["calls"] == 1 for r in results) and len(results[0].entities) == 2


def test_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    chunks = [ChunkText("c1", "one"), ChunkText("c2", "two")]
    with FakeAnthropicServer(_responder) as server:
        first = _extractor(server, tmp_path).extract(chunks)
        sent = len(server.requests)
        again = _extractor(server, tmp_path)
        rerun = again.extract(chunks)
    assert sent == 4 and len(server.requests) == 4  # zero requests on the rerun
    assert again.client.ledger.calls == 0 and again.client.ledger.cached_calls == 4
    assert [r.entities for r in rerun] == [r.entities for r in first]
    assert all(r.extra["cached_calls"] == 2 and r.extra["calls"] == 0 for r in rerun)


def test_missing_tool_call_is_retried_once_then_counted(tmp_path: Path) -> None:
    with FakeAnthropicServer(lambda _: text("I cannot use tools.")) as server:
        (result,) = _extractor(server, tmp_path, max_gleanings=1).extract([ChunkText("c1", "text")])
    assert len(server.requests) == 2  # no gleaning after a failed extraction
    retry = server.bodies[1]["messages"]
    assert retry[1] == {"role": "assistant", "content": [{"type": "text", "text": "I cannot use tools."}]}
    assert "Call the record_extraction tool" in retry[2]["content"][-1]["text"]
    assert result.entities == () and result.relationships == () and result.facts == ()
    assert result.dropped_records == 1 and result.extra["failed_turns"] == 1


def test_non_object_tool_input_is_retried_and_then_salvaged(tmp_path: Path) -> None:
    with FakeAnthropicServer(_responder) as server:
        server.enqueue(tool_use(TOOL_NAME, ["not", "an", "object"]))
        server.enqueue(tool_use(TOOL_NAME, FIRST))
        (result,) = _extractor(server, tmp_path, max_gleanings=0).extract([ChunkText("c1", "text")])
    assert len(server.requests) == 2
    failed_call, answer = server.bodies[1]["messages"][1:]
    # The retry answers the bad call with an error result, as the API requires for every tool_use.
    assert answer["content"][0]["tool_use_id"] == failed_call["content"][0]["id"]
    assert answer["content"][0]["is_error"] is True
    assert {e.name for e in result.entities} == {"Thomas Hale", "Hale Mill"}
    assert result.extra["failed_turns"] == 0 and result.extra["calls"] == 2


def test_budget_cap_stops_extraction_before_exceeding(tmp_path: Path) -> None:
    chunks = [ChunkText(f"c{i}", f"chunk {i}") for i in range(20)]
    with FakeAnthropicServer(_responder) as server:
        extractor = _extractor(
            server, tmp_path, max_gleanings=0, budget_usd=0.05, max_tokens=1000, concurrency=1
        )
        with pytest.raises(BudgetExceeded, match=r"llm\.budget_usd"):
            extractor.extract(chunks)
    assert 0 < len(server.requests) == extractor.client.ledger.calls < 20
    assert extractor.client.ledger.dollars <= 0.05


def test_batches_api_mode(tmp_path: Path) -> None:
    chunks = [ChunkText("c1", "one"), ChunkText("c2", "two"), ChunkText("c3", "three")]
    with FakeAnthropicServer(_responder) as server:
        server.errored_in_batch.add("r1")  # one result errors inside the first batch
        settings = LLMSettings(base_url=server.base_url, use_batches=True, batch_poll_seconds=0.01)
        client = ClaudeClient(
            settings, Settings().prices, api_key="test-key", cache=LLMCache(tmp_path / "c.sqlite")
        )
        extractor = LLMExtractor(client, entity_types=["PERSON"], max_gleanings=1)
        results = extractor.extract(chunks)
        posts = [(h, b) for h, b in server.requests if "requests" in b]
        singles = [b for _, b in server.requests if "messages" in b]
    # One batch per turn (extraction, gleaning); the errored request fell back to a single call.
    assert len(server.batches) == 2 and len(posts) == 2
    assert [len(b["requests"]) for _, b in posts] == [3, 3]
    assert [len(b["messages"]) for b in singles] == [1, 3]  # chunk "two", turn by turn
    assert singles[0]["messages"][0]["content"] == "Text:\n\ntwo"
    assert all({e.name for e in r.entities} == {"Thomas Hale", "Hale Mill", "Eastfold"} for r in results)
    assert client.ledger.calls == 6
    # Batched calls are billed at half price, the two fallbacks at full price.
    assert client.ledger.dollars < price_usd(client.ledger.usage, Settings().prices["claude-sonnet-4-5"])
    assert posts[0][1]["requests"][0]["params"]["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
