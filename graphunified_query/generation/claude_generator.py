"""Answers written by Claude from the packed contexts, with citations and their cost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from graphunified_query.generation.packing import TokenCounter, pack_contexts
from graphunified_query.generation.prompt import DONT_KNOW, answer_instructions, says_dont_know, user_message
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
        # The instructions never change, so they carry the cache mark: later calls read them cheaply.
        self._system: list[dict[str, Any]] = [
            {"type": "text", "text": answer_instructions(), "cache_control": {"type": "ephemeral"}}
        ]

    def generate(self, question: str, results: Sequence[RetrievalResult]) -> GeneratedAnswer:
        contexts = pack_contexts(results, self.settings.context_window, self.count)
        if not contexts:  # nothing to ground an answer in: no call, no cost
            return GeneratedAnswer(DONT_KNOW, contexts, supported=False)
        response = self.client.create(
            system=self._system,
            messages=[{"role": "user", "content": user_message(question, contexts)}],
            max_tokens=self.settings.answer_max_tokens,
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
