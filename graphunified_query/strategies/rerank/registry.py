"""Rerankers by name (``local``, ``llm``, ``voyage``), so settings, the CLI and HTTP can choose one.

A reranker is a Python object; a request can only carry its name. This is the one place that turns
the name into the object, with the dependency each needs (the index's embedder, the configured LLM,
the Voyage key) and a clear error when that dependency is missing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.rerank.local import LocalReranker
from graphunified_query.strategies.rerank.rerank import Reranker

RerankerName = Literal["local", "llm", "voyage"]
RERANKERS: tuple[RerankerName, ...] = ("local", "llm", "voyage")


def make_reranker(
    name: RerankerName, context: RetrieverContext, environ: Mapping[str, str] = os.environ
) -> Reranker:
    if name == "local":
        return LocalReranker(context)
    if name == "llm":
        if context.llm is None:
            raise ValueError(
                "reranker 'llm' needs an LLM: set ANTHROPIC_API_KEY (or llm.provider: openai_compatible)"
            )
        from graphunified_query.strategies.rerank.llm import LLMReranker

        return LLMReranker(context.llm)
    if name == "voyage":
        key = environ.get("VOYAGE_API_KEY", "").strip()
        if not key:
            raise ValueError("reranker 'voyage' needs the VOYAGE_API_KEY environment variable")
        from graphunified_query.strategies.rerank.voyage import VoyageReranker

        return VoyageReranker(key)
    raise ValueError(f"unknown reranker {name!r}; choose one of: {', '.join(RERANKERS)}")
