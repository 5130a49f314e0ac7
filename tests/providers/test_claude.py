"""The Claude client over a real socket: retries, cache, budget, accounting, no leaked key."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from graphunified_query.core.providers.claude import ClaudeClient, ClaudeResponse, LLMError
from graphunified_query.core.providers.cost import BudgetExceeded, CostLedger, Usage, estimate_cost, price_usd
from graphunified_query.core.providers.llm_cache import LLMCache, request_key
from graphunified_query.core.settings.model import LLMSettings, Settings
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use

PRICES = Settings().prices
SONNET = PRICES["claude-sonnet-4-5"]
KEY = "sk-ant-test-0123456789-SECRET"
SYSTEM = [{"type": "text", "text": "Long static instructions. " * 8, "cache_control": {"type": "ephemeral"}}]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(
        lambda body: tool_use("record", {"echo": body["messages"][-1]["content"]}), api_key=KEY
    ) as fake:
        yield fake


def _client(server: FakeAnthropicServer, tmp_path: Path | None = None, **settings: Any) -> ClaudeClient:
    limits = {"requests_per_minute": 100_000, "tokens_per_minute": 10**9}  # throttling has its own test
    config = LLMSettings(**{"base_url": server.base_url, "max_retries": 3, **limits, **settings})
    cache = LLMCache(tmp_path / "llm.sqlite") if tmp_path else None
    return ClaudeClient(config, PRICES, api_key=KEY, cache=cache, base_delay=0.001)


def _ask(client: ClaudeClient, question: str = "hello") -> ClaudeResponse:
    return client.create(system=SYSTEM, messages=[{"role": "user", "content": question}])


def test_round_trip_with_tool_output_and_prompt_caching(server: FakeAnthropicServer) -> None:
    client = _client(server)
    tools = [{"name": "record", "description": "d", "input_schema": {"type": "object"}}]
    response = client.create(
        system=SYSTEM,
        messages=[{"role": "user", "content": "hello"}],
        tools=tools,
        tool_choice={"type": "tool", "name": "record"},
    )
    assert response.tool_input("record") == {"echo": "hello"} and response.stop_reason == "tool_use"
    assert response.content[0]["id"].startswith("toolu_") and not response.cached
    headers, body = server.requests[0]
    assert headers["authorization"] == f"Bearer {KEY}" and headers["anthropic-version"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tool_choice"] == {"type": "tool", "name": "record"}
    assert body["temperature"] == 0.0 and body["max_tokens"] == 4096 and body["model"] == "claude-sonnet-4-5"
    # The API writes the marked prefix to its prompt cache on first sight and reads it after.
    assert response.usage.cache_write_tokens > 0 and response.usage.cache_read_tokens == 0
    again = client.create(system=SYSTEM, messages=[{"role": "user", "content": "again"}], tools=tools)
    assert again.usage.cache_read_tokens == response.usage.cache_write_tokens
    assert client.ledger.calls == 2


def test_ledger_dollars_match_hand_computed_price(server: FakeAnthropicServer) -> None:
    usage = {
        "input_tokens": 1000,
        "output_tokens": 500,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 4000,
    }
    server.enqueue(text("one"), usage=usage)
    server.enqueue(text("two"), usage=usage)
    client = _client(server)
    assert _ask(client).usage == Usage(1000, 500, 4000, 2000)
    _ask(client, "second")
    # Sonnet 4.5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens.
    one_call = (1000 * 3.0 + 500 * 15.0 + 4000 * 0.30 + 2000 * 3.75) / 1_000_000
    assert one_call == pytest.approx(0.0192)
    assert client.ledger.dollars == pytest.approx(2 * one_call)
    assert client.ledger.usage == Usage(2000, 1000, 8000, 4000)
    assert client.ledger.as_metadata()["cost_usd"] == pytest.approx(0.0384)


def test_429_honours_retry_after_then_succeeds(server: FakeAnthropicServer) -> None:
    server.fail_next(429, retry_after="0.4")
    started = time.monotonic()
    assert _ask(_client(server)).tool_input("record") == {"echo": "hello"}
    assert time.monotonic() - started >= 0.4  # the backoff alone would be ~1 ms
    assert len(server.requests) == 2


def test_529_overloaded_then_succeeds(server: FakeAnthropicServer) -> None:
    server.fail_next(529, times=2)
    client = _client(server)
    assert _ask(client).tool_input("record") == {"echo": "hello"}
    assert len(server.requests) == 3 and client.ledger.calls == 1


def test_timeout_is_retried(tmp_path: Path) -> None:
    first = threading.Event()

    def slow_once(body: dict[str, Any]) -> list[dict[str, Any]]:
        if not first.is_set():
            first.set()
            time.sleep(1.0)  # longer than the client's timeout
        return text("late but fine")

    with FakeAnthropicServer(slow_once, api_key=KEY) as fake:
        client = _client(fake, timeout_seconds=0.3)
        assert _ask(client).text == "late but fine"
        assert len(fake.requests) == 2


def test_persistent_500_gives_up_after_max_retries_plus_one(server: FakeAnthropicServer) -> None:
    server.fail_next(500, times=10)
    with pytest.raises(LLMError, match=r"after 4 attempts.*HTTP 500") as error:
        _ask(_client(server))
    assert len(server.requests) == 4  # 1 + llm.max_retries
    assert KEY not in str(error.value) and error.value.__cause__ is None


def test_the_key_never_reaches_an_error_message(server: FakeAnthropicServer) -> None:
    server.fail_next(400, message=f"the key {KEY} is not allowed here")  # a server echoing the key
    with pytest.raises(LLMError, match=r"refused.*HTTP 400.*\[redacted\]") as error:
        _ask(_client(server))
    assert KEY not in str(error.value) and KEY not in repr(error.value)
    assert len(server.requests) == 1  # client errors are not retried
    with FakeAnthropicServer(api_key="another-key") as other:  # wrong key: 401, not retried
        with pytest.raises(LLMError, match="authentication_error") as error:
            _ask(_client(other))
        assert KEY not in str(error.value) and len(other.requests) == 1


def test_cache_prevents_repeated_calls(server: FakeAnthropicServer, tmp_path: Path) -> None:
    first = _ask(_client(server, tmp_path), "same question")
    again_client = _client(server, tmp_path)  # a resumed run: new client, same cache file
    again = _ask(again_client, "same question")
    assert len(server.requests) == 1
    assert again.cached and again.content == first.content and again.usage == first.usage
    assert again_client.ledger.calls == 0 and again_client.ledger.cached_calls == 1
    assert again_client.ledger.dollars == 0.0
    _ask(again_client, "another question")
    again_client.create(
        system=SYSTEM, messages=[{"role": "user", "content": "same question"}], temperature=1.0
    )
    assert len(server.requests) == 3  # a different question or parameter is a different key
    assert KEY not in (tmp_path / "llm.sqlite").read_bytes().decode("utf-8", "replace")


def test_cache_is_shared_between_connections_in_wal_mode(tmp_path: Path) -> None:
    one, two = LLMCache(tmp_path / "c.sqlite"), LLMCache(tmp_path / "c.sqlite")
    key = request_key({"model": "m", "messages": [{"role": "user", "content": "ü"}]})
    assert key == request_key({"messages": [{"content": "ü", "role": "user"}], "model": "m"})
    one.put(key, {"content": [], "stop_reason": "end_turn", "usage": {}})
    assert two.get(key) == {"content": [], "stop_reason": "end_turn", "usage": {}} and len(two) == 1
    one.close()
    two.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert db.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_budget_cap_stops_before_sending(server: FakeAnthropicServer) -> None:
    client = _client(server, budget_usd=0.03, max_tokens=1000)  # ~$0.016 estimated, ~$0.001 spent per call
    with pytest.raises(BudgetExceeded, match=r"spent \$.*estimated.*llm\.budget_usd is \$0\.03"):
        for i in range(100):
            _ask(client, f"question {i}")
    sent = len(server.requests)
    assert 1 < sent == client.ledger.calls and client.ledger.dollars <= 0.03
    with pytest.raises(BudgetExceeded):
        _ask(client, "one more")
    assert len(server.requests) == sent  # nothing sent beyond the budget


def test_parallel_calls_cannot_overshoot_the_budget(server: FakeAnthropicServer) -> None:
    # Each call really costs about its estimate ($0.015 of output): without holding the estimates
    # of calls in flight, 8 threads that all passed the check at once would spend ~$0.12.
    for _ in range(40):
        server.enqueue(text("x"), usage={"input_tokens": 10, "output_tokens": 1000})
    client = _client(server, budget_usd=0.1, max_tokens=1000)

    def ask(i: int) -> bool:
        try:
            _ask(client, f"parallel {i}")
        except BudgetExceeded:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        answered = sum(pool.map(ask, range(40)))
    assert 1 <= answered == len(server.requests) == client.ledger.calls <= 6
    assert client.ledger.dollars <= 0.1


def test_requests_per_minute_are_limited(server: FakeAnthropicServer) -> None:
    # A bucket of 120 refilled at 2 per second can grant 122 calls no sooner than 1 s after it
    # was created, however fast the calls themselves are.
    started = time.monotonic()
    client = _client(server, requests_per_minute=120)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda i: _ask(client, f"call {i}"), range(122)))
    assert time.monotonic() - started >= 1.0
    assert len(server.requests) == 122


def test_unknown_model_price_is_a_clear_error() -> None:
    with pytest.raises(LLMError, match=r"claude-unknown.*prices.*claude-haiku-4-5, claude-opus-4-1"):
        ClaudeClient(LLMSettings(model="claude-unknown"), PRICES, api_key="k")


def test_key_and_base_url_from_the_environment(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY is not set"):
        ClaudeClient(LLMSettings(), PRICES)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    client = ClaudeClient.from_settings(Settings())
    assert _ask(client).tool_input("record") == {"echo": "hello"}
    assert server.requests[0][0]["authorization"] == f"Bearer {KEY}"


def test_cost_arithmetic() -> None:
    usage = Usage(1_000_000, 100_000, 500_000, 0) + Usage(0, 0, 0, 1_000_000)
    assert usage == Usage(1_000_000, 100_000, 500_000, 1_000_000)
    assert price_usd(usage, SONNET) == pytest.approx(3.0 + 1.5 + 0.15 + 3.75)
    assert estimate_cost(10, 2000, 500, SONNET) == pytest.approx(10 * (2000 * 3 + 500 * 15) / 1e6)
    ledger = CostLedger(budget_usd=1.0)
    ledger.record(usage, 0.5, cached=False)
    ledger.record(Usage(), 0.0, cached=True)
    assert (ledger.calls, ledger.cached_calls, ledger.dollars) == (1, 1, 0.5)
    # A call in flight counts against the budget until it is over.
    with ledger.hold(0.3), pytest.raises(BudgetExceeded, match=r"in flight"):
        ledger.reserve(0.3)
    ledger.reserve(0.3)
    assert CostLedger().reserve(1e9) is None  # no budget: never stops
