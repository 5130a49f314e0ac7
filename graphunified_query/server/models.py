"""Request and response bodies of the query service; FastAPI turns them into the OpenAPI schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from graphunified_query.query_input import MAX_QUESTION_CHARS, MAX_TOP_K

AUTO = "auto"


class QueryRequest(BaseModel):
    # A misspelt field ("topk") would otherwise be dropped and its default used without a word.
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    strategy: str = Field(AUTO, description="a name from GET /strategies, or auto (the router picks)")
    top_k: int | None = Field(
        None, ge=1, le=MAX_TOP_K, strict=True, description="contexts to retrieve (default: settings)"
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description='strategy parameters, e.g. {"mode": "local"}; GET /strategies lists each one\'s',
    )
    retrieve_only: bool = Field(False, strict=True, description="return the contexts, generate nothing")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, question: str) -> str:
        if not question.strip():
            raise PydanticCustomError("blank", "question must not be blank")
        return question


class Context(BaseModel):
    """One retrieved context: `RetrievalResult.as_dict`."""

    text: str
    score: float
    source: str = Field(description="citation label: file > section")
    chunk_id: str | None
    document_id: str | None
    metadata: dict[str, Any] = Field(description="kind, chunk_ids, entities, relationships, strategy details")


class QueryAnswer(BaseModel):
    """`QueryResponse.as_dict`: exactly what `python -m graphunified_query ask --json` prints."""

    answer: str | None = Field(description="null when only retrieving")
    strategy: str = Field(description="the strategy that answered (the routed one for auto)")
    contexts: list[Context]
    metadata: dict[str, Any] = Field(
        description="routing, latency_ms, tokens_used, cost_usd, llm_calls, cached (answer from the "
        "LLM cache: this call's tokens and cost are 0) and cached_tokens (what it cost when first asked), ..."
    )


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    home: str
    chunks: int
    strategies: list[str]


class StrategyInfo(BaseModel):
    name: str
    params: dict[str, dict[str, Any]] = Field(description="param name -> JSON schema of its value")


class Strategies(BaseModel):
    default: str = AUTO
    strategies: list[StrategyInfo]
