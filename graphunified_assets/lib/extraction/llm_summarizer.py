"""Description summaries with any LLM, for entities and relationships with many long fragments.

Only a description longer than `llm.summarize_above_tokens` is sent, as GraphRAG condenses only
past its token budget: a few short fragments joined lose nothing and cost no call. Requests are
deterministic, so the LLM cache makes an unchanged entity's summary free on every rebuild: only
entities whose fragments changed cost a call.
"""

from __future__ import annotations

import logging
from pathlib import Path

from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.llm_client import LLMError, rough_tokens

log = logging.getLogger(__name__)

_PROMPT = Path(__file__).with_name("prompts") / "summarize.md"


class LLMSummarizer:
    def __init__(self, client: LLM, *, max_words: int = 120, above_tokens: int = 0) -> None:
        self.client = client
        self.max_words = max_words
        self.above_tokens = above_tokens  # llm.summarize_above_tokens
        self.failures = 0  # summaries that fell back to the fragments this run
        self._template = _PROMPT.read_text()

    def __call__(self, name: str, fragments: list[str]) -> str:
        joined = "\n".join(fragments)
        if rough_tokens(joined) <= self.above_tokens:
            return joined
        prompt = self._template.format(
            name=name, max_words=self.max_words, fragments="\n".join(f"- {f}" for f in sorted(fragments))
        )
        try:
            response = self.client.create(
                system="You write concise, faithful summaries.",
                messages=[{"role": "user", "content": prompt}],
                max_tokens=self.max_words * 3,
            )
        except LLMError as error:
            # The fragments themselves lose nothing, and nothing was cached: the next rebuild of
            # this description asks the LLM again. Failing here would sink every other entity.
            log.warning("description summary of %r kept its fragments: %s", name, error)
            self.failures += 1
            return joined
        return response.text.strip() or joined
