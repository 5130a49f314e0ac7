"""Which extractor and LLM client a run uses: Claude with a key, an OpenAI-compatible server when
configured, else the embedded offline default."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphunified_assets.lib.extraction.records import Extractor
from graphunified_query.settings import Settings

if TYPE_CHECKING:
    from graphunified_query.providers.claude import ClaudeClient
    from graphunified_query.providers.openai_compatible import OpenAICompatibleClient

OPENAI_COMPATIBLE = "openai_compatible"


class ExtractorConfigurationError(ValueError):
    pass


def extraction_provider(settings: Settings, anthropic_api_key: str | None) -> str:
    """'anthropic', 'openai_compatible' or 'offline': 'auto' means Claude exactly when a key is set."""
    if settings.llm.provider == "auto":
        return "anthropic" if anthropic_api_key else "offline"
    return settings.llm.provider


def make_extractor(
    settings: Settings,
    *,
    anthropic_api_key: str | None,
    llm_cache: Path,
    extraction_cache: Path | None = None,
) -> Extractor:
    """``extraction_cache``: where the offline extractor's results are kept by content (the LLM
    extractors have their response cache); None extracts every chunk afresh (evaluation)."""
    provider = extraction_provider(settings, anthropic_api_key)
    if provider == "offline":
        return _offline_extractor(settings, extraction_cache)
    if provider == OPENAI_COMPATIBLE:
        from graphunified_assets.lib.extraction.openai_extractor import OpenAICompatibleExtractor
        from graphunified_assets.lib.extraction.tuned_prompts import load_prompts

        return OpenAICompatibleExtractor(
            make_openai_client(settings, llm_cache=llm_cache),
            entity_types=settings.extraction.entity_types,
            max_gleanings=settings.llm.max_gleanings,
            prompts=load_prompts(settings.extraction),  # tuned prompt files when configured
        )
    if not anthropic_api_key:
        raise ExtractorConfigurationError(
            "llm.provider is 'anthropic' but ANTHROPIC_API_KEY is not set; export it."
        )
    from graphunified_assets.lib.extraction.claude_extractor import ClaudeExtractor
    from graphunified_assets.lib.extraction.tuned_prompts import load_prompts

    client = make_claude_client(settings, api_key=anthropic_api_key, llm_cache=llm_cache)
    return ClaudeExtractor(
        client,
        entity_types=settings.extraction.entity_types,
        max_gleanings=settings.llm.max_gleanings,
        prompts=load_prompts(settings.extraction),  # tuned prompt files when configured
    )


def _offline_extractor(settings: Settings, cache: Path | None) -> Extractor:
    from importlib.metadata import version

    from graphunified_assets.lib.extraction import offline_extractor, offline_facts
    from graphunified_assets.lib.extraction.extraction_cache import CachedExtractor, source_digest
    from graphunified_query import spacy_text
    from graphunified_query.providers.llm_cache import LLMCache

    extractor = offline_extractor.OfflineExtractor(
        entity_types=settings.extraction.entity_types, concept_heads=settings.extraction.concept_heads
    )
    if cache is None:
        return extractor
    fingerprint = {
        "entity_types": sorted(t.upper() for t in settings.extraction.entity_types),
        "concept_heads": sorted(settings.extraction.concept_heads),
        "code": source_digest(offline_extractor, offline_facts, spacy_text),
        "model": f"{spacy_text.DEFAULT_MODEL}=={version(spacy_text.DEFAULT_MODEL)}",
    }
    return CachedExtractor(extractor, LLMCache(cache), fingerprint=fingerprint)


def make_llm_client(settings: Settings, *, anthropic_api_key: str | None, llm_cache: Path) -> Any:
    """The client for summaries and reports: Claude, OpenAI-compatible, or None when offline."""
    provider = extraction_provider(settings, anthropic_api_key)
    if provider == OPENAI_COMPATIBLE:
        return make_openai_client(settings, llm_cache=llm_cache)
    if provider == "anthropic" and anthropic_api_key:
        return make_claude_client(settings, api_key=anthropic_api_key, llm_cache=llm_cache)
    return None


def make_claude_client(settings: Settings, *, api_key: str, llm_cache: Path) -> ClaudeClient:
    from graphunified_query.providers.claude import ClaudeClient
    from graphunified_query.providers.llm_cache import LLMCache

    return ClaudeClient(settings.llm, settings.prices, api_key=api_key, cache=LLMCache(llm_cache))


def make_openai_client(settings: Settings, *, llm_cache: Path) -> OpenAICompatibleClient:
    """The key, if any, comes from OPENAI_API_KEY inside the client; it never passes through here."""
    from graphunified_query.providers.llm_cache import LLMCache
    from graphunified_query.providers.openai_compatible import OpenAICompatibleClient

    return OpenAICompatibleClient(settings.llm, settings.prices, cache=LLMCache(llm_cache))
