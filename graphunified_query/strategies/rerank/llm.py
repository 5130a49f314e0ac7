"""`LLMReranker`: the LLM grades every passage 0-10 for the question, all in one call.

The grades come back through a forced tool call (structured JSON). What the model sends is read
leniently, because the shape sometimes slips: the list as a JSON string inside the tool input, a
plain text reply with fenced JSON, trailing commas, a reply cut off. When the reply still cannot
be read, or leaves passages ungraded, the model is told what was wrong (a tool error result) and
asked again (`providers.structured`), up to ``max_attempts`` calls in all; passages still
ungraded then score 0 and are listed in the outcome's ``unscored`` metadata. Scores are returned
divided by 10, in [0, 1], like the other rerankers'.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from graphunified_query.core.providers.cost import Usage, price_usd
from graphunified_query.core.providers.json_repair import loads_lenient
from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.llm_client import ContentResponse
from graphunified_query.core.providers.structured import call_structured, tool_payload, tool_request
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.rerank.rerank import RerankOutcome

log = logging.getLogger(__name__)
_PROMPT = Path(__file__).resolve().parents[2] / "prompts" / "rerank.md"
TOOL_NAME = "score_passages"
_TOOL = {
    "name": TOOL_NAME,
    "description": "Record a relevance score from 0 to 10 for every passage.",
    "input_schema": {
        "type": "object",
        "properties": {
            "scores": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer", "minimum": 0},
                        "score": {"type": "number", "minimum": 0, "maximum": 10},
                    },
                    "required": ["index", "score"],
                },
            }
        },
        "required": ["scores"],
    },
}
MAX_SCORE = 10.0


class LLMReranker:
    def __init__(
        self,
        client: LLM,
        *,
        max_chars_per_passage: int = 2000,
        max_attempts: int = 2,
    ) -> None:
        self.client = client
        self.name = client.label
        self.max_chars_per_passage = max_chars_per_passage  # bounds the prompt for long contexts
        self.max_attempts = max(max_attempts, 1)
        instructions = _PROMPT.read_text(encoding="utf-8")
        self._system = [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.score_with_cost(query, texts).scores

    def score_with_cost(self, query: str, texts: Sequence[str]) -> RerankOutcome:
        if not texts:
            return RerankOutcome([])
        messages: list[dict[str, Any]] = [{"role": "user", "content": self._prompt(query, texts)}]
        # ~20 tokens per {"index", "score"} item
        request = tool_request(self._system, messages, _TOOL, max_tokens=256 + 24 * len(texts))
        graded: dict[int, float] = {}

        def check(response: ContentResponse) -> tuple[dict[int, float] | None, str]:
            # Grades carry over between attempts: a repair may send only the missing ones.
            try:
                graded.update(parse_scores(_payload(response), len(texts)))
            except ValueError as error:
                return None, f"Your scores could not be used: {error}."
            missing = [i for i in range(len(texts)) if i not in graded]
            if missing:
                return None, f"Your scores could not be used: no score for passages {missing}."
            return graded, ""

        outcome = call_structured(self.client, request, check, repairs=self.max_attempts - 1)
        if outcome.error is not None:
            raise outcome.error
        if outcome.problem:
            log.warning(
                "%s reranker: %s after %d attempts; those passages score 0",
                self.client.label,
                outcome.problem,
                len(outcome.requests),
            )
        fresh = [r for r in outcome.responses if not r.cached]
        usage = sum((r.usage for r in fresh), Usage())
        unscored = [i for i in range(len(texts)) if i not in graded]
        return RerankOutcome(
            [graded.get(i, 0.0) / MAX_SCORE for i in range(len(texts))],
            usage=usage,
            llm_calls=len(fresh),
            cost_usd=price_usd(usage, self.client.price),
            metadata={"unscored": unscored} if unscored else {},
        )

    def _prompt(self, query: str, texts: Sequence[str]) -> str:
        passages = "\n\n".join(
            f'<passage index="{i}">\n{text[: self.max_chars_per_passage]}\n</passage>'
            for i, text in enumerate(texts)
        )
        return f"Question: {query}\n\n{len(texts)} passages, indexed 0 to {len(texts) - 1}:\n\n{passages}"


def build(context: RetrieverContext, *, environ: Mapping[str, str]) -> LLMReranker:
    """The registry's factory (`rerank/registry.py`): the engine's LLM, whichever provider it is."""
    if context.llm is None:
        raise ValueError(
            "reranker 'llm' needs an LLM: set ANTHROPIC_API_KEY (or llm.provider: openai_compatible)"
        )
    return LLMReranker(context.llm)


def _payload(response: ContentResponse) -> Any:
    """The tool input when the model called the tool, else whatever JSON its text holds."""
    payload = tool_payload(response, TOOL_NAME)
    if payload is not None:
        return payload
    if not response.text.strip():
        raise ValueError("the reply had neither a score_passages call nor text")
    return response.text


def parse_scores(payload: Any, n: int) -> dict[int, float]:
    """Passage index -> score in [0, 10], from any of the shapes models send; ValueError if none.

    Accepted: ``{"scores": [{"index": 0, "score": 7}, ...]}`` (the tool's schema), the list alone,
    the list as a JSON string, a list of n bare numbers in passage order, or ``{"0": 7, ...}``.
    """
    if isinstance(payload, str):
        payload = loads_lenient(payload)
    if isinstance(payload, Mapping) and "scores" in payload:
        payload = payload["scores"]
        if isinstance(payload, str):
            payload = loads_lenient(payload)
    items: list[tuple[Any, Any]]
    if isinstance(payload, Mapping):
        items = list(payload.items())
    elif isinstance(payload, list) and payload and all(_number(x) is not None for x in payload):
        if len(payload) != n:
            raise ValueError(f"{len(payload)} bare scores for {n} passages")
        items = list(enumerate(payload))
    elif isinstance(payload, list):
        items = [
            (item.get("index", item.get("id")), item.get("score", item.get("relevance")))
            for item in payload
            if isinstance(item, Mapping)
        ]
    else:
        raise ValueError(f"scores in an unexpected shape ({type(payload).__name__})")
    graded: dict[int, float] = {}
    for index, score in items:
        position, value = _number(index), _number(score)
        if position is None or value is None or position != int(position) or not 0 <= position < n:
            continue  # one malformed item is skipped; a missing passage triggers the retry
        graded[int(position)] = min(max(value, 0.0), MAX_SCORE)
    if not graded:
        raise ValueError("no usable {index, score} pair in the reply")
    return graded


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
