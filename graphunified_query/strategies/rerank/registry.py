"""Rerankers by name (``local``, ``llm``, ``voyage``), so settings, the CLI and HTTP can choose one.

A reranker is a Python object; a request can only carry its name. `RERANKERS` (the registry shape
LLMs and embedders share, `core.registry`) turns the name into the object: each entry is a
`build(context, *, environ[, key])` with the dependency it needs (the index's embedder, the
configured LLM, the Voyage key) and a one-line error when that dependency is missing. Adding one
is a module with `build` and one `RERANKERS.register` line; `RerankerName` accepts it from then on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated

from pydantic import AfterValidator

from graphunified_query.core.plugins import EMBEDDERS
from graphunified_query.core.registry import MissingKey, Registry
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.rerank.rerank import Reranker

RERANKERS: Registry[Reranker] = Registry("reranker")
RERANKERS.register("local", "graphunified_query.strategies.rerank.local:build")
# The engine's LLM, whichever `llm.provider` built it (with that provider's key).
RERANKERS.register("llm", "graphunified_query.strategies.rerank.llm:build")
# Voyage's reranker reads the embedder's key: one Voyage account serves both.
RERANKERS.register(
    "voyage",
    "graphunified_query.strategies.rerank.voyage:build",
    key_env_var=EMBEDDERS.entry("voyage").key_env_var,
    needs_key=True,
)

RerankerName = Annotated[str, AfterValidator(RERANKERS.check)]  # a registered name, checked as a param


def make_reranker(name: str, context: RetrieverContext, environ: Mapping[str, str] = os.environ) -> Reranker:
    try:
        return RERANKERS.create(name, context, environ=environ)
    except MissingKey as error:
        raise ValueError(str(error)) from None
