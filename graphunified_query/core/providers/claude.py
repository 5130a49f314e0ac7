"""Claude through the `anthropic` SDK: cached, rate-limited, retried, and accounted for.

One `ClaudeClient` is shared by every thread of a run (`llm.concurrency` parallel calls): the
SDK client, the rate limiter, the ledger and the cache are all thread-safe. The request shape,
cache lookups and the budget hold are `CachedLLMClient`'s (llm_client.py), shared with the
OpenAI-compatible client; `LLMError` is still imported from here by most callers.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anthropic

from graphunified_query.core.providers.claude_retry import (
    UNREADABLE_RESPONSE,
    backoff_seconds,
    describe,
    is_retryable,
)
from graphunified_query.core.providers.cost import CostLedger, Usage, price_usd
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.providers.llm_client import CachedLLMClient, ContentResponse, LLMError
from graphunified_query.core.providers.registry import LLMS
from graphunified_query.core.settings.model import LLMSettings, ModelPrice, Settings

API_KEY_VARIABLE = LLMS.entry("anthropic").key_env_var or ""  # declared by its registry entry
BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"
# Sampling parameters left the SDK's signature in anthropic 1.0 but are still valid on the wire
# for the models priced in settings; the SDK's migration guide routes them through extra_body.
_BODY_ONLY = ("temperature",)
_RETRIED: tuple[type[Exception], ...] = (anthropic.APIError, *UNREADABLE_RESPONSE)  # judged by is_retryable
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaudeResponse(ContentResponse):
    """Content blocks, stop reason, usage and whether the LLM cache answered."""


class ClaudeClient(CachedLLMClient[ClaudeResponse]):
    """Structured output through tool use; static instructions carry `cache_control` (prompt
    caching); `llm.use_batches` sends `create_each` as one Message Batch."""

    provider_name = "anthropic"

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
        super().__init__(
            settings,
            prices[settings.model],
            cache=cache,
            ledger=ledger,
            base_delay=settings.retry_base_seconds if base_delay is None else base_delay,
            endpoint=settings.base_url or os.environ.get(BASE_URL_VARIABLE) or None,
        )
        self._secret = api_key  # only to scrub it from error messages
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
    def supports_batches(self) -> bool:  # type: ignore[override]  # a setting, not a class constant
        return self.settings.use_batches

    def create_each(self, requests: list[dict[str, Any]]) -> list[ClaudeResponse | Exception]:
        if not self.supports_batches:
            return super().create_each(requests)
        from graphunified_query.core.providers.claude_batches import create_batched

        return create_batched(self, requests)

    @property
    def raw(self) -> anthropic.Anthropic:
        """The SDK client, for APIs beyond single messages (batches)."""
        return self._client

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
        entry = {"id": message.id, "model": message.model, "content": content}
        self._remember(request, entry | {"stop_reason": message.stop_reason, "usage": usage.__dict__})
        self.ledger.record(usage, price_usd(usage, self.price) * discount, cached=False)
        return ClaudeResponse(content, message.stop_reason, usage, cached=False)

    def _from_cache(self, entry: dict[str, Any]) -> ClaudeResponse:
        return ClaudeResponse(entry["content"], entry["stop_reason"], Usage(**entry["usage"]), cached=True)

    def _send(self, request: dict[str, Any], prompt_tokens: int) -> ClaudeResponse:
        return self.store(request, self._message(request, prompt_tokens))

    def _message(self, request: dict[str, Any], prompt_tokens: int) -> Any:
        """The SDK message for ``request``, after the retries that 429s, 5xx and timeouts earn."""
        arguments = {k: v for k, v in request.items() if k not in _BODY_ONLY}
        extra_body = {k: request[k] for k in _BODY_ONLY if k in request}
        attempts = self.settings.max_retries + 1
        for attempt in range(1, attempts + 1):
            self._limiter.acquire(prompt_tokens)  # input tokens: output is bounded by max_tokens
            try:
                return self._client.messages.create(**arguments, extra_body=extra_body or None)
            except _RETRIED as error:
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


def build(
    settings: Settings, *, cache: LLMCache | None, environ: Mapping[str, str], key: str
) -> ClaudeClient:
    """The registry's factory (providers/registry.py), given the key its entry declares."""
    return ClaudeClient(settings.llm, settings.prices, api_key=key, cache=cache)
