"""Which extractor a run uses: the one LLM extractor over the run's LLM (providers/registry.py
decides which, if any), else the embedded offline default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from graphunified_assets.lib.extraction.records import Extractor
from graphunified_query.core.providers.llm_client import LLMError
from graphunified_query.core.providers.registry import resolve_llm
from graphunified_query.core.settings.model import Settings

if TYPE_CHECKING:
    from graphunified_query.core.providers.llm import LLM


class ExtractorConfigurationError(ValueError):
    pass


def make_llm(settings: Settings, *, llm_cache: Path, environ: Mapping[str, str] = os.environ) -> LLM | None:
    """The run's LLM (None offline); a misconfiguration is an `ExtractorConfigurationError`."""
    try:
        return resolve_llm(settings, cache=llm_cache, environ=environ)
    except LLMError as error:
        raise ExtractorConfigurationError(str(error)) from None


def make_extractor(
    settings: Settings,
    *,
    llm_cache: Path,
    extraction_cache: Path | None = None,
    environ: Mapping[str, str] = os.environ,
    llm: LLM | None = None,
    side_by_side: int = 1,
) -> Extractor:
    """``extraction_cache``: where the offline extractor's results are kept by content (the LLM
    extractor has the LLM response cache); None extracts every chunk afresh (evaluation).
    ``llm``: an LLM already built for this run (else resolved from the settings). ``side_by_side``:
    steps computing at once on the machine, which share its cores (`ExtractionSettings.processes`)."""
    llm = llm if llm is not None else make_llm(settings, llm_cache=llm_cache, environ=environ)
    if llm is None:
        return _offline_extractor(settings, extraction_cache, side_by_side)
    from graphunified_assets.lib.extraction.llm_extractor import LLMExtractor
    from graphunified_assets.lib.extraction.tuned_prompts import load_prompts

    return LLMExtractor(
        llm,
        entity_types=settings.extraction.entity_types,
        max_gleanings=settings.llm.max_gleanings,
        temperature=settings.llm.temperature,
        prompts=load_prompts(settings.extraction),  # tuned prompt files when configured
    )


def _offline_extractor(settings: Settings, cache: Path | None, side_by_side: int) -> Extractor:
    from importlib.metadata import version

    from graphunified_assets.lib.extraction import offline_extractor, offline_facts
    from graphunified_assets.lib.extraction.extraction_cache import CachedExtractor, source_digest
    from graphunified_query.core.providers.llm_cache import LLMCache
    from graphunified_query.core.text import spacy_text

    extractor = offline_extractor.OfflineExtractor(
        entity_types=settings.extraction.entity_types,
        concept_heads=settings.extraction.concept_heads,
        processes=settings.extraction.processes(side_by_side),
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
