"""Description summaries with any LLM, for entities and relationships with many fragments.

Requests are deterministic, so the LLM cache makes an unchanged entity's summary free on every
rebuild: only entities whose fragments changed cost a call.
"""

from __future__ import annotations

import logging
from pathlib import Path

from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.llm_client import LLMError

log = logging.getLogger(__name__)

_PROMPT = Path(__file__).with_name("prompts") / "summarize.md"


class LLMSummarizer:
    def __init__(self, client: LLM, *, max_words: int = 120) -> None:
        self.client = client
        self.max_words = max_words
        self.failures = 0  # summaries that fell back to the fragments this run
        self._template = _PROMPT.read_text()

    def __call__(self, name: str, fragments: list[str]) -> str:
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
            return "\n".join(fragments)
        return response.text.strip() or "\n".join(fragments)
