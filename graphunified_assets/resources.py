"""Resources: where the data home is, the settings, and the model providers built from them.

Secrets never pass through settings: API keys reach the providers only as Dagster ``EnvVar``s,
which the UI shows by name, never by value.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from graphunified_assets.lib.extraction.records import Extractor
from graphunified_assets.lib.extraction.selection import (
    OPENAI_COMPATIBLE,
    extraction_provider,
    make_extractor,
    make_llm_client,
)
from graphunified_assets.lib.reports.build import Reporter
from graphunified_query.layout import HomeLayout
from graphunified_query.providers import CachedEmbedder, EmbeddingCache, make_embedder
from graphunified_query.settings import Settings, load_settings

HOME_ENV = "GRAPHUNIFIED_HOME"
INPUT_ENV = "GRAPHUNIFIED_INPUT"
SECRET_ENV_NAMES = ("VOYAGE_API_KEY", "ANTHROPIC_API_KEY")


class GraphUnifiedResource(dg.ConfigurableResource):
    """The data home, its settings and its model providers."""

    home: str = "data"
    input_dir: str | None = None  # overrides settings.storage.input_dir
    voyage_api_key: str | None = None
    anthropic_api_key: str | None = None

    _settings: Settings | None = PrivateAttr(default=None)
    _embedder: CachedEmbedder | None = PrivateAttr(default=None)

    @property
    def layout(self) -> HomeLayout:
        return HomeLayout.at(self.home)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.layout.home)
        return self._settings

    @property
    def input_path(self) -> Path:
        return Path(self.input_dir) if self.input_dir else self.settings.storage.input_dir

    def embedder(self) -> CachedEmbedder:
        """The configured embedder behind the content-hash cache, built once per run."""
        if self._embedder is None:
            environ = {"VOYAGE_API_KEY": self.voyage_api_key} if self.voyage_api_key else {}
            provider = make_embedder(self.settings.embedding, environ)
            self._embedder = CachedEmbedder(provider, EmbeddingCache(self.layout.embedding_cache))
        return self._embedder

    def uses_claude(self) -> bool:
        return extraction_provider(self.settings, self.anthropic_api_key) == "anthropic"

    def summarizer(self) -> Callable[[str, list[str]], str] | None:
        """LLM description summaries when an LLM is configured; None means extractive."""
        client = make_llm_client(
            self.settings, anthropic_api_key=self.anthropic_api_key, llm_cache=self.layout.llm_cache
        )
        if client is None:
            return None
        from graphunified_assets.lib.extraction.claude_summarizer import ClaudeSummarizer

        return ClaudeSummarizer(client)

    def reporter(self) -> Reporter | None:
        """The LLM community reporter when an LLM is configured and `llm.llm_reports` is on; None
        means extractive reports."""
        if not self.settings.llm.llm_reports:
            return None
        client = make_llm_client(
            self.settings, anthropic_api_key=self.anthropic_api_key, llm_cache=self.layout.llm_cache
        )
        if client is None:
            return None
        if self.settings.llm.provider == OPENAI_COMPATIBLE:
            from graphunified_assets.lib.reports.openai_reporter import OpenAICompatibleReporter

            return OpenAICompatibleReporter(client)
        from graphunified_assets.lib.reports.claude_reporter import ClaudeReporter

        return ClaudeReporter(client)

    def extractor(self) -> Extractor:
        """The configured extractor: Claude (or an OpenAI-compatible server) behind its LLM cache,
        or the offline spaCy default behind the content-addressed extraction cache."""
        return make_extractor(
            self.settings,
            anthropic_api_key=self.anthropic_api_key,
            llm_cache=self.layout.llm_cache,
            extraction_cache=self.layout.extraction_cache,
        )


def _secret(name: str) -> dg.EnvVar | None:
    # Only reference variables that exist: Dagster refuses to start a run on an unset EnvVar.
    return dg.EnvVar(name) if os.environ.get(name) else None


def default_resource() -> GraphUnifiedResource:
    """The resource the code location is loaded with (`dagster dev`, the UI, sensors)."""
    return GraphUnifiedResource(
        home=os.environ.get(HOME_ENV, "data"),
        input_dir=os.environ.get(INPUT_ENV),
        voyage_api_key=_secret("VOYAGE_API_KEY"),
        anthropic_api_key=_secret("ANTHROPIC_API_KEY"),
    )
