"""`expanded`: vector seeds, graph expansion, hybrid scoring and optional reranking, over chunks.

1. Seeds: the ``seed_k`` chunks closest to the query (inside ``document_ids`` when given).
2. Expansion: up to ``expansion_depth`` chunk-to-chunk hops along SIMILAR_TO edges (cosine >=
   ``expansion_threshold``; the index stores them only above ``graph.chunk_similarity_threshold``),
   shared MENTIONS of an entity and RELATED_TO entity pairs (entities in more than ``hub_limit``
   chunks do not bridge; from each entity at most ``max_neighbours_per_hop`` related entities
   are followed, heaviest relationships first; see `expansion` for each link's strength),
   admitting at most ``max_expanded_chunks`` chunks beyond the seeds.
3. Hybrid score of every candidate, each part in [0, 1]:

       hybrid = vector_score x chunk_weight + graph_score x (1 - chunk_weight)
                + entity_score x entity_weight + quality_boost

   - vector_score: the chunk's cosine with the query, clipped to [0, 1].
   - graph_score: the best path into the chunk from another seed: that seed's vector score x the
     product over the path's hops of (link strength x ``hop_decay``); 0 when no seed reaches it.
     A seed gets no credit for being a seed: its own vector score is not a path.
   - entity_score: the share of the query's entities the chunk mentions, by weight. The query's
     entities are those it names (linked by title, weight 1) and those whose descriptions are
     closest to it (``query_entities`` at most, cosine >= ``entity_min_similarity``, weight =
     cosine); dates are left out.
   - quality_boost: ``multi_entity_boost`` x (query entities the chunk mentions - 1), favouring
     a passage that ties several of the question's entities together; off (0) by default.
4. Reranking (``rerank=True``, or a ``reranker`` given; `LocalReranker` by default): the best
   ``rerank_candidates`` (default 2 x top_k) by hybrid score are rescored and ranked by
   ``rerank x rerank_blend + hybrid x (1 - rerank_blend)``.

Each result's metadata holds every score, its hop (0 for a seed), the seed it was expanded
from and the last link of its path. Results are cached by the query path, as every strategy's
(`engine.result_cache`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from graphunified_query.core.indexes.dense import top_k as top_scores
from graphunified_query.core.layout import build_command
from graphunified_query.strategies.base import RetrieverBase, RetrieverContext
from graphunified_query.strategies.contexts import chunk_result
from graphunified_query.strategies.entity_linking import NameIndex, name_index
from graphunified_query.strategies.expansion import ChunkGraph, Reach, expand
from graphunified_query.strategies.hipporag import UNSPECIFIC_TYPES
from graphunified_query.strategies.params import Cosine, StrategyParams, Unit, neighbours_per_hop_field
from graphunified_query.strategies.rerank.local import LocalReranker
from graphunified_query.strategies.rerank.registry import RerankerName, make_reranker
from graphunified_query.strategies.rerank.rerank import Reranker, RerankOutcome, reranker_name, run_reranker
from graphunified_query.strategies.results import Retrieval


@dataclass(frozen=True)
class Candidate:
    row: int
    vector_score: float
    graph_score: float
    entity_score: float
    quality_boost: float
    hybrid: float
    reach: Reach | None  # None: a seed no other seed reaches
    seed: bool


class ExpandedParams(StrategyParams):
    seed_k: int = Field(20, ge=1, le=1000, description="Chunks closest to the query that seed the walk.")
    expansion_depth: int = Field(1, ge=0, le=5, description="Chunk-to-chunk hops from the seeds.")
    expansion_threshold: Cosine = Field(0.7, description="Cosine a SIMILAR_TO edge needs to be followed.")
    max_expanded_chunks: int = Field(50, ge=0, le=5000, description="Chunks admitted beyond the seeds.")
    hop_decay: Unit = Field(0.8, description="Path strength multiplier per hop.")
    chunk_weight: Unit = Field(0.7, description="Vector score weight (1 - chunk_weight: graph score).")
    entity_weight: Unit = Field(0.3, description="Weight of the share of the query's entities mentioned.")
    multi_entity_boost: Unit = Field(0.0, description="Bonus per extra query entity a chunk ties in.")
    query_entities: int = Field(5, ge=0, le=100, description="Entities linked to the query by description.")
    entity_min_similarity: Cosine = Field(0.3, description="Cosine a description-linked entity needs.")
    hub_limit: int = Field(100, ge=1, description="Entities in more chunks than this do not bridge.")
    max_neighbours_per_hop: int = neighbours_per_hop_field(
        50, "an entity with no more relationships is followed in full"
    )
    rerank: bool = Field(False, description="Rescore the best candidates with the reranker (default local).")
    reranker: RerankerName | None = Field(None, description="Reranker by name: local, llm or voyage.")
    rerank_blend: Unit = Field(0.5, description="Share of the rerank score in the final score.")
    rerank_candidates: int | None = Field(None, ge=1, le=1000, description="Candidates reranked (2 x top_k).")


class ExpandedRetriever(RetrieverBase[ExpandedParams]):
    name = "expanded"
    params_model = ExpandedParams
    searches_documents = True  # takes the context option document_ids to seed inside them

    def __init__(
        self,
        context: RetrieverContext,
        params: ExpandedParams | None = None,
        *,
        reranker: Reranker | None = None,
    ) -> None:
        """``reranker``: a reranker object (Python only) used instead of ``params.reranker``'s name."""
        super().__init__(context, params)
        self.reranker = reranker
        self._local_reranker: LocalReranker | None = None

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        return self.retrieve_within(query, top_k, params, None)

    def retrieve_within(
        self, query: str, top_k: int, params: StrategyParams | None, document_ids: Sequence[str] | None
    ) -> Retrieval:
        """`retrieve` seeded inside ``document_ids`` only (None: the whole index); results are
        cached once, in front of the whole query path (`engine.result_cache`)."""
        return self._retrieve(query, top_k, self.using(params), document_ids)

    def _retrieve(
        self, query: str, top_k: int, p: ExpandedParams, document_ids: Sequence[str] | None
    ) -> Retrieval:
        if not query.strip() or top_k <= 0:
            return Retrieval(self.name, ())
        reranker = self.reranker
        if reranker is None and p.reranker is not None:  # a name from a request or settings
            reranker = make_reranker(p.reranker, self.context)
        snap = self.snapshot
        allowed = self._allowed_rows(document_ids)
        q = self.context.embed_query(query)
        sims = snap.chunk_vectors.similarities(q)
        seeds = {row: _clip(score) for row, score in self._seeds(sims, p.seed_k, allowed)}
        graph = ChunkGraph(
            snap,
            similarity_threshold=p.expansion_threshold,
            hub_limit=p.hub_limit,
            per_hop=p.max_neighbours_per_hop,
            allowed=allowed,
        )
        reaches = expand(
            graph, seeds, depth=p.expansion_depth, decay=p.hop_decay, limit=p.max_expanded_chunks
        )
        weights = self._query_entities(query, q, p.query_entities, p.entity_min_similarity)
        candidates = [
            self._candidate(
                row, sims, seeds, reaches, weights, p.chunk_weight, p.entity_weight, p.multi_entity_boost
            )
            for row in sorted(set(seeds) | set(reaches))
        ]
        candidates.sort(key=lambda c: (-c.hybrid, c.row))
        rerank_scores: dict[int, float] = {}
        outcome, chosen = RerankOutcome([]), None
        if p.rerank or reranker is not None:
            chosen = reranker if reranker is not None else self._default_reranker()
            candidates = candidates[
                : p.rerank_candidates or 2 * top_k
            ]  # as RerankingRetriever over-retrieves
            outcome = run_reranker(chosen, query, [snap.chunks.texts[c.row] for c in candidates])
            rerank_scores = {c.row: float(s) for c, s in zip(candidates, outcome.scores, strict=True)}

        def final(c: Candidate) -> float:
            if c.row not in rerank_scores:
                return c.hybrid
            return rerank_scores[c.row] * p.rerank_blend + c.hybrid * (1 - p.rerank_blend)

        ranked = sorted(candidates, key=lambda c: (-final(c), c.row))[:top_k]
        results = tuple(
            chunk_result(snap, c.row, final(c), **self._score_metadata(c, rerank_scores.get(c.row)))
            for c in ranked
        )
        metadata = {
            "seeds": len(seeds),
            "expanded": sum(1 for row in reaches if row not in seeds),
            "similar_to": self._similarity_status(p.expansion_threshold),
            "query_entities": {snap.entities[e]["title"]: round(w, 4) for e, w in weights.items()},
            "reranker": reranker_name(chosen) if chosen is not None else None,
        }
        return Retrieval(
            self.name,
            results,
            usage=outcome.usage,
            llm_calls=outcome.llm_calls,
            cost_usd=outcome.cost_usd,
            metadata={**metadata, **outcome.metadata},
        )

    def _seeds(self, sims: np.ndarray, seed_k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        if allowed is None:
            return top_scores(sims, seed_k)
        rows = np.fromiter(sorted(allowed), np.int64, len(allowed))
        return [(int(rows[i]), score) for i, score in top_scores(sims[rows], seed_k)]

    def _allowed_rows(self, document_ids: Sequence[str] | None) -> set[int] | None:
        if document_ids is None:
            return None
        wanted = {document_ids} if isinstance(document_ids, str) else set(document_ids)
        return {row for row, d in enumerate(self.snapshot.chunks.document_ids) if d in wanted}

    def _query_entities(
        self, query: str, q: np.ndarray, limit: int, min_similarity: float
    ) -> dict[int, float]:
        """entity row → weight: named in the query (1), else its description's cosine."""
        snap = self.snapshot
        weights: dict[int, float] = {}
        for row, sim in snap.entity_vectors.search(q, limit):
            if sim >= min_similarity:
                weights[row] = sim
        for _span, rows in self._names().link(query):
            weights.update(dict.fromkeys(rows, 1.0))
        return {e: w for e, w in weights.items() if snap.entities[e]["type"] not in UNSPECIFIC_TYPES}

    def _candidate(
        self,
        row: int,
        sims: np.ndarray,
        seeds: dict[int, float],
        reaches: dict[int, Reach],
        weights: dict[int, float],
        chunk_weight: float,
        entity_weight: float,
        multi_entity_boost: float,
    ) -> Candidate:
        vector_score = seeds.get(row, _clip(float(sims[row])))
        reach = reaches.get(row)
        graph_score = reach.score if reach is not None else 0.0
        mentioned = [
            e for e in self.snapshot.chunk_entities.get(self.snapshot.chunks.ids[row], []) if e in weights
        ]
        total = sum(weights.values())
        entity_score = sum(weights[e] for e in mentioned) / total if total else 0.0
        quality_boost = multi_entity_boost * max(len(mentioned) - 1, 0)
        hybrid = (
            vector_score * chunk_weight
            + graph_score * (1 - chunk_weight)
            + entity_score * entity_weight
            + quality_boost
        )
        return Candidate(
            row, vector_score, graph_score, entity_score, quality_boost, hybrid, reach, row in seeds
        )

    def _score_metadata(self, c: Candidate, rerank_score: float | None) -> dict[str, Any]:
        ids = self.snapshot.chunks.ids
        return {
            "vector_score": c.vector_score,
            "graph_score": c.graph_score,
            "entity_score": c.entity_score,
            "quality_boost": c.quality_boost,
            "hybrid_score": c.hybrid,
            "rerank_score": rerank_score,
            "hop": 0 if c.seed or c.reach is None else c.reach.hop,
            "expanded_from": None if c.seed or c.reach is None else ids[c.reach.origin],
            "graph_path_from": ids[c.reach.origin] if c.reach is not None else None,
            "via": c.reach.via if c.reach is not None else None,
        }

    def _similarity_status(self, threshold: float) -> dict[str, Any] | str:
        edges = self.snapshot.chunk_similarity
        if edges is None:
            return (
                "missing: this index predates SIMILAR_TO edges, so only entity links expand; "
                f"build them with `{build_command(self.snapshot.home)} --refresh`"
            )
        status: dict[str, Any] = {"edges": len(edges), "index_threshold": edges.threshold}
        if threshold < edges.threshold:
            status["note"] = f"edges below the index threshold {edges.threshold} were never stored"
        return status

    def _names(self) -> NameIndex:
        return name_index(self.snapshot)

    def _default_reranker(self) -> LocalReranker:
        if self._local_reranker is None:
            self._local_reranker = LocalReranker(self.context)
        return self._local_reranker


def _clip(score: float) -> float:
    return min(max(float(score), 0.0), 1.0)
