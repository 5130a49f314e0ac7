"""`lightrag`: LightRAG's dual-level retrieval over the entity and relationship vector indexes.

The modes are LightRAG's (and the seeds'):

- ``local``: the question's low-level keywords (the entities it names) match the entity index;
  the relationships around those entities come with them (entity-centric);
- ``global``: its high-level keywords (its themes) match the relationship index, by the embedding
  of the joined keywords and, with ``keyword_weight``, by the words of each relationship's own
  high-level keywords (`keyword_match`); their endpoint entities come with them;
- ``hybrid``: both; ``mix``: both, plus the chunks nearest the question in the chunk index;
- ``naive``: the chunk index only.

The chunks behind the retrieved elements come with them, ranked by how much retrieved evidence
cites them and by their own similarity to the query. Half the ``top_k`` slots go to chunks (in
``mix``, a quarter each to those cited by the graph and to the nearest ones); the graph half is
split ``entity_weight`` : ``1 - entity_weight`` between entities and relationships, so 0.6 gives
about 60 % entities among the graph contexts whatever the scores (`mix_shares`; slots a kind
leaves unused pass to the others). The keyword split comes from the configured LLM
(`llm_keywords`) or offline from spaCy (`query_keywords`). By default (``dual_keywords`` unset) it
is used in ``global`` mode only, where it raised the sample's Recall@5 from 0.811 to 0.883; in the
other modes it lowered it (hybrid 0.922 to 0.867), so there it is opt-in (docs/seed-settings.md).
Without it both sides match the whole question.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field

from graphunified_query.core.providers.llm_client import LLMError
from graphunified_query.strategies.base import RetrieverBase
from graphunified_query.strategies.contexts import (
    chunk_ranks,
    chunk_result,
    entity_result,
    relationship_result,
)
from graphunified_query.strategies.keyword_match import keyword_index
from graphunified_query.strategies.llm_keywords import llm_keywords
from graphunified_query.strategies.mixing import mix_shares, trim_to_budget
from graphunified_query.strategies.naive import NaiveRetriever
from graphunified_query.strategies.params import StrategyParams, Unit
from graphunified_query.strategies.query_keywords import QueryKeywords, query_keywords
from graphunified_query.strategies.results import Retrieval, RetrievalResult

log = logging.getLogger(__name__)
_KEYWORD_POOL = 4  # with the word match: re-rank 4x the relationships, keep the usual depth
Mode = Literal["local", "global", "hybrid", "mix", "naive"]
MODES: tuple[Mode, ...] = ("local", "global", "hybrid", "mix", "naive")
_CHUNK_SHARE = 0.5  # of the top_k slots: passages, what the answer is read from; the rest: graph


class LightRAGParams(StrategyParams):
    mode: Mode = Field(
        "hybrid",
        description="local (entity index), global (relationship index), hybrid (both), mix (both + "
        "chunk vectors) or naive (chunk vectors only).",
    )
    entity_weight: Unit = Field(
        0.6, description="Share of the graph contexts that are entities (the rest: relationships)."
    )
    top_k_elements: int | None = Field(
        None, ge=1, le=1000, description="Entities/relationships matched (default: from top_k)."
    )
    max_neighbours: int = Field(
        20,
        ge=0,
        le=10_000,
        description="Relationships taken around each matched entity, heaviest first (bounds a hub).",
    )
    dual_keywords: bool | None = Field(
        None,
        description="Entities match the question's low-level, relationships its high-level keywords "
        "(LightRAG's thematic layer); unset: in global mode only, where it raised recall.",
    )
    keyword_weight: Unit = Field(
        0.5,
        description="dual_keywords: weight of the high-level keywords' word match on relationship keywords.",
    )


class LightRAGRetriever(RetrieverBase[LightRAGParams]):
    name = "lightrag"
    params_model = LightRAGParams

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        p = self.using(params)
        if not query.strip():
            return Retrieval(self.name, ())
        if p.mode == "naive":
            found = NaiveRetriever(self.context).retrieve(query, top_k)
            return Retrieval(self.name, found.results, metadata={"mode": p.mode})
        snap = self.snapshot
        q = self.context.embed_query(query)
        depth = p.top_k_elements or 2 * top_k
        entity_scores: dict[int, float] = {}
        relation_scores: dict[int, float] = {}
        split = p.mode == "global" if p.dual_keywords is None else p.dual_keywords
        keywords, source = self._keywords(query) if split else (None, "")
        if p.mode != "global":  # entities matched on the low-level keywords (the names)
            q_low = self._keyed(q, keywords.low_level if keywords else ())
            self._local(q_low, depth, p.max_neighbours, entity_scores, relation_scores)
        if p.mode != "local":  # relationships matched on the high-level keywords (the themes)
            high = keywords.high_level if keywords else ()
            q_high = self._keyed(q, high)
            lexical = keyword_index(snap).shares(high) if high and p.keyword_weight else {}
            self._global(q_high, depth, entity_scores, relation_scores, lexical, p.keyword_weight)
        chunk_scores = self._source_chunks(q, entity_scores, relation_scores)
        ranks = chunk_ranks([snap.chunks.ids[row] for row, _, _ in chunk_scores])
        # `mix_shares` takes at most top_k of each kind: only those become results (a hub entity
        # cites thousands of chunks, and building every candidate dominated the latency).
        # mix: twice as deep as its slots, so the ones the graph cited already leave enough.
        nearest = dict(snap.chunk_vectors.search(q, 2 * top_k)) if p.mode == "mix" else {}
        cited = [
            chunk_result(
                snap, row, score, evidence=round(evidence, 4), retrieved_by=_by(row in nearest, "graph")
            )
            for row, score, evidence in chunk_scores[:top_k]
        ]
        cited_rows = {row for row, _, _ in chunk_scores[:top_k]}
        passages: dict[str, list[RetrievalResult]] = {
            "chunk": cited,
            "vector_chunk": [  # mix: the nearest chunks the graph did not cite already
                chunk_result(
                    snap, row, min(max(sim, 0.0), 1.0), dense_score=round(sim, 6), retrieved_by="vector"
                )
                for row, sim in nearest.items()
                if row not in cited_rows
            ],
        }
        elements: dict[str, list[RetrievalResult]] = {
            "entity": [
                entity_result(snap, row, s, ranked_chunks=ranks, mode=p.mode)
                for row, s in heapq.nlargest(top_k, entity_scores.items(), key=_by_score)
            ],
            "relationship": [
                relationship_result(snap, row, s, ranked_chunks=ranks, mode=p.mode)
                for row, s in heapq.nlargest(top_k, relation_scores.items(), key=_by_score)
            ],
        }
        budget = self.context.settings.query.context_window
        metadata: dict[str, Any] = {"mode": p.mode}
        if keywords is not None:
            metadata |= {"keywords": keywords.as_dict(), "keywords_from": source}
            metadata["explain"] = _explain(p.mode, keywords, source)
        vector = 0.5 if p.mode == "mix" else 0.0
        results = _packed(
            passages,
            {"chunk": 1.0 - vector, "vector_chunk": vector},
            elements,
            {"entity": p.entity_weight, "relationship": 1.0 - p.entity_weight},
            top_k,
        )
        return Retrieval(self.name, trim_to_budget(results, budget), metadata=metadata)

    def _keywords(self, query: str) -> tuple[QueryKeywords, str]:
        """The question's split and who made it: the configured LLM, else spaCy offline."""
        llm = self.context.llm
        if llm is not None:
            try:
                return llm_keywords(llm, query), llm.label
            except (LLMError, ValueError) as error:  # a failed split is not a failed query
                log.warning("lightrag: LLM query keywords failed (%s); using the offline split", error)
        return query_keywords(query), "offline"

    def _keyed(self, q: np.ndarray, keywords: tuple[str, ...]) -> np.ndarray:
        """The keywords' query vector; the question's own when it has none of that level."""
        return self.context.embed_query(", ".join(keywords)) if keywords else q

    def _local(
        self,
        q: np.ndarray,
        depth: int,
        max_neighbours: int,
        entities: dict[int, float],
        relations: dict[int, float],
    ) -> None:
        """Low-level keys: entities, then their heaviest relationships (a hub's thousands are not
        all scored)."""
        snap = self.snapshot
        for row, sim in snap.entity_vectors.search(q, depth):
            score = max(sim, 0.0)
            entities[row] = max(entities.get(row, 0.0), score)
            around = snap.adjacency.heaviest_relationships(snap.entities[row]["id"], max_neighbours)
            # Only the visited relationships are scored: not a pass over the whole relationship index.
            for rel, similarity in zip(around, snap.relationship_vectors.vectors(around) @ q, strict=True):
                related = score * max(float(similarity), 0.0)
                relations[rel] = max(relations.get(rel, 0.0), related)

    def _global(
        self,
        q: np.ndarray,
        depth: int,
        entities: dict[int, float],
        relations: dict[int, float],
        lexical: Mapping[int, float] | None = None,
        keyword_weight: float = 0.0,
    ) -> None:
        """High-level keys: relationships (by meaning, plus ``keyword_weight`` times the share of
        the high-level keywords their own keywords match), then their endpoint entities. The word
        match re-ranks a deeper pool of the embedding's candidates (`keyword_match` says why)."""
        snap = self.snapshot
        matched = lexical or {}
        pool = snap.relationship_vectors.search(q, depth * _KEYWORD_POOL if matched else depth)
        scored = [(rel, max(sim, 0.0) + keyword_weight * matched.get(rel, 0.0)) for rel, sim in pool]
        for rel, similarity in heapq.nlargest(depth, scored, key=_by_score):
            score = similarity
            relations[rel] = max(relations.get(rel, 0.0), score)  # hybrid: found by both sides
            for row in snap.adjacency.endpoint_rows(rel):
                if row is not None:
                    entities[row] = max(entities.get(row, 0.0), score * 0.5)

    def _source_chunks(
        self, q: np.ndarray, entities: dict[int, float], relations: dict[int, float]
    ) -> list[tuple[int, float, float]]:
        """(chunk row, score, evidence) of every chunk behind the elements, best first."""
        snap = self.snapshot
        support: dict[int, float] = {}
        cited = [(snap.entities[r]["text_unit_ids"], s) for r, s in entities.items()]
        cited += [(snap.relationships[r]["text_unit_ids"], s) for r, s in relations.items()]
        for chunk_ids, score in cited:
            for row in snap.chunk_rows(chunk_ids):
                support[row] = support.get(row, 0.0) + score
        if not support:
            return []
        top = max(support.values())
        rows = np.fromiter(support, dtype=np.int64, count=len(support))
        evidence = np.fromiter(support.values(), dtype=np.float64, count=len(support))
        scores = 0.5 * evidence / top + 0.5 * np.maximum(snap.chunk_vectors.vectors(rows) @ q, 0.0)
        order = np.argsort(-scores, kind="stable")
        return [(int(rows[i]), float(scores[i]), float(evidence[i])) for i in order]


def _packed(
    passages: Mapping[str, list[RetrievalResult]],
    passage_shares: Mapping[str, float],
    elements: Mapping[str, list[RetrievalResult]],
    element_shares: Mapping[str, float],
    top_k: int,
) -> list[RetrievalResult]:
    """Half the slots (rounded up) to passages, the rest to graph elements split by their shares;
    slots one half cannot fill go to the other. The split of each half holds whatever the scores:
    an entity's cosine and a relationship's are not comparable enough to rank them together."""
    chunks = mix_shares(passages, passage_shares, math.ceil(top_k * _CHUNK_SHARE))
    graph = mix_shares(elements, element_shares, top_k - len(chunks))
    if len(chunks) + len(graph) < top_k:
        chunks = mix_shares(passages, passage_shares, top_k - len(graph))
    return sorted([*chunks, *graph], key=lambda r: -r.score)


def _by(also_vector: bool, first: str) -> str:
    return f"{first}+vector" if also_vector else first


def _by_score(item: tuple[int, float]) -> float:
    return item[1]


def _explain(mode: str, keywords: QueryKeywords, source: str) -> str:
    """What the dual-level keywords did, in words (shown by `ask` and in the response metadata)."""
    low = ", ".join(keywords.low_level) or "none: the whole question"
    high = ", ".join(keywords.high_level) or "none: the whole question"
    parts = {
        "local": f"entities matched on low-level keywords [{low}]",
        "global": f"relationships matched on high-level keywords [{high}]",
    }
    used = [parts[m] for m in ("local", "global") if mode in (m, "hybrid", "mix")]
    if mode == "mix":
        used.append("and the chunks nearest the question")
    return f"lightrag {mode} ({source} keywords): " + "; ".join(used)
