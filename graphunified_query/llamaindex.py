"""The engine (or any retriever) as a LlamaIndex `BaseRetriever` (needs ``llama-index-core``).

    from graphunified_query.llamaindex import as_llamaindex
    nodes = as_llamaindex(engine, strategy="hybrid", k=5).retrieve("Who founded the Hale Mill?")
    query_engine = RetrieverQueryEngine.from_args(as_llamaindex(engine), llm=...)

The same glue as the LangChain adapter (`graphunified_query.engine.adapters`): every call runs the
engine's one query path with ``retrieve_only`` (request check, risk and metadata filters, expansion,
``top_k`` cap), so a high-risk context reaches no node unless ``show_risky=True`` is asked for.
LlamaIndex's ``retrieve`` takes only the query, so ``k`` and the strategy parameters are set at
construction. Each `NodeWithScore` holds a `TextNode` with the context's text and the engine's score,
whose metadata is the LangChain Document's (score, source, chunk and document ids, strategy, expanded,
kind, risk, …) and whose ``id_`` is the chunk id: LlamaIndex drops nodes with an id it has seen, so
a second context of the same chunk (two entities of one passage) is ``<chunk id>#2``, and a context no
chunk backs gets a fresh id.
"""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as error:  # pragma: no cover - exercised by the test with the package hidden
    raise ImportError(
        "The LlamaIndex adapter needs llama-index-core: install it with "
        "`pip install 'graph-unified[llamaindex]'` (or `pip install llama-index-core`)."
    ) from error

from graphunified_query.engine.adapters import EngineBinding, FlatContext

# Only the citation reaches the LLM prompt beside the text; ids, scores and details stay out of it
# and out of any re-embedding (LlamaIndex folds metadata into both by default).
_PROMPT_METADATA = frozenset({"source"})


class LlamaIndexRetriever(BaseRetriever):
    """``retrieve``/``aretrieve`` return the engine's contexts for the bound strategy as nodes."""

    def __init__(self, binding: EngineBinding, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # callback_manager, verbose: LlamaIndex's own options
        self.binding = binding

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(self.binding.retrieve(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(await asyncio.to_thread(self.binding.retrieve, query_bundle.query_str))


def as_llamaindex(
    target: Any, *, strategy: str | None = None, k: int | None = None, top_k: int | None = None, **params: Any
) -> LlamaIndexRetriever:
    """``target`` is a `QueryEngine`, or a retriever built in Python (e.g. a `HybridCombiner`), which
    is then served through an engine over its own context, under its own name."""
    k = k if k is not None else top_k
    return LlamaIndexRetriever(
        EngineBinding.of(target, "as_llamaindex", strategy=strategy, k=k, params=params)
    )


def _nodes(contexts: list[FlatContext]) -> list[NodeWithScore]:
    seen: dict[str, int] = {}
    nodes = []
    for context in contexts:
        node_id = None
        if context.id is not None:
            seen[context.id] = seen.get(context.id, 0) + 1
            node_id = context.id if seen[context.id] == 1 else f"{context.id}#{seen[context.id]}"
        nodes.append(_node(context, node_id))
    return nodes


def _node(context: FlatContext, node_id: str | None) -> NodeWithScore:
    hidden = [key for key in context.metadata if key not in _PROMPT_METADATA]
    node = TextNode(
        text=context.text,
        metadata=context.metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=list(context.metadata),
    )
    if node_id is not None:
        node.id_ = node_id
    return NodeWithScore(node=node, score=context.score)
