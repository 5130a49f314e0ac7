"""Any retriever as a LangChain `BaseRetriever` (needs ``langchain-core``, not a project dependency).

    from graphunified_query.compose.langchain import as_langchain
    docs = as_langchain(retriever, top_k=5).invoke("Who founded the Hale Mill?")

Each `Document` carries the context's text as ``page_content`` and, in ``metadata``, its score,
citation source, chunk and document ids, kind and the retriever's own details.
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
from pydantic import ConfigDict, Field

from graphunified_query.results import Retrieval, RetrievalResult
from graphunified_query.retrieval.base import Retriever


class LangChainRetriever(BaseRetriever):
    """Wraps a `Retriever`: ``invoke``/``ainvoke`` return its top ``top_k`` contexts as Documents."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any  # a Retriever; Any because pydantic cannot validate a Protocol
    top_k: int = 10
    params: dict[str, Any] = Field(default_factory=dict)  # passed to every `retrieve` call

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return to_documents(self.retriever.retrieve(query, self.top_k, **self.params))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return to_documents(await self.retriever.aretrieve(query, self.top_k, **self.params))


def as_langchain(retriever: Retriever, top_k: int = 10, **params: Any) -> LangChainRetriever:
    return LangChainRetriever(retriever=retriever, top_k=top_k, params=params)


def to_documents(retrieval: Retrieval) -> list[Document]:
    return [_document(result, retrieval.strategy) for result in retrieval.results]


def _document(result: RetrievalResult, strategy: str) -> Document:
    flat = result.as_dict()
    metadata = {
        "score": flat["score"],
        "source": flat["source"],
        "chunk_id": flat["chunk_id"],
        "document_id": flat["document_id"],
        "strategy": strategy,
        **flat["metadata"],
    }
    return Document(page_content=result.text, metadata=metadata)
