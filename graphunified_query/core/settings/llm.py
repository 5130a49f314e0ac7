"""Settings of the language model (`llm.*`) and the price list (`prices`): which provider and
model, its limits, and what each model's tokens cost. Its own module because the provider layer
reads these sections alone; `settings.Settings` holds them as `llm` and `prices`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from graphunified_query.core.plugins import LLMS
from graphunified_query.core.settings.section import Section

# The limits (requests, input tokens per minute) an endpoint on the internet gets when the settings
# name none: a provider's low tier. A server on this machine or a private network gets none: its
# capacity is the machine's, and a cloud default made a local 100-passage build wait 85 % of 299 s.
CLOUD_LIMITS = (50, 400_000)


class LLMSettings(Section):
    provider: str = Field(
        "auto",
        description="'auto' uses Claude when ANTHROPIC_API_KEY is set, else the embedded defaults; "
        "'offline', 'anthropic', 'openai_compatible' (the server at llm.openai_base_url, e.g. Ollama, "
        "vLLM, llama.cpp), or any provider registered in providers/registry.py.",
    )
    model: str = Field(
        "claude-sonnet-4-5", description="Model name as the provider knows it ('llama3.1:8b' for Ollama)."
    )
    base_url: str | None = Field(None, description="Override the Anthropic endpoint (tests, proxies).")
    openai_base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint up to /v1, e.g. http://127.0.0.1:11434/v1 (Ollama); "
        "a key, if the server needs one, comes from OPENAI_API_KEY.",
    )
    openai_structured_output: Literal["auto", "tools", "json", "json_schema"] = Field(
        "auto",
        description="How structured output is asked of an OpenAI-compatible server: function calling "
        "('tools'), JSON mode with the schema in the prompt ('json'), response_format json_schema "
        "(grammar-constrained decoding in llama.cpp server, vLLM, Ollama >= 0.5; 'json_schema'), or "
        "tools falling back to JSON mode when the server refuses them ('auto').",
    )
    llm_reports: bool = Field(
        True, description="Write community reports with the LLM; false: extractive reports, no report calls."
    )
    max_tokens: int = Field(
        4096,
        ge=16,
        description="Longest reply of one extraction or report call (small for tiny local models).",
    )
    temperature: float = Field(
        0.0,
        ge=0.0,
        le=2.0,
        allow_inf_nan=False,
        description="Sampling temperature of extraction (0: deterministic, and a rebuild reproduces it "
        "from the LLM cache); answers use query.generation.temperature.",
    )
    max_gleanings: int = Field(
        1,
        ge=0,
        le=5,
        description="Extra 'what was missed?' extraction turns per chunk (GraphRAG gleaning), each only "
        "after a reply cut off at llm.max_tokens; a reply that ended on its own is not asked again.",
    )
    summarize_above_tokens: int = Field(
        500,
        ge=0,
        description="The LLM condenses only text longer than this many tokens (~4 characters each): a "
        "description past extraction.summarize_above_fragments fragments (shorter: its fragments joined) "
        "and a community's report context (shorter: the extractive report). 0: condense every one.",
    )
    requests_per_minute: int | None = Field(
        None,
        ge=0,
        description=f"Rate limit: LLM requests per minute; 0: none; null: {CLOUD_LIMITS[0]} against a cloud "
        "endpoint, none against a local one (loopback or private address: Ollama, vLLM, llama.cpp).",
    )
    tokens_per_minute: int | None = Field(
        None,
        ge=0,
        description=f"Rate limit: input tokens per minute; 0: none; null: {CLOUD_LIMITS[1]:_} against a "
        "cloud endpoint, none against a local one.",
    )
    max_retries: int = Field(6, ge=0, description="Retries of a failed LLM call (429, 5xx, timeouts).")
    retry_base_seconds: float = Field(
        1.0,
        gt=0,
        description="First backoff step; each retry doubles it (with jitter) unless retry-after says so.",
    )
    timeout_seconds: float = Field(120.0, gt=0, description="Timeout of one LLM call.")
    use_batches: bool = Field(False, description="Message Batches API for bulk extraction (half price).")
    batch_poll_seconds: float = Field(30.0, gt=0, description="How often a submitted batch is checked.")
    budget_usd: float | None = Field(None, ge=0, description="Stop cleanly before spending more than this.")
    concurrency: int = Field(4, ge=1, description="Parallel LLM calls within one run.")

    @model_validator(mode="after")
    def _openai_endpoint(self) -> LLMSettings:
        LLMS.check(self.provider)
        if self.provider == "openai_compatible" and not self.openai_base_url:
            raise ValueError(
                "llm.provider 'openai_compatible' needs llm.openai_base_url, e.g. "
                "http://127.0.0.1:11434/v1 (Ollama), http://127.0.0.1:8000/v1 (vLLM, llama.cpp server)"
            )
        return self

    def rate_limits(self, endpoint: str | None) -> tuple[int | None, int | None]:
        """(requests, tokens) per minute against ``endpoint`` (None: the provider's cloud); None is
        no limit. Set values win; unset ones depend on whether the endpoint is local."""
        from graphunified_query.core.providers.endpoints import is_local_endpoint

        defaults = (None, None) if is_local_endpoint(endpoint) else CLOUD_LIMITS
        return tuple(  # type: ignore[return-value]
            default if value is None else (value or None)
            for value, default in zip(
                (self.requests_per_minute, self.tokens_per_minute), defaults, strict=True
            )
        )


class ModelPrice(Section):
    """US dollars per million tokens."""

    input: float = Field(description="Input tokens.")
    output: float = Field(description="Output tokens.")
    cache_read: float = Field(description="Input tokens read from the prompt cache.")
    cache_write: float = Field(description="Input tokens written to the prompt cache.")


def default_prices() -> dict[str, ModelPrice]:
    return {
        "claude-sonnet-4-5": ModelPrice(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75),
        "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25),
        "claude-opus-4-1": ModelPrice(input=15.0, output=75.0, cache_read=1.50, cache_write=18.75),
        # Older ids still named in configurations (Anthropic's list prices).
        "claude-3-5-sonnet-20241022": ModelPrice(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75),
        "claude-3-5-haiku-20241022": ModelPrice(input=0.80, output=4.0, cache_read=0.08, cache_write=1.0),
    }
