"""The Claude client over a real socket: retries, cache, budget, accounting, no leaked key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graphunified_query.providers.claude import ClaudeClient, LLMError
from graphunified_query.providers.cost import BudgetExceeded, CostLedger, Usage, estimate_cost, price_usd
from graphunified_query.providers.llm_cache import LLMCache
from graphunified_query.settings import LLMSettings, Settings
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use

PRICES = Settings().prices
SYSTEM = [{"type": "text", "text": "Long static instructions.", "cache_control": {"type": "ephemeral"}}]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(
        lambda body: tool_use("record", {"echo": body["messages"][-1]["content"]})
    ) as fake:
        yield fake


def _client(server: FakeAnthropicServer, tmp_path: Path | None = None, **settings: object) -> ClaudeClient:
    config = LLMSettings(base_url=server.base_url, max_retries=3, **settings)  # type: ignore[arg-type]
    cache = LLMCache(tmp_path / "llm.sqlite") if tmp_path else None
    return ClaudeClient(config, PRICES, api_key="test-key", cache=cache, base_delay=0.01)


def _ask(client: ClaudeClient, question: str = "hello") -> object:
    return client.create(system=SYSTEM, messages=[{"role": "user", "content": question}])


def test_round_trip_with_tool_output_and_prompt_caching(server: FakeAnthropicServer) -> None:
    client = _client(server)
    response = client.create(
        system=SYSTEM,
        messages=[{"role": "user", "content": "hello"}],
        tools=[{"name": "record", "description": "d", "input_schema": {"type": "object"}}],
        tool_choice={"type": "tool", "name": "record"},
    )
    assert response.tool_input("record") == {"echo": "hello"}
    headers, body = server.requests[0]
    assert headers["authorization"] == "Bearer test-key"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tool_choice"] == {"type": "tool", "name": "record"}
    assert response.usage.cache_read_tokens == len(SYSTEM[0]["text"]) // 4
    assert client.ledger.calls == 1
    assert client.ledger.dollars == pytest.approx(price_usd(response.usage, PRICES["claude-sonnet-4-5"]))


@pytest.mark.parametrize("status", [429, 500, 529])
def test_retryable_faults_then_success(server: FakeAnthropicServer, status: int) -> None:
    server.fail_next(status, times=2, retry_after="0" if status == 429 else None)
    assert (
        _client(server).create(system="s", messages=[{"role": "user", "content": "x"}]).tool_input("record")
    )
    assert len(server.requests) == 3


def test_gives_up_after_max_retries_without_leaking_the_key(server: FakeAnthropicServer) -> None:
    server.fail_next(500, times=10)
    with pytest.raises(LLMError) as error:
        _ask(_client(server))
    assert len(server.requests) == 4  # 1 + max_retries
    assert "test-key" not in str(error.value)


def test_client_errors_are_not_retried(server: FakeAnthropicServer) -> None:
    server.fail_next(400)
    with pytest.raises(LLMError, match="refused"):
        _ask(_client(server))
    assert len(server.requests) == 1


def test_cache_prevents_repeated_calls(server: FakeAnthropicServer, tmp_path: Path) -> None:
    first = _ask(_client(server, tmp_path), "same question")
    again_client = _client(server, tmp_path)  # a resumed run: new process, same cache file
    again = _ask(again_client, "same question")
    assert len(server.requests) == 1
    assert again.cached and again.content == first.content  # type: ignore[attr-defined]
    assert again_client.ledger.calls == 0 and again_client.ledger.cached_calls == 1
    _ask(again_client, "another question")
    assert len(server.requests) == 2


def test_budget_cap_stops_before_sending(server: FakeAnthropicServer) -> None:
    client = _client(server, budget_usd=0.02)
    with pytest.raises(BudgetExceeded, match=r"llm\.budget_usd"):
        for i in range(100):
            _ask(client, f"question {i}")
    assert client.ledger.dollars <= 0.02
    assert len(server.requests) == client.ledger.calls


def test_unknown_model_price_is_a_clear_error() -> None:
    with pytest.raises(LLMError, match="prices"):
        ClaudeClient(LLMSettings(model="claude-unknown"), PRICES, api_key="k")


def test_cost_arithmetic() -> None:
    price = PRICES["claude-sonnet-4-5"]
    usage = Usage(1_000_000, 100_000, 500_000, 0)
    assert price_usd(usage, price) == pytest.approx(3.0 + 1.5 + 0.15)
    assert estimate_cost(10, 2000, 500, price) == pytest.approx(10 * (2000 * 3 + 500 * 15) / 1e6)
    ledger = CostLedger(budget_usd=1.0)
    ledger.record(usage, 0.9, cached=False)
    with pytest.raises(BudgetExceeded):
        ledger.reserve(0.2)


def test_text_content() -> None:
    with FakeAnthropicServer(lambda _: text("An answer.")) as fake:
        assert (
            _client(fake).create(system="s", messages=[{"role": "user", "content": "q"}]).text == "An answer."
        )
