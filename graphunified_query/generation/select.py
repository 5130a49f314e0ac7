"""Which generator answers: the configured LLM (providers/registry.py), else the offline extractive one."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.core.providers.registry import OFFLINE, provider_name, resolve_llm
from graphunified_query.core.settings.model import Settings
from graphunified_query.generation.extractive import ExtractiveGenerator
from graphunified_query.generation.llm_generator import LLMGenerator
from graphunified_query.strategies.results import GeneratedAnswer, RetrievalResult

if TYPE_CHECKING:
    from graphunified_query.core.providers.llm import LLM

ClientFactory = Callable[[Settings], "LLM"]


class Generator(Protocol):
    def generate(
        self, question: str, results: Sequence[RetrievalResult], *, budget_tokens: int | None = None
    ) -> GeneratedAnswer:
        """An answer grounded in ``results`` packed into ``budget_tokens`` (None: the settings'
        context budget); ``supported=False`` when they do not answer it."""
        ...


def generator_for(llm: LLM | None, settings: Settings, embedder: Embedder) -> Generator:
    """The answer generator for a run's LLM; None means offline (extractive answers)."""
    if llm is None:
        return ExtractiveGenerator(embedder, settings.query)
    return LLMGenerator(llm, settings.query)


def make_generator(
    settings: Settings,
    *,
    embedder: Embedder,
    client_factory: ClientFactory | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Generator:
    """The generator `llm.provider` asks for (no LLM cache); ``client_factory`` replaces the
    registry's client for tests, when a provider is configured."""
    llm: LLM | None = None
    if provider_name(settings, environ) != OFFLINE:
        llm = (
            client_factory(settings) if client_factory else resolve_llm(settings, cache=None, environ=environ)
        )
    return generator_for(llm, settings, embedder)
