"""The engine (or any retriever) as a LangChain `BaseRetriever` (needs ``langchain-core``).

    from graphunified_query.langchain import as_langchain
    docs = as_langchain(engine, strategy="hybrid", k=5).invoke("Who founded the Hale Mill?")
    docs = as_langchain(engine).invoke("Who founded the Hale Mill?", k=2, alpha=0.3)

Every call runs the engine's one query path (`QueryEngine.query` with ``retrieve_only``): the same
request check, risk and metadata filters, expansion and ``top_k`` cap as the CLI and HTTP, so a
high-risk context reaches no Document unless ``show_risky=True`` is asked for. ``k`` (or
``top_k``) is set at construction and may be given per call, as may strategy parameters and context
options. Each `Document` has the chunk id as ``id`` (None for a context no chunk backs), the text
as ``page_content`` and, in ``metadata``, its score, citation source, chunk and document ids, kind,
risk and the strategy's own details.
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as error:  # pragma: no cover - exercised by the test with the package hidden
    raise ImportError(
        "The LangChain adapter needs langchain-core: install it with `pip install langchain-core`."
    ) from error
import asyncio

from pydantic import ConfigDict, Field

from graphunified_query.engine.request import QueryRequest
from graphunified_query.strategies.base import Retriever
from graphunified_query.strategies.results import RetrievalResult


class LangChainRetriever(BaseRetriever):
    """``invoke``/``ainvoke`` return the engine's contexts for ``strategy`` as Documents."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any  # a QueryEngine; Any keeps pydantic from validating it
    strategy: str | None = None  # None: settings query.default_strategy
    k: int | None = Field(None, description="contexts returned (default: settings query.top_k)")
    params: dict[str, Any] = Field(default_factory=dict)  # strategy params and context options

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return _documents(self.engine.query(self._request(query, kwargs)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return _documents(await asyncio.to_thread(self.engine.query, self._request(query, kwargs)))

    def _request(self, query: str, kwargs: dict[str, Any]) -> QueryRequest:
        k = kwargs.pop("k", None)
        top_k = kwargs.pop("top_k", None)
        return QueryRequest(
            question=query,
            strategy=self.strategy,
            top_k=k if k is not None else top_k if top_k is not None else self.k,
            params={**self.params, **kwargs},
            retrieve_only=True,
        )


def as_langchain(
    target: Any, *, strategy: str | None = None, k: int | None = None, top_k: int | None = None, **params: Any
) -> LangChainRetriever:
    """``target`` is a `QueryEngine`, or a retriever built in Python (e.g. a `HybridCombiner`), which
    is then served through an engine over its own context, under its own name."""
    from graphunified_query.engine.query_engine import QueryEngine

    if isinstance(target, QueryEngine):
        engine = target
    else:
        engine = QueryEngine.serving(_retriever(target))
        strategy = target.name
    return LangChainRetriever(
        engine=engine, strategy=strategy, k=k if k is not None else top_k, params=params
    )


def _retriever(target: Any) -> Retriever:
    if not callable(getattr(target, "retrieve", None)):
        raise TypeError(f"as_langchain takes a QueryEngine or a Retriever, not {type(target).__name__}")
    return target


def _documents(response: Any) -> list[Document]:
    """The strategy's contexts (``expanded: False``), then their link neighbours (``expanded: True``)."""
    own = [_document(c, response.strategy, expanded=False) for c in response.contexts]
    return own + [_document(c, response.strategy, expanded=True) for c in response.expanded_contexts]


def _document(result: RetrievalResult, strategy: str, *, expanded: bool) -> Document:
    flat = result.as_dict()
    metadata = {
        "score": flat["score"],
        "source": flat["source"],
        "chunk_id": flat["chunk_id"],
        "document_id": flat["document_id"],
        "strategy": strategy,
        "expanded": expanded,
        **flat["metadata"],
    }
    return Document(id=result.chunk_id, page_content=result.text, metadata=metadata)
