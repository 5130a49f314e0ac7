"""Which generator answers: Claude when it is configured, else the offline extractive one."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from graphunified_query.generation.claude_generator import ClaudeGenerator
from graphunified_query.generation.extractive import ExtractiveGenerator
from graphunified_query.generation.openai_generator import (
    OpenAICompatibleGenerator,
    openai_client,
    openai_configured,
)
from graphunified_query.providers.embedding import Embedder
from graphunified_query.results import GeneratedAnswer, RetrievalResult
from graphunified_query.settings import Settings

if TYPE_CHECKING:
    from graphunified_query.providers.claude import ClaudeClient

API_KEY_VARIABLE = "ANTHROPIC_API_KEY"  # same name as providers.claude, without importing the SDK
ClientFactory = Callable[[Settings], "ClaudeClient"]


class Generator(Protocol):
    def generate(self, question: str, results: Sequence[RetrievalResult]) -> GeneratedAnswer:
        """An answer grounded in ``results``; ``supported=False`` when they do not answer it."""
        ...


def claude_configured(settings: Settings, environ: Mapping[str, str] = os.environ) -> bool:
    """The one rule for the query side: Claude when asked for, or on 'auto' with a key."""
    if settings.llm.provider == "auto":
        return bool(environ.get(API_KEY_VARIABLE, "").strip())
    return settings.llm.provider == "anthropic"


def make_generator(
    settings: Settings,
    *,
    embedder: Embedder,
    client_factory: ClientFactory | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Generator:
    """Claude for llm.provider 'anthropic', or 'auto' with ANTHROPIC_API_KEY set; the model behind
    llm.openai_base_url for 'openai_compatible'; else extractive."""
    if openai_configured(settings):
        client = (
            client_factory(settings)
            if client_factory
            else openai_client(settings, llm_cache=None, environ=environ)
        )
        return OpenAICompatibleGenerator(client, settings.query)  # type: ignore[arg-type]  # same interface
    if not claude_configured(settings, environ):
        return ExtractiveGenerator(embedder, settings.query)
    return ClaudeGenerator((client_factory or _default_client)(settings), settings.query)


def _default_client(settings: Settings) -> ClaudeClient:
    from graphunified_query.providers.claude import ClaudeClient  # the SDK is slow to import

    return ClaudeClient.from_settings(settings)
