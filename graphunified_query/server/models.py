"""Request and response bodies of the query service; FastAPI turns them into the OpenAPI schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from graphunified_query.engine.evidence import Evidence, EvidenceEdge, EvidenceNode
from graphunified_query.engine.request import (
    QueryRequest,
)  # the body of /ask and /retrieve, shared by every entry point
from graphunified_query.strategies.registry import AUTO

__all__ = [
    "AUTO",
    "Context",
    "EvalReport",
    "Evidence",
    "EvidenceEdge",
    "EvidenceNode",
    "Health",
    "QueryAnswer",
    "QueryRequest",
    "Strategies",
    "StrategyInfo",
]


class Context(BaseModel):
    """One retrieved context: `RetrievalResult.as_dict`."""

    text: str
    score: float
    source: str = Field(description="citation label: file > section")
    chunk_id: str | None
    document_id: str | None
    metadata: dict[str, Any] = Field(description="kind, chunk_ids, entities, relationships, strategy details")


class QueryAnswer(BaseModel):
    """`QueryResponse.as_dict`: exactly what `graphunified ask --json` prints for the same request."""

    answer: str | None = Field(description="null when only retrieving")
    strategy: str = Field(description="the strategy that answered (the routed one for auto)")
    contexts: list[Context] = Field(description="the strategy's own contexts, at most top_k")
    expanded_contexts: list[Context] = Field(
        default_factory=list,
        description="link neighbours of those contexts (metadata expanded_from), sent after them",
    )
    metadata: dict[str, Any] = Field(
        description="routing, latency_ms, tokens_used, cost_usd, llm_calls, cached (answer from the "
        "LLM cache: this call's tokens and cost are 0) and cached_tokens (what it cost when first asked), ..."
    )
    evidence: Evidence | None = Field(
        None,
        description="only when the request asks for it (evidence: true): the entities each context "
        "is about or mentions, and the relationships between them",
    )


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    home: str
    chunks: int
    generation: int = Field(0, description="The published generation served (0: an unpublished home).")
    strategies: list[str]


class StrategyInfo(BaseModel):
    name: str
    tier: str = Field(description="core (compared side by side), extra, or composable")
    summary: str
    params: dict[str, dict[str, Any]] = Field(
        description="param name -> JSON schema of its value, with this home's default (settings > built-in)"
    )


class Strategies(BaseModel):
    default: str = AUTO
    strategies: list[StrategyInfo]
    router: dict[str, Any] = Field(
        default_factory=dict,
        description="which router `auto` uses: learned (with its model's file, classes and "
        "cross-validation figures) or rule (with why a stored model was refused, if one was)",
    )


class EvalReport(BaseModel):
    """The home's latest evaluation (`<home>/eval/`, written by `eval`), for the web page."""

    available: bool = Field(description="false when the home has no eval/results.json")
    note: str = Field("", description="why there is no report, and what to run")
    dataset: str = ""
    questions_evaluated: int = 0
    strategies: dict[str, dict[str, float | int | str | None]] = Field(
        default_factory=dict, description="strategy -> its scalar figures in results.json"
    )
    report: str = Field("", description="report.md as written")
    plots: list[str] = Field(default_factory=list, description="PNG names, served at /eval/plots/{name}")
