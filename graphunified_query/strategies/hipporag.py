"""`hipporag`: Personalized PageRank over the entity–passage graph (HippoRAG v1 and v2).

Seeds: the entities the question names (linked by title), entities named by the facts most
similar to the query (HippoRAG 2's fact recognition),
entities whose descriptions match the query, and the entities of the top dense passage (so the
walk can take the second hop from the first one). Each seed is weighted by specificity, 1 / the
number of passages mentioning it (HippoRAG v1: rare entities say more). Passage nodes get a small
reset mass proportional to their dense similarity (HippoRAG 2), so PPR refines dense retrieval
rather than replacing it. Passages are ranked by their PageRank mass.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from pydantic import Field

from graphunified_query.core.indexes.dense import top_k as top_scores
from graphunified_query.strategies.base import RetrieverBase
from graphunified_query.strategies.contexts import chunk_result
from graphunified_query.strategies.entity_linking import NameIndex, name_index
from graphunified_query.strategies.naive import NaiveRetriever
from graphunified_query.strategies.params import Cosine, StrategyParams, Unit
from graphunified_query.strategies.ppr import pagerank_iterations, transition_matrix
from graphunified_query.strategies.results import Retrieval

UNSPECIFIC_TYPES = frozenset({"DATE"})


class HippoRAGParams(StrategyParams):
    ppr_alpha: float = Field(
        0.5, gt=0.0, lt=1.0, allow_inf_nan=False, description="Personalized PageRank damping."
    )
    top_k_facts: int = Field(5, ge=1, le=200, description="Facts (relationships) seeding the walk.")
    top_k_entities: int = Field(5, ge=1, le=200, description="Entities seeding the walk.")
    seed_passages: int = Field(1, ge=0, le=200, description="Passages seeded directly by dense search.")
    passage_weight: Unit = Field(0.05, description="Weight of the dense passage seeds against entity seeds.")
    min_similarity: Cosine = Field(0.2, description="Cosine an entity or fact seed needs.")
    ppr_tolerance: float = Field(
        1e-4,
        gt=0.0,
        le=0.1,
        allow_inf_nan=False,
        description="PageRank stops when a step moves less mass than this (L1); the scores are then "
        "within tolerance x alpha / (1 - alpha) of the exact ones.",
    )


class HippoRAGRetriever(RetrieverBase[HippoRAGParams]):
    name = "hipporag"
    params_model = HippoRAGParams

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        p = self.using(params)
        if not query.strip():
            return Retrieval(self.name, ())
        snap = self.snapshot
        graph = snap.graph
        if graph.n_edges == 0 or graph.n_entities == 0:
            found = NaiveRetriever(self.context).retrieve(query, top_k)
            return Retrieval(self.name, found.results, metadata={"fallback": "naive: the graph has no edges"})
        q = self.context.embed_query(query)
        chunk_sims = snap.chunk_vectors.similarities(q)
        seeds = self._entity_seeds(
            query, q, chunk_sims, p.top_k_facts, p.top_k_entities, p.seed_passages, p.min_similarity
        )
        reset = np.zeros(len(graph.node_ids), np.float32)
        for entity_id, weight in seeds.items():
            reset[graph.index[entity_id]] += weight
        # HippoRAG 2: every passage node gets passage_weight x its min-max scaled dense score.
        passage_nodes = self._passage_nodes_of_chunks()
        present = passage_nodes >= 0
        reset[passage_nodes[present]] += p.passage_weight * _min_max(chunk_sims)[present]
        mass, steps = pagerank_iterations(
            self._transition(), reset, damping=p.ppr_alpha, tolerance=p.ppr_tolerance
        )
        passage_mass = mass[graph.n_entities :]
        chunk_of_node = self._chunk_rows_of_passage_nodes()
        best = top_scores(passage_mass, top_k)
        top = best[0][1] if best and best[0][1] > 0 else 1.0
        results = tuple(
            chunk_result(
                snap,
                int(chunk_of_node[node]),
                value / top,
                ppr_mass=float(value),
                dense_score=round(float(chunk_sims[chunk_of_node[node]]), 6),
            )
            for node, value in best
            if chunk_of_node[node] >= 0 and value > 0
        )
        seed_titles = {snap.entities[snap.entity_row[e]]["title"]: round(w, 5) for e, w in seeds.items()}
        return Retrieval(
            self.name,
            results,
            metadata={"seeds": seed_titles, "damping": p.ppr_alpha, "ppr_iterations": steps},
        )

    def warm(self) -> None:
        """The transition matrix, name index and node maps, built once per snapshot."""
        self._transition()
        self._names()
        self._passage_nodes_of_chunks()
        self._chunk_rows_of_passage_nodes()

    def _entity_seeds(
        self,
        query: str,
        q: np.ndarray,
        chunk_sims: np.ndarray,
        top_k_facts: int,
        top_k_entities: int,
        seed_passages: int,
        min_similarity: float,
    ) -> dict[str, float]:
        snap = self.snapshot
        raw: dict[str, float] = {}

        def add(entity_id: str | None, weight: float) -> None:
            if not entity_id or entity_id not in snap.graph.index or weight <= 0:
                return
            if snap.entities[snap.entity_row[entity_id]]["type"] in UNSPECIFIC_TYPES:
                return  # "1889" links every passage of its year: a hub, not a clue to the subject
            raw[entity_id] = raw.get(entity_id, 0.0) + weight

        # The entities the question names: the strongest seeds (HippoRAG links query entities first).
        for _span, rows in self._names().link(query):
            for row in rows:
                add(snap.entities[row]["id"], 1.0)
        for row, sim in snap.fact_vectors.search(q, top_k_facts):
            if sim >= min_similarity:
                add(snap.facts[row]["subject_id"], sim)
                add(snap.facts[row]["object_id"], sim)
        for row, sim in snap.entity_vectors.search(q, top_k_entities):
            if sim >= min_similarity:
                add(snap.entities[row]["id"], sim)
        for row, sim in top_scores(chunk_sims, seed_passages):
            for entity_row in snap.chunk_entities.get(snap.chunks.ids[row], []):
                add(snap.entities[entity_row]["id"], 0.5 * max(sim, 0.0))
        # Specificity: an entity in 500 passages narrows nothing down; one in 2 passages does.
        return {
            e: w / max(len(snap.entities[snap.entity_row[e]]["text_unit_ids"]), 1) for e, w in raw.items()
        }

    def _passage_nodes_of_chunks(self) -> np.ndarray:
        """For each chunk row, its passage node in the graph (-1 if absent)."""
        cached = self.snapshot.extras.get("ppr_passage_nodes")
        if cached is None:
            index = self.snapshot.graph.index
            cached = np.array([index.get(c, -1) for c in self.snapshot.chunks.ids], np.int64)
            self.snapshot.extras["ppr_passage_nodes"] = cached
        return cached

    def _names(self) -> NameIndex:
        return name_index(self.snapshot)

    def _transition(self) -> sp.csr_matrix:
        cached = self.snapshot.extras.get("ppr_transition")
        if cached is None:
            cached = self.snapshot.extras["ppr_transition"] = transition_matrix(self.snapshot.graph.adjacency)
        return cached

    def _chunk_rows_of_passage_nodes(self) -> np.ndarray:
        """For each passage node, its row in the chunk table (-1 if the chunk is gone)."""
        cached = self.snapshot.extras.get("ppr_chunk_rows")
        if cached is None:
            graph, rows = self.snapshot.graph, self.snapshot.chunk_row
            cached = np.array([rows.get(n, -1) for n in graph.node_ids[graph.n_entities :]], np.int64)
            self.snapshot.extras["ppr_chunk_rows"] = cached
        return cached


def _min_max(scores: np.ndarray) -> np.ndarray:
    low, high = float(scores.min(initial=0.0)), float(scores.max(initial=0.0))
    return (scores - low) / (high - low) if high > low else np.ones_like(scores)
