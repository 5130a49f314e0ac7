"""`graphrag_local`: entities matching the query, their k-hop neighbourhood, and its sources.

Query → the closest entity descriptions (seeds) → breadth-first expansion along relationships
(a neighbour inherits its parent's score times ``decay``, scaled by how much of the parent's
edge weight leads to it) → entity descriptions, the relationships inside the neighbourhood, and
the chunks that mention the seeds. Falls back to `naive` when no entity is similar enough.

As GraphRAG's local context builder does, the context is split between the three kinds in fixed
proportions of the slots and of the token budget (``chunk_prop`` 0.5 is GraphRAG's
``text_unit_prop``; entities and relationships share the rest equally, as GraphRAG gives them the
non-text share), each kind ranked within itself: the relationships of the neighbourhood always
get their place, so ``max_hops`` changes what the context shows.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
from pydantic import Field

from graphunified_query.strategies.base import RetrieverBase
from graphunified_query.strategies.contexts import (
    chunk_ranks,
    chunk_result,
    entity_result,
    relationship_result,
)
from graphunified_query.strategies.mixing import mix_shares
from graphunified_query.strategies.naive import NaiveRetriever
from graphunified_query.strategies.params import Cosine, StrategyParams, Unit, neighbours_per_hop_field
from graphunified_query.strategies.results import Retrieval


class GraphRAGLocalParams(StrategyParams):
    top_k_entities: int = Field(5, ge=1, le=200, description="Seed entities matched to the question.")
    max_hops: int = Field(2, ge=0, le=6, description="Graph hops walked out from the seeds.")
    decay: float = Field(0.7, gt=0.0, le=1.0, allow_inf_nan=False, description="Score multiplier per hop.")
    max_neighbourhood: int = Field(
        50, ge=1, le=5000, description="Entities the walk may visit, seeds included."
    )
    max_neighbours_per_hop: int = neighbours_per_hop_field(
        50, "at least max_neighbourhood keeps the result of an unbounded walk"
    )
    min_similarity: Cosine = Field(0.25, description="Cosine a seed entity needs.")
    # GraphRAG's local context builder splits its budget by kind (text_unit_prop and the rest).
    chunk_prop: Unit = Field(0.5, description="Share of the context for passages (GraphRAG text_unit_prop).")
    entity_prop: Unit = Field(0.25, description="Share of the context for entities.")
    relationship_prop: Unit = Field(0.25, description="Share of the context for relationships.")


class GraphRAGLocalRetriever(RetrieverBase[GraphRAGLocalParams]):
    name = "graphrag_local"
    params_model = GraphRAGLocalParams

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        p = self.using(params)
        shares = _shares(p.chunk_prop, p.entity_prop, p.relationship_prop)  # checked before any work
        if not query.strip():
            return Retrieval(self.name, ())
        snap = self.snapshot
        q = self.context.embed_query(query)
        seeds = [
            (row, s) for row, s in snap.entity_vectors.search(q, p.top_k_entities) if s >= p.min_similarity
        ]
        if not seeds:
            fallback = NaiveRetriever(self.context).retrieve(query, top_k)
            return Retrieval(self.name, fallback.results, metadata={"fallback": "naive: no entity matched"})
        scores, hops = expand(
            snap,
            {snap.entities[r]["id"]: s for r, s in seeds},
            p.max_hops,
            p.decay,
            p.max_neighbourhood,
            p.max_neighbours_per_hop,
        )
        seed_ids = [snap.entities[r]["id"] for r, _ in seeds]
        chunk_scores = self._seed_chunks(seed_ids, scores, q)
        ranks = chunk_ranks([snap.chunks.ids[row] for row, _, _ in chunk_scores])
        # `mix_shares` takes at most top_k of each kind: only those become results.
        chunks = [
            chunk_result(snap, row, score, entity_support=round(support, 4))
            for row, score, support in chunk_scores[:top_k]
        ]
        entities = [
            entity_result(snap, snap.entity_row[e], s, ranked_chunks=ranks, hop=hop)
            for s, e, hop in across_hops([(s, e, hops[e]) for e, s in scores.items()], top_k)
        ]
        relations: list[tuple[float, int, int]] = []  # (score, row, hop)
        inner = inner_relationships(snap, scores)
        relationship_sims = snap.relationship_vectors.vectors(inner) @ q if inner else []
        for rel, sim in zip(inner, relationship_sims, strict=True):
            ends = snap.adjacency.endpoints(rel)
            score = (scores[ends[0]] + scores[ends[1]]) / 2 * (0.5 + 0.5 * max(float(sim), 0.0))
            relations.append((score, rel, max(hops[ends[0]], hops[ends[1]])))
        relationships = [
            relationship_result(snap, row, score, ranked_chunks=ranks, hop=hop)
            for score, row, hop in across_hops(relations, top_k)
        ]
        groups = {"chunk": chunks, "entity": entities, "relationship": relationships}
        budget = self.context.settings.query.context_window
        results = mix_shares(groups, shares, top_k, budget_tokens=budget)
        return Retrieval(
            self.name, results, metadata={"seed_entities": [snap.entities[r]["title"] for r, _ in seeds]}
        )

    def _seed_chunks(
        self, seed_ids: list[str], scores: dict[str, float], q: np.ndarray
    ) -> list[tuple[int, float, float]]:
        """(chunk row, score, entity support) of the chunks mentioning the query's entities, best
        first: by dense similarity plus how many seeds they name."""
        snap = self.snapshot
        total = sum(scores[e] for e in seed_ids) or 1.0
        support: dict[int, float] = {}
        for entity_id in seed_ids:
            for row in snap.chunk_rows(snap.entities[snap.entity_row[entity_id]]["text_unit_ids"]):
                support[row] = support.get(row, 0.0) + scores[entity_id] / total
        if not support:
            return []
        rows = np.fromiter(support, dtype=np.int64, count=len(support))
        shares = np.fromiter(support.values(), dtype=np.float64, count=len(support))
        chunk_scores = 0.5 * np.maximum(snap.chunk_vectors.vectors(rows) @ q, 0.0) + 0.5 * shares
        order = np.argsort(-chunk_scores, kind="stable")
        return [(int(rows[i]), float(chunk_scores[i]), float(shares[i])) for i in order]


def _shares(chunk_prop: float, entity_prop: float, relationship_prop: float) -> dict[str, float]:
    props = {"chunk_prop": chunk_prop, "entity_prop": entity_prop, "relationship_prop": relationship_prop}
    if any(p < 0 for p in props.values()) or not 0 < sum(props.values()) <= 1 + 1e-9:
        raise ValueError(
            "graphrag_local: chunk_prop, entity_prop and relationship_prop must be >= 0 and sum to at "
            f"most 1 (got {props}); e.g. --param chunk_prop=0.5 --param entity_prop=0.25 "
            "--param relationship_prop=0.25"
        )
    return {"chunk": chunk_prop, "entity": entity_prop, "relationship": relationship_prop}


def across_hops(items: list[tuple[float, Any, int]], limit: int) -> list[tuple[float, Any, int]]:
    """(score, item, hop) ranked so that each hop's best comes before any hop's second best: the
    seeds score highest and would otherwise fill every slot, hiding the neighbourhood."""
    by_hop: dict[int, list[tuple[float, Any, int]]] = {}
    for item in heapq.nlargest(limit * 4, items, key=lambda c: c[0]):
        by_hop.setdefault(item[2], []).append(item)
    order = sorted(
        ((place, hop, item) for hop, ranked in by_hop.items() for place, item in enumerate(ranked)),
        key=lambda p: (p[0], p[1]),
    )
    return [item for _, _, item in order[:limit]]


def inner_relationships(snap: Any, entities: dict[str, float]) -> list[int]:
    """Rows of the relationships with both endpoints among ``entities``."""
    adjacency = snap.adjacency
    nodes = [node for e in entities if (node := adjacency.node(e)) is not None]
    inside = np.zeros(len(adjacency.starts) - 1, bool)
    inside[nodes] = True
    spans = [adjacency.span(e) for e in entities]
    rows = [adjacency.relationship[s][inside[adjacency.neighbour[s]]] for s in spans if s.stop > s.start]
    return np.unique(np.concatenate(rows)).tolist() if rows else []


def expand(
    snap: Any,
    seeds: dict[str, float],
    max_hops: int,
    decay: float,
    limit: int,
    per_hop: int | None = None,
) -> tuple[dict[str, float], dict[str, int]]:
    """Breadth-first k-hop neighbourhood with decaying scores; keeps the best ``limit`` entities.

    From each entity at most ``per_hop`` new neighbours are followed, its heaviest relationships
    first: a hub with thousands of neighbours costs ``per_hop`` steps, not thousands. A
    neighbour's score grows with its edge's weight, so with ``per_hop >= limit`` the neighbours
    left out could never have made the best ``limit`` anyway.
    """
    scores = dict(seeds)
    hops = dict.fromkeys(seeds, 0)
    frontier = list(seeds)
    for hop in range(1, max_hops + 1):
        reached: dict[str, float] = {}
        adjacency = snap.adjacency
        ids = adjacency.ids
        for entity in frontier:
            span = adjacency.span(entity)  # heaviest first; unbounded, the order makes no difference
            total = adjacency.total_weight(entity) or 1.0
            followed = 0
            around = zip(adjacency.neighbour[span].tolist(), adjacency.weight[span].tolist(), strict=True)
            for node, weight in around:
                neighbour = ids[node]
                if neighbour in scores:
                    continue
                if per_hop and followed >= per_hop:
                    break
                followed += 1
                share = weight / total
                candidate = scores[entity] * decay * (0.5 + 0.5 * share)
                reached[neighbour] = max(reached.get(neighbour, 0.0), candidate)
        best = sorted(reached.items(), key=lambda item: (-item[1], item[0]))[: max(limit - len(scores), 0)]
        for neighbour, score in best:
            scores[neighbour] = score
            hops[neighbour] = hop
        frontier = [n for n, _ in best]
        if not frontier:
            break
    return scores, hops
