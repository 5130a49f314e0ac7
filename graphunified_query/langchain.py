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
risk and the strategy's own details. The glue is shared with the LlamaIndex adapter
(`graphunified_query.engine.adapters`).
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

from graphunified_query.engine.adapters import EngineBinding, FlatContext


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
        return [_document(c) for c in self._binding().retrieve(query, kwargs)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        found = await asyncio.to_thread(self._binding().retrieve, query, kwargs)
        return [_document(c) for c in found]

    def _binding(self) -> EngineBinding:
        return EngineBinding(self.engine, self.strategy, self.k, self.params)


def as_langchain(
    target: Any, *, strategy: str | None = None, k: int | None = None, top_k: int | None = None, **params: Any
) -> LangChainRetriever:
    """``target`` is a `QueryEngine`, or a retriever built in Python (e.g. a `HybridCombiner`), which
    is then served through an engine over its own context, under its own name."""
    bound = EngineBinding.of(
        target, "as_langchain", strategy=strategy, k=k if k is not None else top_k, params=params
    )
    return LangChainRetriever(
        engine=bound.engine, strategy=bound.strategy, k=bound.k, params=dict(bound.params)
    )


def _document(context: FlatContext) -> Document:
    return Document(id=context.id, page_content=context.text, metadata=context.metadata)
