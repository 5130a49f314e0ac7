"""Settings of the query side (`query.*`): how many contexts, which filters and budget, and the
answer call. Its own module because every retriever and the context pipeline read this section
alone; `settings.Settings` holds it as `query`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from graphunified_query.core.risk import RiskLevel
from graphunified_query.core.settings.section import Section


class GenerationSettings(Section):
    """The answer call; unset values fall back to llm.model and query.answer_max_tokens."""

    model: str | None = Field(None, description="Model that writes answers (default: llm.model).")
    max_tokens: int | None = Field(
        None, ge=16, description="Longest answer (default: query.answer_max_tokens)."
    )
    temperature: float | None = Field(
        0.3,
        ge=0.0,
        le=2.0,
        allow_inf_nan=False,
        description="Sampling temperature of answers (the specification's 0.3; null: the model's own).",
    )


class RouterSettings(Section):
    """How `auto` picks a strategy."""

    learned: Literal["auto", "off"] = Field(
        "auto",
        description="auto: use the learned router stored in <home>/router/learned.json (train-router) "
        "when present, the rule router otherwise; off: always the rule router.",
    )


# Marks a field the context pipeline reads and a request may override for one call
# (`ask(..., max_risk_level="high")`, `--param`); `context/options.py` derives the list from it.
PER_CALL: dict[str, Any] = {"per_call": True}


class ResultCacheSettings(Section):
    """The query path's result cache (`engine.result_cache`): one for every strategy."""

    enabled: bool = Field(True, description="Reuse the result of the same request on the same generation.")
    ttl_seconds: float = Field(3600.0, ge=0, description="How long a cached result is reused (0: no cache).")
    max_entries: int = Field(256, ge=1, description="Results kept; the least recently used go first.")


class QuerySettings(Section):
    top_k: int = Field(
        10,
        ge=1,
        le=1000,
        description="Most contexts a strategy returns (a hard cap; link expansion comes beside them).",
    )
    default_strategy: str = Field(
        "auto", description="Strategy of a request that names none: a registered name, or auto (routed)."
    )
    generation: GenerationSettings = GenerationSettings()
    router: RouterSettings = RouterSettings()
    context_window: int = Field(
        8000,
        ge=256,
        description="Tokens of the answer prompt: contexts plus the reserved system and query parts.",
        json_schema_extra=PER_CALL,
    )
    answer_max_tokens: int = Field(1024, ge=64, description="Longest answer Claude may write.")
    map_concurrency: int = Field(4, ge=1, description="Parallel map calls of global search.")
    cache: ResultCacheSettings = ResultCacheSettings()
    # The context pipeline between retrieval and generation (graphunified_query.context).
    max_risk_level: RiskLevel = Field(
        "medium",
        description="Contexts from chunks flagged above this level are left out of the prompt.",
        json_schema_extra=PER_CALL,
    )
    show_risky: bool = Field(
        False,
        description="Admin/debug: keep every context whatever its risk, with the risk marked.",
        json_schema_extra=PER_CALL,
    )
    source_type: tuple[str, ...] = Field(
        (),
        description="Only contexts from these document types (md, txt, pdf, jsonl); empty: any.",
        json_schema_extra=PER_CALL,
    )
    has_code: bool | None = Field(
        None,
        description="True: only contexts containing code; False: only those without; None: any.",
        json_schema_extra=PER_CALL,
    )
    document_ids: tuple[str, ...] = Field(
        (), description="Only contexts from these documents; empty: any.", json_schema_extra=PER_CALL
    )
    section_prefix: str = Field(
        "",
        description="Only contexts whose section path starts with this, e.g. 'Guide > Install'.",
        json_schema_extra=PER_CALL,
    )
    link_expansion: bool = Field(
        True,
        description="Add chunks linked from a hit (Markdown/wiki links, the same section's neighbours).",
        json_schema_extra=PER_CALL,
    )
    max_expanded_per_hit: int = Field(
        2, ge=0, description="Linked chunks one hit may add.", json_schema_extra=PER_CALL
    )
    max_total_expanded: int = Field(
        16,
        ge=0,
        description="Linked chunks added per query in all, beside top_k.",
        json_schema_extra=PER_CALL,
    )
    expansion_decay: float = Field(
        0.9,
        gt=0,
        le=1,
        description="A linked chunk's score: this times its hit's.",
        json_schema_extra=PER_CALL,
    )
    reserved_system_tokens: int = Field(
        1000,
        ge=0,
        description="Part of context_window kept for the system prompt (instructions).",
        json_schema_extra=PER_CALL,
    )
    reserved_query_tokens: int = Field(
        256,
        ge=0,
        description="Part of context_window kept for the question and the prompt's framing.",
        json_schema_extra=PER_CALL,
    )

    @field_validator("source_type", "document_ids", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        # `--param source_type=md` arrives as a plain string; a lone value means a list of one.
        return (value,) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _room_for_contexts(self) -> QuerySettings:
        if self.reserved_system_tokens + self.reserved_query_tokens >= self.context_window:
            raise ValueError(
                f"query.reserved_system_tokens ({self.reserved_system_tokens}) + "
                f"query.reserved_query_tokens ({self.reserved_query_tokens}) must leave room in "
                f"query.context_window ({self.context_window})"
            )
        return self
