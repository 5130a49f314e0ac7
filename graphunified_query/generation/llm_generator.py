"""Answers written by the configured LLM from the packed contexts, with citations and their cost.

One generator for every provider; its `name` is the LLM's label ('anthropic:claude-sonnet-4-5',
'openai_compatible:llama3.1:8b'), so results and evaluations name the model that really answered.
An answer served from the LLM cache says so (`cached`) and costs nothing; what the original call
cost is kept apart in `cached_usage`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from graphunified_query.core.providers.cost import Usage, price_usd
from graphunified_query.core.providers.tokenizer import count_tokens
from graphunified_query.core.settings.model import QuerySettings
from graphunified_query.generation.packing import TokenCounter, context_budget, framed, pack_contexts
from graphunified_query.generation.prompt import DONT_KNOW, answer_instructions, says_dont_know, user_message
from graphunified_query.generation.templates import choose_template
from graphunified_query.strategies.results import GeneratedAnswer, RetrievalResult

if TYPE_CHECKING:
    from graphunified_query.core.providers.llm import LLM


class LLMGenerator:
    def __init__(self, client: LLM, settings: QuerySettings, *, count: TokenCounter = count_tokens) -> None:
        self.client = client
        self.settings = settings
        self.count = count
        self.name = client.label
        self._systems: dict[str, list[dict[str, Any]]] = {}

    def system(self, template: str) -> list[dict[str, Any]]:
        """A template's instructions never change, so they carry the cache mark: later calls read
        them cheaply (one cached prefix per template)."""
        if template not in self._systems:
            text = answer_instructions(template)
            self._systems[template] = [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]
        return self._systems[template]

    def generate(
        self,
        question: str,
        results: Sequence[RetrievalResult],
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        budget_tokens: int | None = None,
    ) -> GeneratedAnswer:
        """``model``, ``max_tokens``, ``temperature``: this call's overrides of `query.generation`
        (whose unset model and max_tokens fall back to the LLM's model and `query.answer_max_tokens`);
        ``budget_tokens``: this call's context budget (a per-call ``context_window``), else the settings'."""
        generation = self.settings.generation
        model = model or generation.model
        max_tokens = max_tokens or generation.max_tokens
        if temperature is None:
            temperature = generation.temperature
        budget = context_budget(self.settings) if budget_tokens is None else budget_tokens
        contexts = pack_contexts(results, budget, framed(self.count))
        if not contexts:  # nothing to ground an answer in: no call, no cost
            return GeneratedAnswer(DONT_KNOW, contexts, supported=False)
        template = choose_template(contexts)  # the code-QA prompt when most contexts hold code
        response = self.client.create(
            system=self.system(template),
            messages=[{"role": "user", "content": user_message(question, contexts, template)}],
            max_tokens=max_tokens or self.settings.answer_max_tokens,
            temperature=temperature,
            model=model or None,  # unset: the LLM's own model
        )
        text = response.text.strip()
        # This call's own bill, as the ledger records it: a cache hit is free and not a call. Read
        # from the response, not a ledger delta, because parallel questions share one ledger.
        usage = Usage() if response.cached else response.usage
        return GeneratedAnswer(
            text=text or DONT_KNOW,
            contexts=contexts,
            usage=usage,
            llm_calls=0 if response.cached else 1,
            cost_usd=price_usd(usage, self.client.price),
            supported=bool(text) and not says_dont_know(text),
            cached=response.cached,
            cached_usage=response.usage if response.cached else Usage(),
        )
