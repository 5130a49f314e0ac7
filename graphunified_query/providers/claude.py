"""Claude through the `anthropic` SDK: cached, rate-limited, retried, and accounted for."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anthropic

from graphunified_query.providers.cost import CostLedger, Usage, price_usd
from graphunified_query.providers.llm_cache import LLMCache, request_key
from graphunified_query.providers.rate_limit import RateLimiter
from graphunified_query.settings import LLMSettings, ModelPrice

MAX_SLEEP_SECONDS = 60.0
# 429, 5xx and 529 overloaded (InternalServerError subclasses), dropped connections, timeouts.
_RETRYABLE = (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APIConnectionError)


class LLMError(RuntimeError):
    """A call failed for good; the message never holds the API key."""


@dataclass(frozen=True)
class ClaudeResponse:
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: Usage
    cached: bool

    def tool_input(self, name: str) -> Any:
        for block in self.content:
            if block.get("type") == "tool_use" and block.get("name") == name:
                return block.get("input")
        return None

    @property
    def text(self) -> str:
        return "".join(block.get("text", "") for block in self.content if block.get("type") == "text")


class ClaudeClient:
    def __init__(
        self,
        settings: LLMSettings,
        prices: Mapping[str, ModelPrice],
        *,
        api_key: str,
        cache: LLMCache | None = None,
        ledger: CostLedger | None = None,
        base_delay: float = 1.0,
    ) -> None:
        if settings.model not in prices:
            raise LLMError(
                f"No price for model {settings.model!r}; add it under `prices` in settings.yaml "
                f"(known: {', '.join(sorted(prices))})."
            )
        self.settings = settings
        self.price = prices[settings.model]
        self.cache = cache
        self.ledger = ledger or CostLedger(budget_usd=settings.budget_usd)
        self.base_delay = base_delay
        self._limiter = RateLimiter(
            requests_per_minute=settings.requests_per_minute, tokens_per_minute=settings.tokens_per_minute
        )
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=settings.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=0,  # ours honour retry-after and stay bounded
            timeout=settings.timeout_seconds,
        )

    @property
    def raw(self) -> anthropic.Anthropic:
        """The SDK client, for APIs beyond single messages (batches)."""
        return self._client

    def full_request(
        self,
        *,
        system: str | list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": max_tokens or self.settings.max_tokens,
            "system": system,
            "messages": messages,
        }
        if tools:
            request["tools"] = tools
        if tool_choice:
            request["tool_choice"] = tool_choice
        return request

    def cached(self, **kwargs: Any) -> ClaudeResponse | None:
        """The cached response to a request, counted as a cached call; None when not cached."""
        if self.cache is None or (hit := self.cache.get(request_key(self.full_request(**kwargs)))) is None:
            return None
        self.ledger.record(Usage(), 0.0, cached=True)
        return ClaudeResponse(hit["content"], hit["stop_reason"], Usage(**hit["usage"]), cached=True)

    def create(self, **kwargs: Any) -> ClaudeResponse:
        """One message (keyword arguments as in `full_request`): cache, budget, limits, retries."""
        if (hit := self.cached(**kwargs)) is not None:
            return hit
        request = self.full_request(**kwargs)
        prompt_tokens = len(json.dumps(request)) // 4  # a rough count is enough for limits and budgets
        self.ledger.reserve(price_usd(Usage(prompt_tokens, request["max_tokens"]), self.price))
        return self.store(request, self._send(request, prompt_tokens))

    def store(self, request: dict[str, Any], message: Any, *, discount: float = 1.0) -> ClaudeResponse:
        """Account for and cache an SDK message returned for ``request``."""
        usage = Usage(
            message.usage.input_tokens,
            message.usage.output_tokens,
            message.usage.cache_read_input_tokens or 0,
            message.usage.cache_creation_input_tokens or 0,
        )
        content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
        if self.cache is not None:
            entry = {"content": content, "stop_reason": message.stop_reason, "usage": usage.__dict__}
            self.cache.put(request_key(request), entry)
        self.ledger.record(usage, price_usd(usage, self.price) * discount, cached=False)
        return ClaudeResponse(content, message.stop_reason, usage, cached=False)

    def _send(self, request: dict[str, Any], prompt_tokens: int) -> Any:
        for attempt in range(self.settings.max_retries + 1):
            self._limiter.acquire(prompt_tokens + request["max_tokens"])
            try:
                return self._client.messages.create(**request)
            except _RETRYABLE as error:
                if attempt == self.settings.max_retries:
                    raise LLMError(
                        f"Claude call failed after {attempt + 1} attempts: {_describe(error)}"
                    ) from None
                time.sleep(self._delay(attempt, error))
            except anthropic.APIStatusError as error:
                raise LLMError(f"Claude refused the request: {_describe(error)}") from None
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, error: Exception) -> float:
        response = getattr(error, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after is not None:
            try:
                return min(float(retry_after), MAX_SLEEP_SECONDS)
            except ValueError:
                pass
        return min(self.base_delay * 2**attempt * random.uniform(0.5, 1.0), MAX_SLEEP_SECONDS)


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    return f"{type(error).__name__}" + (f" (HTTP {status})" if status else "")
