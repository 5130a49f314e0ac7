"""A local OpenAI-compatible server is not throttled by the cloud default; a cloud endpoint is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphunified_query.core.providers.endpoints import is_local_endpoint
from graphunified_query.core.providers.openai_compatible import OpenAICompatibleClient
from graphunified_query.core.settings.llm import CLOUD_LIMITS, LLMSettings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.providers.test_rate_limit import FakeClock


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://LOCALHOST./v1", True),
        ("http://ollama.localhost/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://10.1.2.3/v1", True),
        ("http://192.168.0.7:8080/v1", True),
        ("http://172.20.0.2/v1", True),
        ("http://169.254.0.9/v1", True),
        ("127.0.0.1:8000", True),  # no scheme
        ("https://api.openai.com/v1", False),
        ("https://api.together.xyz/v1", False),
        ("http://8.8.8.8/v1", False),
        ("http://172.32.0.1/v1", False),  # just outside 172.16/12
        ("http://localhost.example.com/v1", False),
        (None, False),  # the provider's own cloud
        ("", False),
    ],
)
def test_local_endpoints_are_loopback_and_private_addresses(url: str | None, local: bool) -> None:
    assert is_local_endpoint(url) is local


def test_unset_limits_follow_the_endpoint_and_set_ones_win() -> None:
    unset = LLMSettings()
    assert unset.rate_limits(None) == CLOUD_LIMITS == (50, 400_000)
    assert unset.rate_limits("https://api.openai.com/v1") == CLOUD_LIMITS
    assert unset.rate_limits("http://127.0.0.1:11434/v1") == (None, None)
    assert LLMSettings(requests_per_minute=20).rate_limits("http://127.0.0.1/v1") == (20, None)
    assert LLMSettings(tokens_per_minute=5000).rate_limits(None) == (50, 5000)
    assert LLMSettings(requests_per_minute=0, tokens_per_minute=0).rate_limits(None) == (None, None)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def _calls_that_wait(server: FakeOpenAIServer, calls: int, **limits: int) -> int:
    """How often the client's limiter had to sleep over ``calls`` calls to the loopback server."""
    llm = LLMSettings(provider="openai_compatible", openai_base_url=server.base_url, model="m", **limits)
    client = OpenAICompatibleClient(llm, base_delay=0.001)
    clock = FakeClock()  # the limiter waits on a fake clock: counted, not slept
    client._limiter._clock, client._limiter._sleep, client._limiter._stamp = clock, clock.sleep, clock()
    for n in range(calls):
        client.create(system="s", messages=[{"role": "user", "content": f"call {n}"}])
    return len(clock.slept)


def test_a_loopback_server_is_not_throttled_by_default(server: FakeOpenAIServer) -> None:
    # The cloud default allows a burst of 50: the 51st call would wait 1.2 s.
    assert _calls_that_wait(server, CLOUD_LIMITS[0] + 5) == 0
    assert len(server.bodies) == CLOUD_LIMITS[0] + 5


def test_a_limit_set_for_a_loopback_server_still_applies(server: FakeOpenAIServer) -> None:
    assert _calls_that_wait(server, 4, requests_per_minute=2) >= 1
