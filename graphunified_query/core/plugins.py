"""Which LLM providers and embedders exist, by name, each with the environment variable of its
secret: the registries (`core.registry.Registry`) and the secret variables derived from them.

Declared apart from the providers themselves (entries are "module:function" strings), so the
settings models validate a name, and the pipeline masks secrets, without importing numpy,
onnxruntime or a provider SDK. Rerankers, a query-side kind, have theirs in
`strategies/rerank/registry.py` and reuse these keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator

from graphunified_query.core.registry import Registry

if TYPE_CHECKING:
    from graphunified_query.core.providers.embedding import Embedder
    from graphunified_query.core.providers.llm import LLM

AUTO, OFFLINE = "auto", "offline"

# `llm.provider`: auto (Claude exactly when its key is set), offline, or one of these.
LLMS: Registry[LLM] = Registry("llm.provider", reserved=(AUTO, OFFLINE))
LLMS.register(
    "anthropic",
    "graphunified_query.core.providers.claude:build",
    key_env_var="ANTHROPIC_API_KEY",
    needs_key=True,
)
LLMS.register(
    "openai_compatible",
    "graphunified_query.core.providers.openai_compatible:build",
    key_env_var="OPENAI_API_KEY",
)

# `embedding.provider`: auto (Voyage when its key is set, else local), or one of these.
EMBEDDERS: Registry[Embedder] = Registry("embedding.provider", reserved=(AUTO,))
EMBEDDERS.register("local", "graphunified_query.core.providers.local_models:build")
EMBEDDERS.register(
    "voyage",
    "graphunified_query.core.providers.voyage_embedder:build",
    key_env_var="VOYAGE_API_KEY",
    needs_key=True,
)
EmbedderName = Annotated[str, AfterValidator(EMBEDDERS.check)]

ANTHROPIC_KEY = LLMS.entry("anthropic").key_env_var or ""
VOYAGE_KEY = EMBEDDERS.entry("voyage").key_env_var or ""
VOYAGE_URL_VARIABLE = "VOYAGE_BASE_URL"  # an endpoint override, no secret


def voyage_base_url(configured: str | None, environ: Mapping[str, str]) -> str | None:
    """Voyage's endpoint for embedding and reranking, at index and query time alike:
    `embedding.voyage_base_url`, else VOYAGE_BASE_URL, else the SDK's default (None)."""
    return configured or environ.get(VOYAGE_URL_VARIABLE) or None


def secret_variables() -> tuple[str, ...]:
    """Every variable holding a secret (log masking, the settings file's refusal of literal keys,
    the settings reference): the registered LLMs' and embedders' keys, each once."""
    return tuple(dict.fromkeys([*LLMS.key_variables(), *EMBEDDERS.key_variables()]))
