"""Composable retrievers: small retrievers that wrap and combine into new strategies.

Every class here is a `Retriever` (``retrieve(query, top_k, params) -> Retrieval``, the shared
`RetrievalResult` contexts, best first) built on a `RetrieverContext`, and reports its
configuration and index sizes with ``get_stats()``. Because wrappers take *any* `Retriever`
(these, or the registered strategies such as ``naive`` and ``hipporag``), they nest freely::

    from graphunified_query.strategies.composable.combine import CombineParams, HybridCombiner
    from graphunified_query.strategies.composable.factory import build
    from graphunified_query.strategies.rerank.local import LocalReranker
    from graphunified_query.strategies.rerank.rerank import RerankingRetriever, RerankParams

    vector = build("vector_mmr", context, fetch_k=30, lambda_mult=0.6)
    graph = build("graph_bfs", context, max_hops=2, include_edge_descriptions=True)
    weighted = CombineParams(mode="weighted", vector_weight=0.6, graph_weight=0.4)
    hybrid = HybridCombiner(vector, graph, weighted)
    retriever = RerankingRetriever(hybrid, LocalReranker(context), RerankParams(over_retrieve_multiplier=3))
    retrieval = retriever.retrieve("Who founded the Hale Mill?", top_k=5)

The pieces:

- `VectorRetriever`: chunk vectors by ``similarity``, ``mmr`` or ``similarity_score_threshold``.
- `GraphRetriever`: seed entities (embedding, or fuzzy title match when embeddings are
  unavailable), then a ``bfs``/``dfs`` walk scoring ``seed_score * decay**depth``.
- `HybridCombiner`: two retrievers as one: ``concat``, ``rerank``, ``weighted`` or ``expand``.
- `RerankingRetriever`: over-retrieve, rescore with a `Reranker`, threshold, keep ``top_k``:
  `LocalReranker` (free, offline), `LLMReranker`, `VoyageReranker` (imported on first use:
  the Voyage SDK is slow to import).
- `build(name, context, **params)`: ``vector``, ``vector_mmr``, ``graph_bfs``, ``graph_dfs``.
- ``compose.langchain.as_langchain(retriever)``: any of them as a LangChain retriever.

Each is built with its typed parameters (``.params``); a call may pass another instance of the same
model (``retrieve(q, 5, graph.params.updated(decay=0.5))``), and a model of another strategy is a
TypeError. A wrapper's call parameters are its own (`CombineParams`, `RerankParams`): what it wraps
runs with the parameters it was built with.
"""
