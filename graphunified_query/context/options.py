"""Per-call context options: which ``ask`` params belong to the context pipeline, validated as settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from graphunified_query.settings import QuerySettings, SettingsError

# The QuerySettings fields the context pipeline reads; an `ask` param of that name overrides it.
PIPELINE_KEYS = frozenset(
    {
        "max_risk_level",
        "show_risky",
        "source_type",
        "has_code",
        "document_ids",
        "section_prefix",
        "link_expansion",
        "max_expanded_per_hit",
        "max_total_expanded",
        "expansion_decay",
        "context_window",
        "reserved_system_tokens",
        "reserved_query_tokens",
    }
)
# Also passed on to the strategy: `expanded` searches inside document_ids itself.
SHARED_KEYS = frozenset({"document_ids"})


def split_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(context pipeline overrides, strategy params) of one ``ask`` call."""
    overrides = {k: v for k, v in params.items() if k in PIPELINE_KEYS}
    strategy = {k: v for k, v in params.items() if k not in PIPELINE_KEYS or k in SHARED_KEYS}
    return overrides, strategy


def with_overrides(settings: QuerySettings, overrides: Mapping[str, Any]) -> QuerySettings:
    """``settings`` with per-call overrides, validated like the settings file (a typo is an error)."""
    if not overrides:
        return settings
    try:
        return QuerySettings.model_validate({**settings.model_dump(), **overrides})
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'query'}: {e['msg']}"
            for e in error.errors(include_url=False)
        )
        raise SettingsError(f"Invalid context option(s) {dict(overrides)}: {problems}.") from None
