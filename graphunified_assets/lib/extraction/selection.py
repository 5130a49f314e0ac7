"""Which extractor a run uses: Claude when configured with a key, else the embedded default."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graphunified_assets.lib.extraction.records import Extractor
from graphunified_query.settings import Settings

if TYPE_CHECKING:
    from graphunified_query.providers.claude import ClaudeClient


class ExtractorConfigurationError(ValueError):
    pass


def extraction_provider(settings: Settings, anthropic_api_key: str | None) -> str:
    """'anthropic' or 'offline': 'auto' means Claude exactly when a key is configured."""
    if settings.llm.provider == "auto":
        return "anthropic" if anthropic_api_key else "offline"
    return settings.llm.provider


def make_extractor(settings: Settings, *, anthropic_api_key: str | None, llm_cache: Path) -> Extractor:
    if extraction_provider(settings, anthropic_api_key) == "offline":
        from graphunified_assets.lib.extraction.offline_extractor import OfflineExtractor

        return OfflineExtractor(entity_types=settings.extraction.entity_types)
    if not anthropic_api_key:
        raise ExtractorConfigurationError(
            "llm.provider is 'anthropic' but ANTHROPIC_API_KEY is not set; export it."
        )
    from graphunified_assets.lib.extraction.claude_extractor import ClaudeExtractor

    client = make_claude_client(settings, api_key=anthropic_api_key, llm_cache=llm_cache)
    return ClaudeExtractor(
        client, entity_types=settings.extraction.entity_types, max_gleanings=settings.llm.max_gleanings
    )


def make_claude_client(settings: Settings, *, api_key: str, llm_cache: Path) -> ClaudeClient:
    from graphunified_query.providers.claude import ClaudeClient
    from graphunified_query.providers.llm_cache import LLMCache

    return ClaudeClient(settings.llm, settings.prices, api_key=api_key, cache=LLMCache(llm_cache))
