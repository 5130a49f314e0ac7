"""The one interface every role (extract, summarize, report, map, answer, rerank, tune) talks to.

A role never knows which provider is behind it: it builds an Anthropic-style request (system,
messages, and for structured output one tool whose ``input_schema`` is the JSON schema of the
answer) and gets content blocks back. Each provider client turns that into its own wire format
(Claude: tool use with prompt caching; OpenAI-compatible servers: ``response_format`` JSON schema,
function calling, or JSON mode with repair). Differences between providers are capabilities
(`supports_batches`, `repair_budget`), never subclasses of roles.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from graphunified_query.core.providers.cost import CostLedger
from graphunified_query.core.providers.llm_client import Blocks, ContentResponse
from graphunified_query.core.settings.model import LLMSettings, ModelPrice


@runtime_checkable
class LLM(Protocol):
    """What a role may rely on; `CachedLLMClient` is the shared implementation."""

    settings: LLMSettings
    price: ModelPrice  # dollars per million tokens; local models cost 0
    ledger: CostLedger  # usage and cost of the run, cached calls counted apart

    @property
    def label(self) -> str:
        """'provider:model', the name results and caches record for work done by this LLM."""
        ...

    @property
    def supports_batches(self) -> bool:
        """True when `create_each` sends one discounted batch rather than parallel calls."""
        ...

    @property
    def repair_budget(self) -> int:
        """How many repair turns a structured answer that fails validation gets."""
        ...

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
    ) -> ContentResponse:
        """One call, answered from the LLM cache when the same request was made before
        (``response.cached``; ``response.usage`` is then what the original call cost).
        ``model`` overrides `llm.model` for this call (priced as `llm.model`)."""
        ...

    def create_each(self, requests: list[dict[str, Any]]) -> list[ContentResponse | Exception]:
        """Each request's response (or the `LLMError` that ended it), in request order."""
        ...

    def cached(self, **kwargs: Any) -> ContentResponse | None:
        """The cached response to a request, or None; no call is made."""
        ...

    def forget(self, **kwargs: Any) -> None:
        """Drop a cached response its caller could not use, so the next run asks again."""
        ...
