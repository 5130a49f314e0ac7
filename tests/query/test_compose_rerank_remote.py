"""LLMReranker and VoyageReranker over loopback servers speaking the providers' wire formats."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.providers.json_repair import loads_lenient
from graphunified_query.core.settings.model import LLMSettings, Settings
from graphunified_query.strategies.rerank.llm import TOOL_NAME, LLMReranker, parse_scores
from graphunified_query.strategies.rerank.registry import make_reranker
from graphunified_query.strategies.rerank.rerank import RerankError, RerankingRetriever, RerankParams
from graphunified_query.strategies.rerank.voyage import VoyageReranker
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use
from tests.fakes.voyage_server import FakeVoyageServer
from tests.query.compose_support import StaticRetriever, chunk, make_context

KEY = "sk-ant-test-SECRET"
PASSAGES = ["Ada Whitlock was born in Carrowby.", "Carrowby lies on the River Wear.", "The mill wove wool."]


def _graded(*pairs: tuple[int, float]) -> list[dict[str, Any]]:
    return tool_use(TOOL_NAME, {"scores": [{"index": i, "score": s} for i, s in pairs]})


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(lambda _: _graded((0, 9), (1, 6), (2, 0)), api_key=KEY) as fake:
        yield fake


def _reranker(server: FakeAnthropicServer, **kwargs: Any) -> LLMReranker:
    config = LLMSettings(
        base_url=server.base_url, max_retries=1, requests_per_minute=100_000, tokens_per_minute=10**9
    )
    return LLMReranker(ClaudeClient(config, Settings().prices, api_key=KEY, base_delay=0.001), **kwargs)


def test_claude_grades_every_passage_in_one_structured_call(server: FakeAnthropicServer) -> None:
    outcome = _reranker(server).score_with_cost("Where was Ada Whitlock born?", PASSAGES)
    assert outcome.scores == [0.9, 0.6, 0.0]  # 0-10 grades scaled to [0, 1]
    assert outcome.llm_calls == 1 and outcome.cost_usd > 0 and outcome.usage.output_tokens > 0
    (body,) = server.bodies
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert "Score every passage from 0 to 10" in body["system"][0]["text"]  # prompts/rerank.md
    prompt = body["messages"][0]["content"]
    assert "Question: Where was Ada Whitlock born?" in prompt
    assert all(f'<passage index="{i}">\n{p}' in prompt for i, p in enumerate(PASSAGES))


def test_malformed_json_text_reply_is_repaired_without_another_call(server: FakeAnthropicServer) -> None:
    items = '{"index": 0, "score": 8}, {"index": 1, "score": "3"}, {"index": 2, "score": 11},'
    server.enqueue(text(f'Here you go:\n```json\n{{"scores": [{items}]}}\n```'))
    assert _reranker(server).score("q", PASSAGES) == [0.8, 0.3, 1.0]  # trailing comma; "3"; 11 clamped
    assert len(server.requests) == 1


def test_scores_sent_as_a_json_string_inside_the_tool_input_are_read(server: FakeAnthropicServer) -> None:
    server.enqueue(
        tool_use(
            TOOL_NAME, {"scores": json.dumps([{"index": 1, "score": 5}, {"index": 0, "score": 2}]) + ", {"}
        )
    )
    server.enqueue(_graded((2, 4)))
    assert _reranker(server).score("q", PASSAGES) == [0.2, 0.5, 0.4]  # passage 2 was missing: asked again


def test_unreadable_reply_is_retried_with_the_problem_as_a_tool_error(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_use(TOOL_NAME, {"scores": "I think passage one is best"}))
    outcome = _reranker(server).score_with_cost("q", PASSAGES)
    assert outcome.scores == [0.9, 0.6, 0.0] and outcome.llm_calls == 2
    retry = server.bodies[1]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    error, ask = retry[2]["content"]
    assert error["type"] == "tool_result" and error["is_error"] is True
    assert error["tool_use_id"] == retry[1]["content"][0]["id"]
    assert "no JSON" in error["content"] and TOOL_NAME in ask["text"]


def test_passages_still_ungraded_after_the_last_attempt_score_zero(
    server: FakeAnthropicServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.enqueue(text("no idea"))
    server.enqueue(_graded((0, 7)))
    with caplog.at_level(logging.WARNING):
        outcome = _reranker(server, max_attempts=2).score_with_cost("q", PASSAGES)
    assert outcome.scores == [0.7, 0.0, 0.0] and outcome.metadata == {"unscored": [1, 2]}
    assert "no score for passages [1, 2]" in caplog.text


def test_claude_reranker_inside_a_reranking_retriever(server: FakeAnthropicServer) -> None:
    context = make_context([("c1", "d.md", "unused")])
    inner = StaticRetriever(context, "inner", [chunk(f"p{i}", 1 - i / 10, p) for i, p in enumerate(PASSAGES)])
    retrieval = RerankingRetriever(inner, _reranker(server), RerankParams(rerank_threshold=0.5)).retrieve(
        "q", 2
    )
    assert [r.text for r in retrieval.results] == PASSAGES[:2]
    assert retrieval.llm_calls == 1 and retrieval.cost_usd > 0


def test_parse_scores_accepts_the_shapes_claude_sends() -> None:
    assert parse_scores([3, 4], 2) == {0: 3.0, 1: 4.0}
    assert parse_scores({"0": 1, "1": "2"}, 2) == {0: 1.0, 1: 2.0}
    assert parse_scores({"scores": [{"id": 1, "relevance": 6}, {"index": 9, "score": 1}]}, 2) == {1: 6.0}
    with pytest.raises(ValueError):
        parse_scores([1, 2, 3], 2)  # bare scores must cover every passage
    assert loads_lenient('{"scores": [{"index": 0, "score": 7}, {"index": 1, "sc') == {
        "scores": [{"index": 0, "score": 7}]
    }  # cut off by max_tokens: kept up to the last complete item


def test_voyage_reranker_scores_every_passage_in_input_order() -> None:
    documents = ["wool cloth", "the river harrow floods eastfold", "harrow valley"]
    with FakeVoyageServer() as server:
        reranker = VoyageReranker("test-key", base_url=server.base_url)
        outcome = reranker.score_with_cost("river harrow", documents)
    # The server answers best first; the scores come back in the documents' order.
    assert outcome.scores == [0.0, 1.0, 0.5]
    assert outcome.metadata["rerank_tokens"] > 0
    (headers, body) = server.requests[0]
    assert headers["authorization"] == "Bearer test-key"
    assert (
        body["model"] == "rerank-2.5" and body["query"] == "river harrow" and body["documents"] == documents
    )
    assert body.get("top_k") is None


def test_voyage_reranker_retries_transient_errors_and_masks_the_key() -> None:
    with FakeVoyageServer() as server:
        server.fail_next(429, retry_after="0")
        reranker = VoyageReranker("test-key", base_url=server.base_url, base_delay=0.001)
        assert reranker.score("harrow", ["harrow", "mill"]) == [1.0, 0.0]
        assert len(server.requests) == 2
        wrong = VoyageReranker("not-the-key", base_url=server.base_url)
        with pytest.raises(RerankError, match="refused") as error:
            wrong.score("harrow", ["harrow"])
        assert "not-the-key" not in str(error.value)


def test_voyage_reranker_by_name_needs_the_key_and_reads_the_endpoint() -> None:
    context = make_context([("c1", "d1", "harrow"), ("c2", "d1", "mill")])
    with pytest.raises(ValueError, match="reranker 'voyage' needs the VOYAGE_API_KEY environment variable"):
        make_reranker("voyage", context, environ={})
    with FakeVoyageServer() as server:
        environ = {"VOYAGE_API_KEY": "test-key", "VOYAGE_BASE_URL": server.base_url}
        reranker = make_reranker("voyage", context, environ=environ)
        assert isinstance(reranker, VoyageReranker)
        assert reranker.score("harrow", ["harrow", "mill"]) == [1.0, 0.0]
