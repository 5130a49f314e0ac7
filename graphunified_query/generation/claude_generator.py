"""Answers written by Claude from the packed contexts, with citations and their cost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from graphunified_query.generation.packing import TokenCounter, context_budget, framed, pack_contexts
from graphunified_query.generation.prompt import DONT_KNOW, answer_instructions, says_dont_know, user_message
from graphunified_query.generation.templates import choose_template
from graphunified_query.providers.cost import Usage, price_usd
from graphunified_query.providers.tokenizer import count_tokens
from graphunified_query.results import GeneratedAnswer, RetrievalResult
from graphunified_query.settings import QuerySettings

if TYPE_CHECKING:  # the anthropic SDK takes seconds to import; only callers that use Claude pay it
    from graphunified_query.providers.claude import ClaudeClient


class ClaudeGenerator:
    def __init__(
        self, client: ClaudeClient, settings: QuerySettings, *, count: TokenCounter = count_tokens
    ) -> None:
        self.client = client
        self.settings = settings
        self.count = count
        self._systems: dict[str, list[dict[str, Any]]] = {}

    def system(self, template: str) -> list[dict[str, Any]]:
        """A template's instructions never change, so they carry the cache mark: later calls read
        them cheaply (one cached prefix per template)."""
        if template not in self._systems:
            text = answer_instructions(template)
            self._systems[template] = [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]
        return self._systems[template]

    def generate(self, question: str, results: Sequence[RetrievalResult]) -> GeneratedAnswer:
        contexts = pack_contexts(results, context_budget(self.settings), framed(self.count))
        if not contexts:  # nothing to ground an answer in: no call, no cost
            return GeneratedAnswer(DONT_KNOW, contexts, supported=False)
        template = choose_template(contexts)  # the code-QA prompt when most contexts hold code
        response = self.client.create(
            system=self.system(template),
            messages=[{"role": "user", "content": user_message(question, contexts, template)}],
            max_tokens=self.settings.generation.max_tokens or self.settings.answer_max_tokens,
            temperature=self.settings.generation.temperature or 0.0,  # query.generation (default 0)
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
        )
