"""Resources: where the data home is, the settings, and the model providers built from them.

Secrets never pass through settings: API keys reach the providers only as Dagster ``EnvVar``s,
which the UI shows by name, never by value.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import PrivateAttr

from graphunified_assets.defs.executors import model_steps_side_by_side
from graphunified_assets.lib.extraction.records import Extractor
from graphunified_assets.lib.extraction.selection import make_extractor, make_llm
from graphunified_assets.lib.reports.build import Reporter
from graphunified_assets.ops.run_home import WrongHome, run_home
from graphunified_assets.ops.worker import HOME_ENV
from graphunified_query.core.artifacts import needed_artifacts
from graphunified_query.core.home_input import InputChoice, choose_input
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.plugins import VOYAGE_KEY
from graphunified_query.core.providers import CachedEmbedder, EmbeddingCache, make_embedder
from graphunified_query.core.providers.embedding import resolved_provider
from graphunified_query.core.providers.registry import ANTHROPIC_KEY, provider_name
from graphunified_query.core.settings.model import Settings, load_settings

if TYPE_CHECKING:
    from graphunified_query.core.providers.llm import LLM

INPUT_ENV = "GRAPHUNIFIED_INPUT"


class GraphUnifiedResource(dg.ConfigurableResource):
    """The data home, its settings and its model providers."""

    home: str = "data"
    input_dir: str | None = None  # --input / GRAPHUNIFIED_INPUT; else the home's recorded input folder
    voyage_api_key: str | None = None
    anthropic_api_key: str | None = None

    _settings: Settings | None = PrivateAttr(default=None)
    _embedder: CachedEmbedder | None = PrivateAttr(default=None)
    _run_layout: HomeLayout | None = PrivateAttr(default=None)
    _side_by_side: int = PrivateAttr(default=1)  # model steps computing at once on this machine

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # In a step the home is the run's (graphunified_assets/ops/run_home.py), not this process's.
        layout = layout_for_run(context, self.home)
        run_config = context.dagster_run.run_config if context.dagster_run else {}
        side_by_side = model_steps_side_by_side(run_config, context.instance, os.environ)
        if layout != self.layout or side_by_side != self._side_by_side:
            self._settings, self._embedder = None, None
        self._run_layout, self._side_by_side = layout, side_by_side

    @property
    def layout(self) -> HomeLayout:
        return self._run_layout or HomeLayout.at(self.home)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.layout.home)
        return self._settings

    @property
    def input_path(self) -> Path:
        return self.input_choice().path

    def input_choice(self) -> InputChoice:
        """--input, else storage.input_dir set in settings.yaml, else the recorded folder, else the
        default of storage.input_dir (a fresh home); whether it departs from the recorded one."""
        storage = self.settings.storage
        # --input / GRAPHUNIFIED_INPUT name the configured home's folder, not another run's home's.
        own_home = self._run_layout is None or self._run_layout == HomeLayout.at(self.home)
        requested = Path(self.input_dir) if self.input_dir and own_home else None
        if requested is None and "input_dir" in storage.model_fields_set:
            requested = storage.input_dir
        return choose_input(self.layout, requested, storage.input_dir)

    def builds(self, artifact: str) -> bool:
        """Whether a strategy in `strategies.enabled` reads ``artifact`` (a `core/artifacts.py` name
        some strategy declares in `Strategy.reads`); when none does, its asset writes it empty."""
        settings = self.settings
        return artifact in needed_artifacts(settings.enabled_strategies, settings.composition_parts)

    def embedder(self) -> CachedEmbedder:
        """The configured embedder behind the content-hash cache, built once per run."""
        if self._embedder is None:
            embedding = self.settings.embedding  # its threads: this process's share of the cores
            threads = embedding.threads(self._side_by_side)
            provider = make_embedder(embedding.model_copy(update={"local_threads": threads}), self.environ())
            self._embedder = CachedEmbedder(provider, EmbeddingCache(self.layout.embedding_cache))
        return self._embedder

    def composed_vectors(self) -> frozenset[str]:
        """The tables whose vectors are composed from their sentences' (`embedding.composed_vectors`)."""
        local = resolved_provider(self.settings.embedding, self.environ()) == "local"
        return self.settings.embedding.composed(local)

    def environ(self) -> dict[str, str]:
        """The environment every provider of a run sees: the process's (endpoints such as
        VOYAGE_BASE_URL, read as queries read them), with the resource's keys. `embedder` once
        saw the Voyage key alone, so `index` ignored VOYAGE_BASE_URL while queries used it."""
        environ = dict(os.environ)
        for name, key in ((ANTHROPIC_KEY, self.anthropic_api_key), (VOYAGE_KEY, self.voyage_api_key)):
            environ.pop(name, None)  # the resource decides, as its EnvVar says
            if key:
                environ[name] = key
        return environ

    def llm_provider(self) -> str:
        """The `llm.provider` this run resolves to ('offline' when no LLM is used)."""
        return provider_name(self.settings, self.environ())

    def llm(self) -> LLM | None:
        """An LLM client (providers/registry.py decides which); None offline. Each call builds a
        fresh client, so each asset's ledger (its metadata) counts only its own calls."""
        return make_llm(self.settings, llm_cache=self.layout.llm_cache, environ=self.environ())

    def parse_processes(self) -> int:
        """spaCy worker processes of one step here (`extraction.parse_processes`, resolved)."""
        return self.settings.extraction.processes(self._side_by_side)

    def uses_claude(self) -> bool:
        return self.llm_provider() == "anthropic"

    def summarizer(self) -> Callable[[str, list[str]], str] | None:
        """LLM description summaries when an LLM is configured; None means extractive."""
        llm = self.llm()
        if llm is None:
            return None
        from graphunified_assets.lib.extraction.llm_summarizer import LLMSummarizer

        return LLMSummarizer(llm, above_tokens=self.settings.llm.summarize_above_tokens)

    def reporter(self) -> Reporter | None:
        """The LLM community reporter when an LLM is configured and `llm.llm_reports` is on; None
        means extractive reports."""
        if not self.settings.llm.llm_reports or (llm := self.llm()) is None:
            return None
        from graphunified_assets.lib.reports.llm_reporter import LLMReporter

        return LLMReporter(llm)

    def extractor(self) -> Extractor:
        """The configured extractor: the LLM extractor behind the LLM cache, or the offline spaCy
        default behind the content-addressed extraction cache."""
        return make_extractor(
            self.settings,
            llm_cache=self.layout.llm_cache,
            extraction_cache=self.layout.extraction_cache,
            llm=self.llm(),
            side_by_side=self._side_by_side,
        )


def layout_for_run(context: dg.InitResourceContext, configured: str) -> HomeLayout:
    """The home of the run this resource serves (``configured`` outside a run, e.g. in a sensor);
    a `dg.Failure` naming both homes when this machine would write to another home."""
    run = context.dagster_run
    if run is None:
        return HomeLayout.at(configured)
    root = context.instance.root_directory if context.instance is not None else None
    try:
        return run_home(run.tags, configured, root)
    except WrongHome as error:
        raise dg.Failure(f"Run {run.run_id}: {error}.", allow_retries=False) from None


def _secret(name: str) -> dg.EnvVar | None:
    # Only reference variables that exist: Dagster refuses to start a run on an unset EnvVar.
    return dg.EnvVar(name) if os.environ.get(name) else None


def default_resource(home: str | None = None, input_dir: str | None = None) -> GraphUnifiedResource:
    """The resource the code location is loaded with (`dagster dev`, the UI, sensors), for the
    environment's home unless ``home`` is given (`index`'s runs on other executors)."""
    return GraphUnifiedResource(
        home=home or os.environ.get(HOME_ENV, "data"),
        input_dir=input_dir if home else os.environ.get(INPUT_ENV),
        voyage_api_key=_secret(VOYAGE_KEY),
        anthropic_api_key=_secret(ANTHROPIC_KEY),
    )
