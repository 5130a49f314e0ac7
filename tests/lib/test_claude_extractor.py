"""The Claude extractor against the loopback Messages API: records, gleaning, salvage, cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphunified_assets.lib.extraction.claude_extractor import TOOL_NAME, ClaudeExtractor
from graphunified_assets.lib.extraction.records import ChunkText
from graphunified_query.providers.claude import ClaudeClient
from graphunified_query.providers.cost import price_usd
from graphunified_query.providers.llm_cache import LLMCache
from graphunified_query.settings import LLMSettings, Settings
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
        },
        {"source": "Thomas Hale", "target": "Hale Mill", "type": "OWNED", "strength": 99},
        {"source": "Thomas Hale", "target": "Somebody Else", "type": "KNEW", "strength": 3},
    ],
    "facts": [{"subject": "Thomas Hale", "predicate": "founded", "object": "Hale Mill"}],
}
GLEANED = {
    "entities": [{"name": "Eastfold", "type": "LOCATION", "description": "His birthplace."}],
    "relationships": [{"source": "Thomas Hale", "target": "Eastfold", "type": "BORN_IN", "strength": 8}],
    "facts": [{"subject": "Thomas Hale", "predicate": "was born in", "object": "Eastfold"}],
}


def _responder(body: dict[str, Any]) -> list[dict[str, Any]]:
    return tool_use(TOOL_NAME, GLEANED if len(body["messages"]) > 1 else FIRST)


def _extractor(server: FakeAnthropicServer, tmp_path: Path, max_gleanings: int = 1) -> ClaudeExtractor:
    settings = LLMSettings(base_url=server.base_url)
    client = ClaudeClient(
        settings,
        Settings().prices,
        api_key="test-key",
        cache=LLMCache(tmp_path / "llm.sqlite"),
        base_delay=0.01,
    )
    return ClaudeExtractor(
        client, entity_types=["PERSON", "ORGANIZATION", "LOCATION"], max_gleanings=max_gleanings
    )


def test_extraction_with_gleaning_and_salvage(tmp_path: Path) -> None:
    with FakeAnthropicServer(_responder) as server:
        (result,) = _extractor(server, tmp_path).extract(
            [ChunkText("c1", "Thomas Hale, born in Eastfold, ...")]
        )
    assert len(server.requests) == 2  # the extraction and one gleaning turn
    first, glean = server.bodies
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "PERSON, ORGANIZATION, LOCATION" in first["system"][0]["text"]
    assert first["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert glean["messages"][1]["role"] == "assistant"  # the previous turn is replayed
    assert glean["messages"][2]["content"][0]["type"] == "tool_result"
    assert "MANY entities" in glean["messages"][2]["content"][1]["text"]
    assert {e.name for e in result.entities} == {"Thomas Hale", "Hale Mill", "Eastfold"}
    assert {(r.source, r.type, r.target) for r in result.relationships} == {
        ("Thomas Hale", "FOUNDED", "Hale Mill"),
        ("Thomas Hale", "BORN_IN", "Eastfold"),
    }
    assert len(result.facts) == 2
    # Nameless entity, strength 99, and the edge to an unextracted entity: dropped and counted.
    assert result.dropped_records == 3


def test_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    chunks = [ChunkText("c1", "one"), ChunkText("c2", "two")]
    with FakeAnthropicServer(_responder) as server:
        _extractor(server, tmp_path).extract(chunks)
        sent = len(server.requests)
        again = _extractor(server, tmp_path)
        again.extract(chunks)
    assert sent == 4 and len(server.requests) == 4
    assert again.client.ledger.calls == 0 and again.client.ledger.cached_calls == 4


def test_missing_tool_call_is_retried_once_then_counted(tmp_path: Path) -> None:
    with FakeAnthropicServer(lambda _: text("I cannot use tools.")) as server:
        (result,) = _extractor(server, tmp_path, max_gleanings=0).extract([ChunkText("c1", "text")])
    assert len(server.requests) == 2
    assert "Call the record_extraction tool" in server.bodies[1]["messages"][-1]["content"]
    assert result.entities == () and result.dropped_records == 1


def test_batches_api_mode(tmp_path: Path) -> None:
    chunks = [ChunkText("c1", "one"), ChunkText("c2", "two"), ChunkText("c3", "three")]
    with FakeAnthropicServer(_responder) as server:
        server.errored_in_batch.add("r1")  # one result errors inside the first batch
        settings = LLMSettings(base_url=server.base_url, use_batches=True, batch_poll_seconds=0.01)
        client = ClaudeClient(
            settings, Settings().prices, api_key="test-key", cache=LLMCache(tmp_path / "c.sqlite")
        )
        extractor = ClaudeExtractor(client, entity_types=["PERSON"], max_gleanings=1)
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
