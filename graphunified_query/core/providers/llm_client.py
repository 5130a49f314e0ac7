"""What every LLM client shares: the request that keys the cache, cache hits, the budget hold.

`ClaudeClient` and `OpenAICompatibleClient` take the same Anthropic-style requests and hand back
the same content blocks; they differ only in how a request is sent (SDK, retries, wire format)
and what a cache entry holds, which is what a `CachedLLMClient` subclass implements. Together they
implement the `LLM` protocol (llm.py) every role is written against.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from graphunified_query.core.providers.cost import CostLedger, Usage, price_usd
from graphunified_query.core.providers.llm_cache import LLMCache, request_key
from graphunified_query.core.providers.rate_limit import RateLimiter
from graphunified_query.core.settings.model import LLMSettings, ModelPrice

CHARS_PER_TOKEN = 4  # a rough count is enough for rate limits and budget estimates


def rough_tokens(text: str) -> int:
    """About how many tokens ``text`` is to any LLM (no tokenizer: the provider's is unknown)."""
    return len(text) // CHARS_PER_TOKEN


Blocks = list[dict[str, Any]]


class LLMError(RuntimeError):
    """A call failed for good, or the client is misconfigured; the message never holds the key."""


@dataclass(frozen=True)
class ContentResponse:
    """One answer, whichever provider gave it; a provider's subclass may add fields."""

    content: Blocks  # content blocks as plain dicts, ready to replay as an assistant turn
    stop_reason: str | None
    usage: Usage
    cached: bool

    def tool_input(self, name: str) -> Any:
        """The input of the first call of tool ``name``; None when the model did not call it."""
        for block in self.content:
            if block.get("type") == "tool_use" and block.get("name") == name:
                return block.get("input")
        return None

    @property
    def text(self) -> str:
        return "".join(block.get("text", "") for block in self.content if block.get("type") == "text")


R = TypeVar("R", bound=ContentResponse)


class CachedLLMClient(ABC, Generic[R]):
    """Thread-safe: one instance (its limiter, ledger and cache) serves every parallel call of a run."""

    # The request's "provider" field, so no cache key matches another provider's. None leaves it
    # out, which keeps the keys of entries cached before a second provider existed (Claude's).
    provider_field: ClassVar[str | None] = None
    provider_name: ClassVar[str] = "llm"  # the llm.provider value; the first half of `label`
    supports_batches: ClassVar[bool] = False
    repair_budget: ClassVar[int] = 1  # repair turns for a structured answer that fails validation

    def __init__(
        self,
        settings: LLMSettings,
        price: ModelPrice,
        *,
        cache: LLMCache | None,
        ledger: CostLedger | None,
        base_delay: float,
        endpoint: str | None = None,
    ) -> None:
        self.settings = settings
        self.price = price
        self.cache = cache
        self.ledger = ledger or CostLedger(budget_usd=settings.budget_usd)
        self.base_delay = base_delay  # first backoff step in seconds; tests make it tiny
        # ``endpoint``: the server's URL (None: the provider's cloud); a local one is not throttled
        # unless the settings say so (LLMSettings.rate_limits).
        requests, tokens = settings.rate_limits(endpoint)
        self._limiter = RateLimiter(requests_per_minute=requests, tokens_per_minute=tokens)

    @property
    def label(self) -> str:
        return f"{self.provider_name}:{self.settings.model}"

    def create_each(self, requests: list[dict[str, Any]]) -> list[R | Exception]:
        """Each request's response, or the `LLMError` that ended it after its retries, in request
        order; up to `llm.concurrency` in parallel. One request failing never stops the others; a
        `BudgetExceeded` stops them all (the run's limit, not one request's fault)."""
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            return list(pool.map(self._create_or_error, requests))

    def _create_or_error(self, kwargs: dict[str, Any]) -> R | Exception:
        try:
            return self.create(**kwargs)
        except LLMError as error:
            return error

    def full_request(
        self,
        *,
        system: str | Blocks,
        messages: Blocks,
        tools: Blocks | None = None,
        tool_choice: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        model: str | None = None,
    ) -> dict[str, Any]:
        """The logical request (a Messages API body), also what the cache key is computed from.

        ``temperature=None`` leaves it out, for models that reject sampling parameters.
        """
        request: dict[str, Any] = {"provider": self.provider_field} if self.provider_field else {}
        request |= {
            "model": model or self.settings.model,
            "max_tokens": max_tokens or self.settings.max_tokens,
            "system": system,
            "messages": messages,
        }
        if temperature is not None:
            request["temperature"] = temperature
        if tools:
            request["tools"] = tools
        if tool_choice:
            request["tool_choice"] = tool_choice
        return request

    def cached(self, **kwargs: Any) -> R | None:
        """The cached response to a request (`full_request` arguments), counted; None if absent."""
        return self._lookup(self.full_request(**kwargs))

    def forget(self, **kwargs: Any) -> None:
        """Drop the cached response to a request (`full_request` arguments) its caller could not use
        (no tool call, malformed input), so a retry in a later run reaches the model again."""
        if self.cache is not None:
            self.cache.delete(request_key(self.full_request(**kwargs)))

    def create(
        self,
        *,
        system: str | Blocks,
        messages: Blocks,
        tools: Blocks | None = None,
        tool_choice: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        model: str | None = None,
    ) -> R:
        """One call: from the cache, else within budget and rate limits, with retries."""
        request = self.full_request(
            system=system,
            messages=messages,
            tools=tools,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
            temperature=temperature,
            model=model,
        )
        if (hit := self._lookup(request)) is not None:
            return hit
        prompt_tokens = len(json.dumps(request, ensure_ascii=False)) // CHARS_PER_TOKEN
        # Upper bound: every prompt token at the full input rate and the whole max_tokens.
        estimate = price_usd(Usage(prompt_tokens, request["max_tokens"]), self.price)
        with self.ledger.hold(estimate):
            return self._send(request, prompt_tokens)

    @abstractmethod
    def _send(self, request: dict[str, Any], prompt_tokens: int) -> R:
        """Send ``request`` with the provider's retries, record its usage and `_remember` the answer."""

    @abstractmethod
    def _from_cache(self, entry: dict[str, Any]) -> R:
        """The response a cache entry written by `_send` stands for."""

    def _remember(self, request: dict[str, Any], entry: dict[str, Any]) -> None:
        if self.cache is not None:
            self.cache.put(request_key(request), entry)

    def _lookup(self, request: dict[str, Any]) -> R | None:
        if self.cache is None or (hit := self.cache.get(request_key(request))) is None:
            return None
        self.ledger.record(Usage(), 0.0, cached=True)
        return self._from_cache(hit)
