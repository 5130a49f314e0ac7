"""The one place that knows which LLM providers exist and which one a run uses.

Adding a provider is one module with a `build(settings, *, cache, environ)` function and one line
in `LLMS` (or a `register_llm` call, which is how tests add a toy provider). Every composition
root (Dagster resources, the query engine, the CLIs, benchmarks) calls `resolve_llm`; no role
looks at `llm.provider`. Entries are "module:function" strings so the provider SDKs (seconds to
import) load only when that provider is used.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # settings validates llm.provider against this module, so no import back at run time
    from graphunified_query.core.providers.llm import LLM
    from graphunified_query.core.providers.llm_cache import LLMCache
    from graphunified_query.core.settings.model import Settings

LLMFactory = Callable[..., "LLM"]  # build(settings, *, cache: LLMCache | None, environ) -> LLM
AUTO, OFFLINE = "auto", "offline"
ANTHROPIC_KEY = "ANTHROPIC_API_KEY"

LLMS: dict[str, str | LLMFactory] = {
    "anthropic": "graphunified_query.core.providers.claude:build",
    "openai_compatible": "graphunified_query.core.providers.openai_compatible:build",
}


class ProviderError(ValueError):
    """llm.provider names no registered provider."""


def register_llm(name: str, factory: str | LLMFactory) -> None:
    """Make ``name`` a valid `llm.provider`; ``factory`` is `build` or its "module:function"."""
    if name in (AUTO, OFFLINE):
        raise ProviderError(f"{name!r} is reserved for llm.provider; pick another provider name")
    LLMS[name] = factory


def provider_names() -> tuple[str, ...]:
    """Every valid value of `llm.provider`."""
    return (AUTO, OFFLINE, *LLMS)


def provider_name(settings: Settings, environ: Mapping[str, str] = os.environ) -> str:
    """The one "which provider" rule: 'auto' means Claude exactly when ANTHROPIC_API_KEY is set."""
    name = settings.llm.provider
    if name == AUTO:
        return "anthropic" if environ.get(ANTHROPIC_KEY, "").strip() else OFFLINE
    return name


def resolve_llm(
    settings: Settings,
    *,
    cache: LLMCache | Path | None,
    environ: Mapping[str, str] = os.environ,
) -> LLM | None:
    """The run's LLM client, or None when the run is offline (embedded extractor, extractive
    answers). ``cache``: the LLM response cache (a path opens one); None calls every time."""
    name = provider_name(settings, environ)
    if name == OFFLINE:
        return None
    if isinstance(cache, Path):
        from graphunified_query.core.providers.llm_cache import LLMCache

        cache = LLMCache(cache)
    return _factory(name)(settings, cache=cache, environ=environ)


def _factory(name: str) -> LLMFactory:
    if name not in LLMS:
        raise ProviderError(
            f"llm.provider {name!r} is not a known provider; use one of {', '.join(provider_names())} "
            "(a new provider is registered in graphunified_query/core/providers/registry.py)"
        )
    entry = LLMS[name]
    if isinstance(entry, str):
        module, _, function = entry.partition(":")
        entry = getattr(importlib.import_module(module), function)
        LLMS[name] = entry
    return entry
