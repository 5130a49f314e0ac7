"""The one place that knows which LLM providers exist and which one a run uses.

Adding a provider is one module with a `build(settings, *, cache, environ)` function (and `key`
when it declares a secret) and one `LLMS.register` line in `core/plugins.py` (a `register_llm`
call is how tests add a toy provider); `LLMS` is a `core.registry.Registry`, the shape embedders
and rerankers share.
Every composition root (Dagster resources, the query engine, the CLIs, benchmarks) calls
`resolve_llm`; no role looks at `llm.provider`. Entries are "module:function" strings so the
provider SDKs (seconds to import) load only when that provider is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from graphunified_query.core.plugins import ANTHROPIC_KEY, AUTO, LLMS, OFFLINE

if TYPE_CHECKING:  # settings validates llm.provider against this module, so no import back at run time
    from graphunified_query.core.providers.llm import LLM
    from graphunified_query.core.providers.llm_cache import LLMCache
    from graphunified_query.core.settings.model import Settings

LLMFactory = Callable[..., "LLM"]  # build(settings, *, cache: LLMCache | None, environ, [key]) -> LLM


def register_llm(
    name: str, factory: str | LLMFactory, *, key_env_var: str | None = None, needs_key: bool = False
) -> None:
    """Make ``name`` a valid `llm.provider`; ``factory`` is `build` or its "module:function"."""
    LLMS.register(name, factory, key_env_var=key_env_var, needs_key=needs_key)


def provider_names() -> tuple[str, ...]:
    """Every valid value of `llm.provider`."""
    return LLMS.choices()


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
    return LLMS.create(name, settings, cache=cache, environ=environ)
