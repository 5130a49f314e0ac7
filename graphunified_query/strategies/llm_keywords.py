"""LightRAG's query keywords from the configured LLM: low-level (entities) and high-level (themes).

LightRAG asks its LLM to split each question into the entities it names and the themes it is
about; this is that role, through the project's one structured-output path (a forced tool call,
validated, repaired once; `providers.structured`). The LLM client caches responses by request, so
asking the same question again costs nothing. The offline split is `query_keywords`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.structured import call_structured, model_check, tool_request
from graphunified_query.strategies.query_keywords import QueryKeywords

_PROMPT = Path(__file__).resolve().parents[1] / "prompts" / "query_keywords.md"
TOOL_NAME = "record_query_keywords"
_MAX = 8


class KeywordAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    low_level_keywords: list[str] = Field(default_factory=list, max_length=20)
    high_level_keywords: list[str] = Field(default_factory=list, max_length=20)

    def keywords(self) -> QueryKeywords:
        return QueryKeywords(_clean(self.low_level_keywords), _clean(self.high_level_keywords, lower=True))


_TOOL: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": "Record the question's low-level (entity) and high-level (theme) keywords.",
    "input_schema": KeywordAnswer.model_json_schema(),
}
_check = model_check(KeywordAnswer, TOOL_NAME, "Invalid keywords")


def llm_keywords(llm: LLM, question: str) -> QueryKeywords:
    """The LLM's split of ``question``; raises the `LLMError` of a failed call, and ValueError when
    the answer is still invalid after one repair."""
    system = [{"type": "text", "text": _PROMPT.read_text(encoding="utf-8")}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Question: {question}"}]
    outcome = call_structured(llm, tool_request(system, messages, _TOOL, max_tokens=300), _check, repairs=1)
    if outcome.error is not None:
        raise outcome.error
    if outcome.value is None or outcome.problem:
        raise ValueError(f"{llm.label} gave no usable query keywords: {outcome.problem}")
    return outcome.value.keywords()


def _clean(items: list[str], *, lower: bool = False) -> tuple[str, ...]:
    kept = (" ".join(str(k).split()) for k in items)
    return tuple(dict.fromkeys(k.lower() if lower else k for k in kept if k))[:_MAX]
