"""`build`: the composable retrievers by name, for a CLI or registry to hand out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.base import ComposableRetriever
from graphunified_query.strategies.composable.graph import GraphRetriever
from graphunified_query.strategies.composable.vector import VectorRetriever

# name -> (class, the parameters the name stands for); caller's params override the rest.
BUILDERS: dict[str, tuple[Callable[..., ComposableRetriever], dict[str, Any]]] = {
    "vector": (VectorRetriever, {"search_type": "similarity"}),
    "vector_mmr": (VectorRetriever, {"search_type": "mmr"}),
    "graph_bfs": (GraphRetriever, {"traversal": "bfs"}),
    "graph_dfs": (GraphRetriever, {"traversal": "dfs"}),
}


def build(name: str, context: RetrieverContext, **params: Any) -> ComposableRetriever:
    """``build("vector_mmr", context, fetch_k=40)``: the retriever ``name`` names, configured."""
    if name not in BUILDERS:
        raise ValueError(f"Unknown composable retriever {name!r}; choose one of: {', '.join(BUILDERS)}.")
    cls, defining = BUILDERS[name]
    return cls(context, name=name, **{**defining, **params})
