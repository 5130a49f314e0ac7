"""Answers (and the global map) from a model behind an OpenAI-compatible server.

The Claude generator's packing, templates and citations as they are: the client takes the same
requests. The subclass exists so results and evaluations name the generator that really answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from graphunified_query.generation.claude_generator import ClaudeGenerator
from graphunified_query.settings import Settings

if TYPE_CHECKING:  # the openai SDK costs ~0.6 s to import; only callers that use it pay
    from graphunified_query.providers.openai_compatible import OpenAICompatibleClient

OPENAI_COMPATIBLE = "openai_compatible"


class OpenAICompatibleGenerator(ClaudeGenerator):
    pass


def openai_configured(settings: Settings) -> bool:
    return settings.llm.provider == OPENAI_COMPATIBLE


def openai_client(
    settings: Settings, *, llm_cache: Path | None, environ: Mapping[str, str]
) -> OpenAICompatibleClient:
    """The query side's client: the key (optional) from OPENAI_API_KEY in ``environ``."""
    from graphunified_query.providers.llm_cache import LLMCache
    from graphunified_query.providers.openai_compatible import API_KEY_VARIABLE, OpenAICompatibleClient

    key = environ.get(API_KEY_VARIABLE, "").strip() or None
    cache = LLMCache(llm_cache) if llm_cache is not None else None
    return OpenAICompatibleClient(settings.llm, settings.prices, api_key=key, cache=cache)
