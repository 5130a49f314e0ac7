"""The retriever protocol and what every retriever is built with (the registry is `registry.STRATEGIES`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.settings.model import Settings
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.query_vectors import QueryVectors
from graphunified_query.strategies.results import Retrieval

if TYPE_CHECKING:  # the anthropic SDK takes seconds to import; `--help` and offline use never need it
    pass


@dataclass(frozen=True)
class RetrieverContext:
    """What a retriever may use: the loaded index, the query embedder, the LLM when configured."""

    snapshot: Snapshot
    embedder: Embedder
    settings: Settings
    llm: LLM | None = None
    # The engine's query-embedding LRU; shared by the contexts of one engine, across reloads.
    query_vectors: QueryVectors = field(default_factory=QueryVectors, compare=False)

    def embed_query(self, query: str) -> np.ndarray:
        return self.query_vectors.embed(self.embedder, query)


class Retriever(Protocol):
    name: str

    def retrieve(self, query: str, top_k: int = 10, **params: Any) -> Retrieval: ...

    async def aretrieve(self, query: str, top_k: int = 10, **params: Any) -> Retrieval: ...


class RetrieverBase:
    """Shared plumbing: the context and an async form of `retrieve` that runs it off the loop."""

    name = ""

    def __init__(self, context: RetrieverContext) -> None:
        self.context = context
        self.snapshot = context.snapshot

    def retrieve(self, query: str, top_k: int = 10, **params: Any) -> Retrieval:
        raise NotImplementedError

    async def aretrieve(self, query: str, top_k: int = 10, **params: Any) -> Retrieval:
        return await asyncio.to_thread(self.retrieve, query, top_k, **params)
