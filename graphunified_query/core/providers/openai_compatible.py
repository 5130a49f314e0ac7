"""OpenAI-compatible chat servers (Ollama, vLLM, llama.cpp server, gateways) as an LLM provider.

`OpenAICompatibleClient` has the interface of `ClaudeClient` (`create`, `cached`, `settings`,
`price`, `ledger`), takes the same Anthropic-style requests and returns the same content blocks,
so every Claude consumer (reports, summaries, answers, the global map) works with it unchanged.
Underneath it is the `openai` SDK talking to `llm.openai_base_url`, with our own policies: the
LLM cache, the rate limiter, bounded retries with backoff on 429/5xx/connection errors, tool
calling that falls back to JSON mode when the server refuses tools, and repair of malformed or
truncated tool arguments (see `openai_wire`). Local endpoints cost $0 unless `prices` names the
model; tokens are counted either way. The key (OPENAI_API_KEY, optional) is never stored or logged.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import openai

from graphunified_query.core.providers.claude_retry import backoff_seconds
from graphunified_query.core.providers.cost import CostLedger, Usage, price_usd
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.providers.llm_client import (
    CHARS_PER_TOKEN,
    CachedLLMClient,
    ContentResponse,
    LLMError,
)
from graphunified_query.core.providers.openai_wire import Mode, chat_request, parse_reply
from graphunified_query.core.providers.registry import LLMS
from graphunified_query.core.settings.model import LLMSettings, ModelPrice, Settings

API_KEY_VARIABLE = LLMS.entry("openai_compatible").key_env_var or ""  # declared by its registry entry
PROVIDER = "openai_compatible"
NO_KEY = "not-needed"  # local servers ignore the bearer token, but the SDK insists on one
FREE = ModelPrice(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0)
_QUOTA_CODES = {"insufficient_quota"}  # a 429 that waiting will not lift
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LLMResponse(ContentResponse):
    """What `ClaudeResponse` holds (content blocks, stop reason, usage, cached), plus repairs."""

    repaired: int = 0  # tool inputs repaired or salvaged from malformed model output


class OpenAICompatibleClient(CachedLLMClient[LLMResponse]):
    """Thread-safe like `ClaudeClient`: one instance serves every parallel call of a run.

    The cache key is that of the logical (Anthropic-style) request, whichever wire mode answers it.
    """

    provider_field = PROVIDER
    provider_name = PROVIDER
    repair_budget = 2  # small local models often need a second look at their own JSON

    def __init__(
        self,
        settings: LLMSettings,
        prices: Mapping[str, ModelPrice] | None = None,
        *,
        api_key: str | None = None,
        cache: LLMCache | None = None,
        ledger: CostLedger | None = None,
        base_delay: float | None = None,
    ) -> None:
        if not settings.openai_base_url:
            raise LLMError(
                "llm.provider is 'openai_compatible' but llm.openai_base_url is not set; set it in "
                "settings.yaml, e.g. http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8000/v1 (vLLM)."
            )
        super().__init__(
            settings,
            (prices or {}).get(settings.model, FREE),
            cache=cache,
            ledger=ledger,
            # llm.retry_base_seconds when the setting exists
            base_delay=getattr(settings, "retry_base_seconds", 1.0) if base_delay is None else base_delay,
            endpoint=settings.openai_base_url,
        )
        api_key = api_key or os.environ.get(API_KEY_VARIABLE) or ""
        self._secret = api_key  # only to scrub it from error messages
        structured = settings.openai_structured_output
        self._mode: Mode = structured if structured in ("json", "json_schema") else "tools"
        self._mode_lock = threading.Lock()
        self._client = openai.OpenAI(
            api_key=api_key or NO_KEY,
            base_url=settings.openai_base_url,
            max_retries=0,  # ours: bounded, with backoff, honouring retry-after
            timeout=settings.timeout_seconds,
        )

    @classmethod
    def from_settings(
        cls, settings: Settings, *, cache: LLMCache | None = None, api_key: str | None = None
    ) -> OpenAICompatibleClient:
        return cls(settings.llm, settings.prices, api_key=api_key, cache=cache)

    @property
    def mode(self) -> Mode:
        """'tools' or 'json': how structured output is currently requested."""
        return self._mode

    def _from_cache(self, entry: dict[str, Any]) -> LLMResponse:
        usage = Usage(**entry["usage"])
        return LLMResponse(
            entry["content"], entry["stop_reason"], usage, cached=True, repaired=entry["repaired"]
        )

    def _send(self, request: dict[str, Any], prompt_tokens: int) -> LLMResponse:
        response = self._complete(request, prompt_tokens)
        entry = {"content": response.content, "stop_reason": response.stop_reason}
        self._remember(request, entry | {"usage": response.usage.__dict__, "repaired": response.repaired})
        return response

    def _complete(self, request: dict[str, Any], prompt_tokens: int) -> LLMResponse:
        """The accounted response, after JSON-mode fallback and the retries 429s, 5xx and timeouts earn."""
        attempts = self.settings.max_retries + 1
        attempt = 1
        while True:
            mode = self._mode
            body = chat_request(
                model=request["model"],
                system=request["system"],
                messages=request["messages"],
                tools=request.get("tools"),
                tool_choice=request.get("tool_choice"),
                max_tokens=request["max_tokens"],
                temperature=request.get("temperature"),
                mode=mode,
            )
            self._limiter.acquire(prompt_tokens)
            try:
                completion = self._client.chat.completions.create(**body)
            except openai.APIError as error:
                reason = self._describe(error)
                if self._falls_back(error, body, mode):
                    continue  # the same request again in JSON mode; not counted as an attempt
                if not _is_retryable(error):
                    raise LLMError(f"The OpenAI-compatible server refused the request: {reason}") from None
                if attempt >= attempts:
                    raise LLMError(
                        f"OpenAI-compatible call failed after {attempts} attempts: {reason}"
                    ) from None
                delay = backoff_seconds(attempt - 1, error, base_delay=self.base_delay)
                log.warning("LLM call attempt %d/%d: %s; retrying in %.2fs", attempt, attempts, reason, delay)
                time.sleep(delay)
                attempt += 1
                continue
            return self._account(completion, request, prompt_tokens)

    def _account(self, completion: Any, request: dict[str, Any], prompt_tokens: int) -> LLMResponse:
        choices = getattr(completion, "choices", None) or []
        message: dict[str, Any] = {}
        finish: str | None = None
        if choices:
            choice = choices[0]
            message = choice.message.model_dump(mode="json", exclude_none=True, warnings=False)
            finish = choice.finish_reason
        reply = parse_reply(
            message, finish, tools=request.get("tools"), tool_choice=request.get("tool_choice")
        )
        raw = getattr(completion, "usage", None)
        if raw is not None and getattr(raw, "prompt_tokens", None) is not None:
            usage = Usage(int(raw.prompt_tokens or 0), int(raw.completion_tokens or 0))
        else:  # some servers omit usage: count roughly so token totals stay meaningful
            usage = Usage(
                prompt_tokens, len(json.dumps(reply.content, ensure_ascii=False)) // CHARS_PER_TOKEN
            )
        self.ledger.record(usage, price_usd(usage, self.price), cached=False)
        if reply.repaired:
            log.info("repaired %d malformed tool argument(s) from %s", reply.repaired, self.settings.model)
        return LLMResponse(reply.content, reply.stop_reason, usage, cached=False, repaired=reply.repaired)

    def _falls_back(self, error: openai.APIError, body: dict[str, Any], mode: Mode) -> bool:
        """In 'auto', a server that rejects tools gets JSON mode for the rest of the run."""
        if self.settings.openai_structured_output != "auto" or mode != "tools" or "tools" not in body:
            return False
        status = getattr(error, "status_code", None)
        if status is None or status == 429:
            return False
        text = f"{getattr(error, 'message', '')} {getattr(error, 'body', '')}".lower()
        if "tool" not in text and "function" not in text:
            return False
        with self._mode_lock:
            self._mode = "json"
        log.warning(
            "The server at llm.openai_base_url does not take tools (HTTP %s); using JSON mode. "
            "Set llm.openai_structured_output: json to skip this probe.",
            status,
        )
        return True

    def _describe(self, error: openai.APIError) -> str:
        parts = [type(error).__name__]
        if isinstance(error, openai.APIStatusError):
            parts.append(f"HTTP {error.status_code}")
            if error.message:
                parts.append(str(error.message)[:300])
        text = ", ".join(parts)
        return text.replace(self._secret, "[redacted]") if self._secret else text


def _is_retryable(error: openai.APIError) -> bool:
    if isinstance(error, openai.APIConnectionError):  # APITimeoutError is one
        return True
    if not isinstance(error, openai.APIStatusError):
        return False
    hint = error.response.headers.get("x-should-retry")
    if hint in ("true", "false"):
        return hint == "true"
    if error.status_code == 429:
        return getattr(error, "code", None) not in _QUOTA_CODES
    return error.status_code >= 500


def build(
    settings: Settings, *, cache: LLMCache | None, environ: Mapping[str, str], key: str | None
) -> OpenAICompatibleClient:
    """The registry's factory (providers/registry.py), given the key (optional) its entry declares."""
    return OpenAICompatibleClient(settings.llm, settings.prices, api_key=key, cache=cache)
