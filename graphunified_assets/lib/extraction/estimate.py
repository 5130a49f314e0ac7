"""What a Claude extraction pass will cost, printed before a large run starts.

An upper bound from text sizes alone (no prompt-cache discount): chunks from the chunking
settings, one call per chunk plus one per gleaning, the static prompt on every call.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from graphunified_query.core.providers.cost import estimate_cost
from graphunified_query.core.settings.model import Settings

CHARS_PER_TOKEN = 4
OUTPUT_TOKENS_PER_CALL = 700  # a typical tool payload for a 512-token chunk
_SYSTEM_PROMPT = Path(__file__).with_name("prompts") / "extract_system.md"


@dataclass(frozen=True)
class ExtractionEstimate:
    chunks: int
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float

    def describe(self, budget_usd: float | None) -> str:
        budget = (
            f"; budget ${budget_usd:.2f}, the run stops cleanly before exceeding it" if budget_usd else ""
        )
        tokens = f"~{self.input_tokens:,} input + {self.output_tokens:,} output tokens"
        return (
            f"Claude extraction estimate: {self.chunks} chunks, {self.calls} calls, {tokens}, "
            f"at most ${self.usd:.2f}{budget}"
        )


def estimate_extraction(texts: Iterable[str], settings: Settings) -> ExtractionEstimate:
    step = settings.chunking.size - settings.chunking.overlap
    system_tokens = len(_SYSTEM_PROMPT.read_text()) // CHARS_PER_TOKEN
    chunks = 0
    chunk_tokens = 0
    for text in texts:
        tokens = max(1, len(text) // CHARS_PER_TOKEN)
        n = max(1, math.ceil((tokens - settings.chunking.overlap) / step))
        chunks += n
        chunk_tokens += tokens + (n - 1) * settings.chunking.overlap
    turns = 1 + settings.llm.max_gleanings
    calls = chunks * turns
    # A gleaning turn re-sends the chunk and the previous answer.
    input_tokens = (
        calls * system_tokens + chunk_tokens * turns + chunks * (turns - 1) * OUTPUT_TOKENS_PER_CALL
    )
    output_tokens = calls * OUTPUT_TOKENS_PER_CALL
    price = settings.prices[settings.llm.model]
    usd = estimate_cost(1, input_tokens, output_tokens, price)
    return ExtractionEstimate(chunks, calls, input_tokens, output_tokens, usd)
