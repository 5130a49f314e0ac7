"""Claude through the `anthropic` SDK: cached, rate-limited, retried, and accounted for.

One `ClaudeClient` is shared by every thread of a run (`llm.concurrency` parallel calls): the
SDK client, the rate limiter, the ledger and the cache are all thread-safe.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anthropic

from graphunified_query.providers.claude_retry import (
    UNREADABLE_RESPONSE,
    backoff_seconds,
    describe,
    is_retryable,
)
from graphunified_query.providers.cost import CostLedger, Usage, price_usd
from graphunified_query.providers.llm_cache import LLMCache, request_key
from graphunified_query.providers.rate_limit import RateLimiter
from graphunified_query.settings import LLMSettings, ModelPrice, Settings

API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"
CHARS_PER_TOKEN = 4  # a rough count is enough for rate limits and budget estimates
# Sampling parameters left the SDK's signature in anthropic 1.0 but are still valid on the wire
# for the models priced in settings; the SDK's migration guide routes them through extra_body.
_BODY_ONLY = ("temperature",)
Blocks = list[dict[str, Any]]
log = logging.getLogger(__name__)


class LLMError(RuntimeError):
    """A call failed for good, or the client is misconfigured; the message never holds the key."""


@dataclass(frozen=True)
class ClaudeResponse:
    content: Blocks  # content blocks as plain dicts, ready to replay as an assistant turn
    stop_reason: str | None
    usage: Usage
    cached: bool

    def tool_input(self, name: str) -> Any:
        """The input of the first call of tool ``name``; None when Claude did not call it."""
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
        api_key: str | None = None,
        cache: LLMCache | None = None,
        ledger: CostLedger | None = None,
        base_delay: float | None = None,
    ) -> None:
        if settings.model not in prices:
            raise LLMError(
                f"No price for llm.model {settings.model!r}; add it under `prices` in settings.yaml "
                f"or pick a known model: {', '.join(sorted(prices))}."
            )
        api_key = api_key or os.environ.get(API_KEY_VARIABLE)
        if not api_key:
            raise LLMError(f"{API_KEY_VARIABLE} is not set; export it to use Claude.")
        self.settings = settings
        self.price = prices[settings.model]
        self.cache = cache
        self.ledger = ledger or CostLedger(budget_usd=settings.budget_usd)
        # First backoff step in seconds (llm.retry_base_seconds unless given); tests make it tiny.
        self.base_delay = settings.retry_base_seconds if base_delay is None else base_delay
        self._secret = api_key  # only to scrub it from error messages
        self._limiter = RateLimiter(
            requests_per_minute=settings.requests_per_minute, tokens_per_minute=settings.tokens_per_minute
        )
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=settings.base_url or os.environ.get(BASE_URL_VARIABLE) or None,
            max_retries=0,  # ours honour retry-after and stay bounded
            timeout=settings.timeout_seconds,
        )

    @classmethod
    def from_settings(
        cls, settings: Settings, *, cache: LLMCache | None = None, api_key: str | None = None
    ) -> ClaudeClient:
        """The client a run uses: `llm` settings, `prices`, the key from the environment."""
        return cls(settings.llm, settings.prices, api_key=api_key, cache=cache)

    @property
    def raw(self) -> anthropic.Anthropic:
        """The SDK client, for APIs beyond single messages (batches)."""
        return self._client

    def full_request(
        self,
        *,
        system: str | Blocks,
        messages: Blocks,
        tools: Blocks | None = None,
        tool_choice: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
    ) -> dict[str, Any]:
        """The Messages API body, also what the cache key is computed from.

        ``temperature=None`` leaves it out, for models that reject sampling parameters.
        """
        request: dict[str, Any] = {
            "model": self.settings.model,
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

    def cached(self, **kwargs: Any) -> ClaudeResponse | None:
        """The cached response to a request (`full_request` arguments), counted; None if absent."""
        return self._lookup(self.full_request(**kwargs))

    def forget(self, **kwargs: Any) -> None:
        """Drop the cached response to a request (`full_request` arguments) its caller could not use
        (no tool call, malformed input), so a retry in a later run reaches Claude again."""
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
    ) -> ClaudeResponse:
        """One message: from the cache, else within budget and rate limits, with retries."""
        request = self.full_request(
            system=system,
            messages=messages,
            tools=tools,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
            temperature=temperature,
        )
        if (hit := self._lookup(request)) is not None:
            return hit
        prompt_tokens = len(json.dumps(request, ensure_ascii=False)) // CHARS_PER_TOKEN
        # Upper bound: every prompt token at the full input rate and the whole max_tokens.
        estimate = price_usd(Usage(prompt_tokens, request["max_tokens"]), self.price)
        with self.ledger.hold(estimate):
            return self.store(request, self._send(request, prompt_tokens))

    def store(self, request: dict[str, Any], message: Any, *, discount: float = 1.0) -> ClaudeResponse:
        """Account for and cache an SDK message returned for ``request``."""
        usage = Usage(
            message.usage.input_tokens,
            message.usage.output_tokens,
            message.usage.cache_read_input_tokens or 0,
            message.usage.cache_creation_input_tokens or 0,
        )
        # warnings=False: a malformed tool input (not an object) is the caller's to judge, not noise.
        content = [
            block.model_dump(mode="json", exclude_none=True, warnings=False) for block in message.content
        ]
        if self.cache is not None:
            entry = {"id": message.id, "model": message.model, "content": content}
            entry |= {"stop_reason": message.stop_reason, "usage": usage.__dict__}
            self.cache.put(request_key(request), entry)
        self.ledger.record(usage, price_usd(usage, self.price) * discount, cached=False)
        return ClaudeResponse(content, message.stop_reason, usage, cached=False)

    def _lookup(self, request: dict[str, Any]) -> ClaudeResponse | None:
        if self.cache is None or (hit := self.cache.get(request_key(request))) is None:
            return None
        self.ledger.record(Usage(), 0.0, cached=True)
        return ClaudeResponse(hit["content"], hit["stop_reason"], Usage(**hit["usage"]), cached=True)

    def _send(self, request: dict[str, Any], prompt_tokens: int) -> Any:
        arguments = {k: v for k, v in request.items() if k not in _BODY_ONLY}
        extra_body = {k: request[k] for k in _BODY_ONLY if k in request}
        attempts = self.settings.max_retries + 1
        for attempt in range(1, attempts + 1):
            self._limiter.acquire(prompt_tokens)  # input tokens: output is bounded by max_tokens
            try:
                return self._client.messages.create(**arguments, extra_body=extra_body or None)
            except (anthropic.APIError, *UNREADABLE_RESPONSE) as error:
                reason = describe(error, secret=self._secret)
                if not is_retryable(error):
                    raise LLMError(f"Claude refused the request: {reason}") from None
                if attempt == attempts:
                    raise LLMError(f"Claude call failed after {attempts} attempts: {reason}") from None
                delay = backoff_seconds(attempt - 1, error, base_delay=self.base_delay)
                log.warning(
                    "Claude call attempt %d/%d: %s; retrying in %.2fs", attempt, attempts, reason, delay
                )
                time.sleep(delay)
        raise AssertionError("unreachable")
