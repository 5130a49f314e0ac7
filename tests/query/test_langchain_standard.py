"""LangChain's own standard retriever tests (``langchain-tests``) against the engine's adapter."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_tests")

from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.langchain import LangChainRetriever, as_langchain


# The suite's ainvoke test is a coroutine: pytest-asyncio (strict mode) runs it when marked; the mark
# on the class also reaches the sync tests, which pytest-asyncio only warns about.
@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:.*marked with '@pytest.mark.asyncio' but it is not an async function")
class TestEngineRetriever(RetrieversIntegrationTests):
    loaded: QueryEngine | None = None

    @pytest.fixture(autouse=True)
    def _engine(self, engine: QueryEngine) -> None:
        type(self).loaded = engine

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return LangChainRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self.loaded, "strategy": "hybrid"}

    @property
    def retriever_query_example(self) -> str:
        return "Who founded the Hale Mill?"


def test_k_and_params_per_call_and_chunk_ids(engine: QueryEngine) -> None:
    retriever = as_langchain(engine, strategy="hybrid", k=4)
    assert len(retriever.invoke("Who founded the Hale Mill?")) == 4
    assert len(retriever.invoke("Who founded the Hale Mill?", top_k=1)) == 1
    documents = retriever.invoke("Who founded the Hale Mill?", k=2, alpha=1.0)
    assert len(documents) == 2 and all(d.id == d.metadata["chunk_id"] and d.id for d in documents)
    assert all(d.metadata["risk_level"] == "low" for d in documents)
