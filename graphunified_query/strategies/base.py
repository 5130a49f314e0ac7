"""The retriever protocol and what every retriever is built with (the registry is `registry.STRATEGIES`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.settings.model import Settings
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.params import NoParams, StrategyParams
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


P = TypeVar("P", bound=StrategyParams)


class Retriever(Protocol):
    """``retrieve(query, top_k, params)``: ``params`` is the retriever's typed parameter model (its
    strategy's `StrategyParams`), or None for the parameters it was built with (``.params``)."""

    name: str

    @property
    def params(self) -> StrategyParams: ...  # read-only: each retriever narrows it to its own model

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval: ...

    async def aretrieve(
        self, query: str, top_k: int = 10, params: StrategyParams | None = None
    ) -> Retrieval: ...

    def get_stats(self) -> dict[str, Any]: ...


class RetrieverBase(Generic[P]):
    """Shared plumbing: the context, the parameters it was built with, the check that a call's
    parameters are of its model, and an async form of `retrieve` that runs it off the loop."""

    name = ""
    params_model: type[StrategyParams] = NoParams

    def __init__(self, context: RetrieverContext, params: P | None = None) -> None:
        self.context = context
        self.snapshot = context.snapshot
        self.params: P = self.using(params) if params is not None else self.params_model()  # type: ignore[assignment]

    def using(self, params: StrategyParams | None) -> P:
        """The parameters one call runs with: those given, else the ones the retriever was built with.
        A model of another strategy is refused: its values would be silently ignored."""
        if params is None:
            return self.params
        if not isinstance(params, self.params_model):
            raise TypeError(
                f"{self.name or type(self).__name__} takes {self.params_model.__name__}, "
                f"not {type(params).__name__}"
            )
        return params  # type: ignore[return-value]

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        raise NotImplementedError

    async def aretrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        return await asyncio.to_thread(self.retrieve, query, top_k, params)

    def get_stats(self) -> dict[str, Any]:
        """Its name and the parameters it was built with (wrappers add what they wrap)."""
        return {"name": self.name, "params": self.params.model_dump()}


class WithinDocuments:
    """A retriever that can search inside documents itself (``searches_documents``, e.g. expanded
    seeding inside them), asked through its ``retrieve_within`` for these ``document_ids``."""

    def __init__(self, retriever: Any, document_ids: Sequence[str]) -> None:
        self.retriever = retriever
        self.document_ids = tuple(document_ids)
        self.name: str = retriever.name
        self.params: StrategyParams = retriever.params

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        found: Retrieval = self.retriever.retrieve_within(query, top_k, params, self.document_ids)
        return found

    async def aretrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        return await asyncio.to_thread(self.retrieve, query, top_k, params)

    def get_stats(self) -> dict[str, Any]:
        return {**self.retriever.get_stats(), "document_ids": list(self.document_ids)}
