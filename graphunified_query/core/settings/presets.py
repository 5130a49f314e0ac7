"""Named starting points for `settings.yaml`: partial settings that validate through the model.

A preset only holds what differs from the defaults; `python -m graphunified_assets init --preset
NAME` writes it as a commented file (every other setting listed, commented out, with its default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI's parser reads PRESETS' names without loading the settings model
    from graphunified_query.core.settings.model import Settings

PRESETS: dict[str, dict[str, Any]] = {
    # Offline without a key; with ANTHROPIC_API_KEY a Haiku-class model, no gleaning, extractive
    # community reports (no report calls), local embeddings and a small budget cap.
    "low-cost": {
        "embedding": {"provider": "local"},
        "llm": {
            "provider": "auto",
            "model": "claude-haiku-4-5",
            "max_gleanings": 0,
            "llm_reports": False,
            "budget_usd": 5.0,
        },
    },
    # The richest graph for comparing the six strategies: Claude Sonnet when a key is set, two
    # gleaning turns, LLM reports, MiniLM fused with multilingual-e5-small (README, "Embedding
    # models": better dense recall, several times the embedding time); evaluate with
    # `python -m graphunified_query eval SET --strategies all --generate`.
    "research": {
        "embedding": {"models": [{"name": "all-MiniLM-L6-v2"}, {"name": "multilingual-e5-small-q4"}]},
        "llm": {"provider": "auto", "model": "claude-sonnet-4-5", "max_gleanings": 2, "llm_reports": True},
        "query": {"top_k": 10},
    },
    # Claude required (fails fast without a key), prompt caching (always on) and the Batches API
    # at half price, a budget cap, JSON logs for the log pipeline.
    "production": {
        "llm": {
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "max_gleanings": 1,
            "use_batches": True,
            "budget_usd": 50.0,
        },
        "logging": {"format": "json", "level": "INFO"},
    },
}


def preset_values(name: str | None) -> dict[str, Any]:
    """The preset's overrides (empty for None: the defaults); SettingsError for an unknown name."""
    from graphunified_query.core.settings.model import SettingsError

    if name is None:
        return {}
    if name not in PRESETS:
        raise SettingsError(f"Unknown preset {name!r}; choose one of: {', '.join(PRESETS)}.")
    return PRESETS[name]


def preset_settings(name: str | None) -> Settings:
    """The preset validated through the settings model."""
    from pydantic import ValidationError

    from graphunified_query.core.settings.model import Settings, SettingsError

    try:
        return Settings.model_validate(preset_values(name))
    except ValidationError as error:  # a preset that drifted from the model: a bug, said plainly
        raise SettingsError(f"Preset {name!r} does not validate: {error}") from None
