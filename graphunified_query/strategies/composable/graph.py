"""`GraphRetriever`: seed entities for the query, then walk the entity graph out from them.

Seeds are the ``seed_k`` entities most similar to the query embedding (at least
``min_similarity``); when embeddings are unavailable (the embedder fails, or the index has no
entity vectors) they are the entities whose titles fuzzy-match words of the query, with a warning
logged once per retriever. The walk (`traversal`: ``bfs`` or ``dfs``, up to ``max_hops``) scores
each entity ``seed_score * decay**depth``.

Results are entity contexts, best first (visit order breaks ties), each citing its source chunks
(``chunk_ids``) and recording ``depth``, ``via`` (the entity id it was reached from),
``traversal`` and ``seed`` in its metadata. With ``include_edge_descriptions`` the text also
spells out the relationships along the path from the seed, which are listed in ``relationships``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from functools import cached_property
from types import MappingProxyType
from typing import Any

from pydantic import Field

from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.composable.base import ComposableRetriever
from graphunified_query.strategies.composable.seeding import FuzzyTitles, Seed, SeedMethod, embedding_seeds
from graphunified_query.strategies.composable.traversal import Traversal, Visit, traverse
from graphunified_query.strategies.contexts import entity_result
from graphunified_query.strategies.params import Cosine, FiniteFloat, StrategyParams, Unit
from graphunified_query.strategies.results import Retrieval, RetrievalResult

log = logging.getLogger(__name__)
# What a failing embedder raises: EmbeddingError (a RuntimeError) from a provider, OSError from a
# model file, ValueError from a query vector whose dimension does not match the index.
_EMBEDDING_FAILURES = (RuntimeError, OSError, ValueError)


class GraphParams(StrategyParams):
    traversal: Traversal = Field("bfs", description="Walk order: bfs or dfs.")
    max_hops: int = Field(2, ge=0, le=6, description="Hops walked out from the seed entities.")
    decay: float = Field(0.7, gt=0.0, le=1.0, allow_inf_nan=False, description="Score multiplier per hop.")
    seed_k: int = Field(5, ge=1, le=200, description="Seed entities for the question.")
    min_similarity: Cosine = Field(0.25, description="Cosine a seed entity needs.")
    fuzzy_min_ratio: Unit = Field(0.8, description="Title match ratio a seed needs when embeddings fail.")
    min_score: FiniteFloat = Field(0.0, ge=0.0, description="Lowest score a visited entity keeps.")
    max_nodes: int = Field(50, ge=1, le=5000, description="Traversal budget, seeds included.")
    include_edge_descriptions: bool = Field(False, description="Also return the relationships walked.")


class GraphDFSParams(GraphParams):
    traversal: Traversal = Field("dfs", description="Walk order: bfs or dfs.")


class GraphRetriever(ComposableRetriever[GraphParams]):
    name = "graph"
    params_model = GraphParams

    def __init__(
        self, context: RetrieverContext, params: GraphParams | None = None, *, name: str | None = None
    ) -> None:
        super().__init__(context, params)
        self.name = name or self.name
        self._warned = False
        self._warn_lock = threading.Lock()

    @cached_property
    def _titles(self) -> FuzzyTitles:
        return FuzzyTitles(self.snapshot.entities)

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        config = self.using(params)
        if not query.strip() or top_k <= 0:
            return Retrieval(self.name, ())
        seeds, method = self._seeds(query, config)
        snap = self.snapshot
        visits = traverse(
            [(snap.entities[s.row]["id"], s.score) for s in seeds],
            self._neighbours,
            method=config.traversal,
            max_hops=config.max_hops,
            decay=config.decay,
            min_score=config.min_score,
            max_nodes=config.max_nodes,
        )
        by_id = {v.entity: v for v in visits}
        best = sorted(visits, key=lambda v: (-v.score, v.order))[:top_k]
        results = tuple(self._result(v, by_id, config) for v in best)
        metadata = {
            "seeding": method,
            "seeds": [snap.entities[s.row]["title"] for s in seeds],
            "traversal": config.traversal,
            "visited": len(visits),
        }
        return Retrieval(self.name, results, metadata=metadata)

    def _seeds(self, query: str, config: GraphParams) -> tuple[list[Seed], SeedMethod]:
        vectors = self.snapshot.entity_vectors
        if not self.snapshot.entities:
            return [], "none"  # nothing to seed from, and nothing to warn about
        problem = "the index has no entity vectors"
        if len(vectors):
            try:
                q = self.context.embed_query(query)
                return embedding_seeds(vectors, q, config.seed_k, config.min_similarity), "embedding"
            except _EMBEDDING_FAILURES as error:
                problem = f"the query could not be embedded ({type(error).__name__}: {error})"
        self._warn_once(problem)
        return self._titles.match(query, config.seed_k, config.fuzzy_min_ratio), "fuzzy"

    def _warn_once(self, problem: str) -> None:
        with self._warn_lock:
            if self._warned:
                return
            self._warned = True
        log.warning("%s: %s; seeding by fuzzy entity-name matching instead", self.name, problem)

    def _neighbours(self, entity: str) -> list[tuple[str, int]]:
        """Strongest relationship first (DFS follows it first); entity row breaks ties."""
        snap = self.snapshot
        weights = snap.adjacency.row_weight
        return sorted(
            snap.adjacency.pairs(entity), key=lambda n: (-float(weights[n[1]]), snap.entity_row[n[0]])
        )

    def _result(self, visit: Visit, by_id: dict[str, Visit], config: GraphParams) -> RetrievalResult:
        snap = self.snapshot
        result = entity_result(
            snap,
            snap.entity_row[visit.entity],
            visit.score,
            depth=visit.depth,
            via=visit.via,
            traversal=config.traversal,
            seed=visit.seed,
            seed_score=round(visit.seed_score, 6),
            visit=visit.order,
        )
        if not config.include_edge_descriptions or visit.via is None:
            return result
        path = _path_edges(visit, by_id)
        rels = [snap.relationships[row] for row in path]
        lines = [f"{r['source']} -> {r['target']} ({r['type']}): {r['description']}" for r in rels]
        return replace(
            result,
            text=result.text + "\nReached via: " + "; ".join(lines),
            relationships=tuple(f"{r['source']} -> {r['target']}" for r in rels),
            metadata=MappingProxyType({**result.metadata, "edges": lines}),
        )

    def get_stats(self) -> dict[str, Any]:
        snap = self.snapshot
        return {
            "name": self.name,
            "kind": "graph",
            **self.params.model_dump(),
            "entities": len(snap.entities),
            "relationships": len(snap.relationships),
            "entity_vectors": len(snap.entity_vectors),
            "seeding": "embedding" if len(snap.entity_vectors) else "fuzzy",
        }


def _path_edges(visit: Visit, by_id: dict[str, Visit]) -> list[int]:
    """Relationship rows from the seed down to ``visit``, in walking order."""
    edges: list[int] = []
    while visit.via is not None and visit.edge is not None:
        edges.append(visit.edge)
        visit = by_id[visit.via]
    return edges[::-1]
