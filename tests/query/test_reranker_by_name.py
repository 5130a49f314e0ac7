"""A reranker chosen by name reaches its reranker through the engine, as `--param reranker=...`
does: `reranker=llm` once ended in ModuleNotFoundError (a lazy import of a renamed module)."""

from __future__ import annotations

import re
from typing import Any

from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.settings.model import LLMSettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.rerank.llm import TOOL_NAME
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use

QUESTION = "Who founded the Hale Mill?"


def test_reranker_llm_reranks_through_the_engine_with_claude(engine: QueryEngine) -> None:
    def grade(body: dict[str, Any]) -> Any:
        prompt = body["messages"][0]["content"]
        passages = re.findall(r'<passage index="(\d+)">\n(.*?)\n</passage>', prompt, re.S)
        # Claude's grades: the passages naming the founder first, the rest 1.
        return tool_use(
            TOOL_NAME,
            {"scores": [{"index": int(i), "score": 9 if "founded" in p else 1} for i, p in passages]},
        )

    with FakeAnthropicServer(grade) as server:
        config = LLMSettings(base_url=server.base_url, max_retries=1, requests_per_minute=10_000)
        client = ClaudeClient(config, engine.settings.prices, api_key="test-key", base_delay=0.001)
        claude = QueryEngine(engine.snapshot, engine.settings, engine.embedder, llm=client)
        retrieval, meta = claude.retrieve(QUESTION, "expanded", 3, reranker="llm")
        asked = [b for _, b in server.requests if b.get("tools", [{}])[0].get("name") == TOOL_NAME]
    assert asked, "the LLM reranker was never called"
    assert retrieval.results and "founded" in retrieval.results[0].text
    assert meta["llm_calls"] >= 1
