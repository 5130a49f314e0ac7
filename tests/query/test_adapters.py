"""The framework adapters (LangChain, LlamaIndex), generated over one table: each returns exactly the
engine's contexts (ids, texts, scores, metadata) for a registered strategy and for a retriever built
in Python, async too, and names its package when it is missing. LlamaIndex's own query engine then
answers over the LlamaIndex adapter with a mock LLM."""

from __future__ import annotations

import asyncio
import builtins
import importlib
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from graphunified_query.engine.adapters import flat_contexts
from graphunified_query.engine.query_engine import QueryEngine, QueryRequest
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.factory import build
from tests.query.compose_support import CHUNKS, ENTITIES, RELATIONSHIPS, make_context

QUESTION = "Who founded the Hale Mill?"

Flat = list[tuple[str | None, str, float, dict[str, Any]]]  # id, text, score, metadata


def _langchain_flat(documents: list[Any]) -> Flat:
    return [(d.id, d.page_content, d.metadata["score"], d.metadata) for d in documents]


def _langchain(retriever: Any, question: str) -> Flat:
    return _langchain_flat(retriever.invoke(question))


async def _alangchain(retriever: Any, question: str) -> Flat:
    return _langchain_flat(await retriever.ainvoke(question))


def _llamaindex_flat(nodes: list[Any]) -> Flat:
    return [(n.node.id_, n.node.get_content(), n.score, n.node.metadata) for n in nodes]


def _llamaindex(retriever: Any, question: str) -> Flat:
    return _llamaindex_flat(retriever.retrieve(question))


async def _allamaindex(retriever: Any, question: str) -> Flat:
    return _llamaindex_flat(await retriever.aretrieve(question))


@dataclass(frozen=True)
class Adapter:
    module: str  # graphunified_query.<module>
    package: str  # the framework's import name
    install_hint: str  # what the ImportError tells the user to run
    factory: str  # as_<framework>
    call: Callable[[Any, str], Flat]
    acall: Callable[[Any, str], Any]


ADAPTERS = {
    "langchain": Adapter(
        "graphunified_query.langchain", "langchain_core", "pip install langchain-core", "as_langchain",
        _langchain, _alangchain,
    ),
    "llamaindex": Adapter(
        "graphunified_query.llamaindex", "llama_index", "pip install 'graph-unified[llamaindex]'",
        "as_llamaindex", _llamaindex, _allamaindex,
    ),
}  # fmt: skip


def _factory(adapter: Adapter) -> Callable[..., Any]:
    pytest.importorskip(adapter.package, reason=f"{adapter.package} is not installed (optional adapter)")
    return getattr(importlib.import_module(adapter.module), adapter.factory)  # type: ignore[no-any-return]


def _expected(engine: QueryEngine, strategy: str | None, k: int, params: dict[str, Any]) -> Flat:
    request = QueryRequest(question=QUESTION, strategy=strategy, top_k=k, params=params, retrieve_only=True)
    return [(c.id, c.text, c.score, c.metadata) for c in flat_contexts(engine.query(request))]


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_engine_contexts_with_their_metadata(engine: QueryEngine, name: str) -> None:
    adapter = ADAPTERS[name]
    as_adapter = _factory(adapter)
    for strategy, k, params in (("hybrid", 4, {}), ("hybrid", 2, {"alpha": 1.0}), ("naive", 3, {})):
        retriever = as_adapter(engine, strategy=strategy, k=k, **params)
        found = adapter.call(retriever, QUESTION)
        assert found == _expected(engine, strategy, k, params) and len(found) == k
        for chunk_id, text, score, metadata in found:
            assert chunk_id == metadata["chunk_id"] and chunk_id and text and math.isfinite(score)
            assert metadata["score"] == score and metadata["strategy"] == strategy
            assert metadata["risk_level"] == "low" and metadata["source"] and metadata["expanded"] is False
        assert asyncio.run(adapter.acall(retriever, QUESTION)) == found


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_retriever_built_in_python(name: str) -> None:
    adapter = ADAPTERS[name]
    as_adapter = _factory(adapter)
    context: RetrieverContext = make_context(CHUNKS, ENTITIES, RELATIONSHIPS)
    found = adapter.call(as_adapter(build("graph_bfs", context, seed_k=1), top_k=3), "alpha station")
    assert [text.split(" (")[0] for _, text, _, _ in found] == ["Alpha Station", "Bravo", "Charlie"]
    first = found[0][3]
    assert first["kind"] == "entity" and first["depth"] == 0 and first["strategy"] == "graph_bfs"
    assert first["chunk_id"] == "k1" and math.isfinite(first["score"])
    narrowed = as_adapter(build("graph_bfs", context, seed_k=1), top_k=10, max_hops=0)
    assert len(adapter.call(narrowed, "alpha station")) == 1
    with pytest.raises(TypeError, match=f"{adapter.factory} takes a QueryEngine or a Retriever, not str"):
        as_adapter("not an engine")


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_missing_framework_names_its_package(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    adapter = ADAPTERS[name]
    real_import = builtins.__import__

    def without_framework(module: str, *args: Any, **kwargs: Any) -> Any:
        if module.split(".")[0] == adapter.package:
            raise ImportError(f"No module named {module!r}")
        return real_import(module, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_framework)
    monkeypatch.delitem(sys.modules, adapter.module, raising=False)
    with pytest.raises(ImportError, match=adapter.install_hint.replace("[", r"\[").replace("]", r"\]")):
        importlib.import_module(adapter.module)


def test_llamaindex_query_engine_answers_over_the_adapter(engine: QueryEngine) -> None:
    as_llamaindex = _factory(ADAPTERS["llamaindex"])
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import MetadataMode

    retriever = as_llamaindex(engine, strategy="hybrid", k=3)
    response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).query(QUESTION)
    assert [n.node.id_ for n in response.source_nodes] == [c[0] for c in _expected(engine, "hybrid", 3, {})]
    # The prompt carries each context's text and its citation, not ids, scores or strategy details.
    prompt_text = response.source_nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "source: " in prompt_text and "chunk_id" not in prompt_text and "score" not in prompt_text


def test_llamaindex_keeps_two_contexts_of_one_chunk() -> None:
    """LlamaIndex drops a node whose id it has seen: two entities of one passage must both arrive."""
    as_llamaindex = _factory(ADAPTERS["llamaindex"])
    context = make_context(CHUNKS, ENTITIES, RELATIONSHIPS)
    nodes = as_llamaindex(build("graph_bfs", context, seed_k=1), top_k=3).retrieve("alpha station")
    chunk_ids = [n.node.metadata["chunk_id"] for n in nodes]
    assert len(set(chunk_ids)) < len(chunk_ids) == 3  # the fixture's point: a chunk backs two contexts
    assert len({n.node.id_ for n in nodes}) == 3 and nodes[0].node.id_ == chunk_ids[0]
