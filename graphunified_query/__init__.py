"""Graph-Unified's query side: six RAG strategies, a router and answers over an indexed home.

    from graphunified_query import QueryEngine

    engine = QueryEngine.open("data")
    response = engine.ask("Who founded the Hale Mill?", strategy="hipporag")

Every name here loads on first use (`import graphunified_query` imports nothing heavy: the
engine pulls numpy, pyarrow and the strategies; the LangChain and LlamaIndex adapters
need langchain-core and llama-index-core).
`tests/test_public_api.py` guards that `__all__` is exactly what this module exports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphunified_query.core.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from graphunified_query.core.settings.model import Settings, SettingsError, load_settings
    from graphunified_query.engine.query_engine import QueryEngine, QueryResponse, UnknownStrategy
    from graphunified_query.engine.request import QueryRequest, RequestError
    from graphunified_query.langchain import LangChainRetriever, as_langchain
    from graphunified_query.llamaindex import LlamaIndexRetriever, as_llamaindex
    from graphunified_query.strategies.base import Retriever, RetrieverContext
    from graphunified_query.strategies.composable.combine import HybridCombiner
    from graphunified_query.strategies.composable.factory import build
    from graphunified_query.strategies.composable.graph import GraphRetriever
    from graphunified_query.strategies.composable.vector import VectorRetriever
    from graphunified_query.strategies.rerank.llm import LLMReranker
    from graphunified_query.strategies.rerank.local import LocalReranker
    from graphunified_query.strategies.rerank.registry import make_reranker
    from graphunified_query.strategies.rerank.rerank import Reranker, RerankingRetriever
    from graphunified_query.strategies.rerank.voyage import VoyageReranker
    from graphunified_query.strategies.results import Retrieval, RetrievalResult

# name -> the module that defines it, imported on first use.
_EXPORTS = {
    # the engine, and loading its settings
    "QueryEngine": "graphunified_query.engine.query_engine",
    "QueryResponse": "graphunified_query.engine.query_engine",
    "UnknownStrategy": "graphunified_query.engine.query_engine",
    "Settings": "graphunified_query.core.settings.model",
    "SettingsError": "graphunified_query.core.settings.model",
    "load_settings": "graphunified_query.core.settings.model",
    # a request and what it returns
    "QueryRequest": "graphunified_query.engine.request",
    "RequestError": "graphunified_query.engine.request",
    "Retrieval": "graphunified_query.strategies.results",
    "RetrievalResult": "graphunified_query.strategies.results",
    # composable retrievers
    "Retriever": "graphunified_query.strategies.base",
    "RetrieverContext": "graphunified_query.strategies.base",
    "VectorRetriever": "graphunified_query.strategies.composable.vector",
    "GraphRetriever": "graphunified_query.strategies.composable.graph",
    "HybridCombiner": "graphunified_query.strategies.composable.combine",
    "build": "graphunified_query.strategies.composable.factory",
    # rerankers
    "Reranker": "graphunified_query.strategies.rerank.rerank",
    "RerankingRetriever": "graphunified_query.strategies.rerank.rerank",
    "LocalReranker": "graphunified_query.strategies.rerank.local",
    "LLMReranker": "graphunified_query.strategies.rerank.llm",
    "VoyageReranker": "graphunified_query.strategies.rerank.voyage",
    "make_reranker": "graphunified_query.strategies.rerank.registry",
    # the LangChain adapter (needs langchain-core)
    "LangChainRetriever": "graphunified_query.langchain",
    "as_langchain": "graphunified_query.langchain",
    # the LlamaIndex adapter (needs llama-index-core: the [llamaindex] extra)
    "LlamaIndexRetriever": "graphunified_query.llamaindex",
    "as_llamaindex": "graphunified_query.llamaindex",
}

__all__ = [  # the public names; the test checks they are exactly `_EXPORTS`' keys
    "GraphRetriever",
    "HybridCombiner",
    "LLMReranker",
    "LangChainRetriever",
    "LlamaIndexRetriever",
    "LocalReranker",
    "QueryEngine",
    "QueryRequest",
    "QueryResponse",
    "RequestError",
    "Reranker",
    "RerankingRetriever",
    "Retrieval",
    "RetrievalResult",
    "Retriever",
    "RetrieverContext",
    "Settings",
    "SettingsError",
    "UnknownStrategy",
    "VectorRetriever",
    "VoyageReranker",
    "as_langchain",
    "as_llamaindex",
    "build",
    "load_settings",
    "make_reranker",
]


__getattr__, __dir__ = _lazy_exports(globals(), _EXPORTS)
