"""`lightrag`: LightRAG's dual-level retrieval over the entity and relationship vector indexes.

``local`` finds entities and takes the relationships around them; ``global`` finds relationships
and takes their endpoints; ``hybrid`` fuses both (``entity_weight`` on the entity side);
``naive`` is plain chunk search. As in LightRAG, the question is split into low-level keywords
(the entities it names), which the entity side matches, and high-level keywords (its themes),
which the relationship side matches, by the embedding of the joined keywords and by the words of
each relationship's own high-level keywords (`keyword_match`, weight ``keyword_weight``). The
split comes from the configured LLM (`llm_keywords`) or offline from spaCy (`query_keywords`).
It is opt-in (``dual_keywords=true``); see the README's LightRAG section for the dev-set figures.
The chunks behind the retrieved elements come with them, ranked by how much retrieved evidence
cites them and by their own similarity to the query.
"""

from __future__ import annotations

import heapq
import logging
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
from graphunified_query.strategies.mixing import mix
from graphunified_query.strategies.naive import NaiveRetriever
from graphunified_query.strategies.params import StrategyParams, Unit
from graphunified_query.strategies.query_keywords import QueryKeywords, query_keywords
from graphunified_query.strategies.results import Retrieval, RetrievalResult

log = logging.getLogger(__name__)
_KEYWORD_POOL = 4  # with the word match: re-rank 4x the relationships, keep the usual depth
Mode = Literal["local", "global", "hybrid", "naive"]


class LightRAGParams(StrategyParams):
    mode: Mode = Field("hybrid", description="local (entities), global (relationships), hybrid or naive.")
    entity_weight: Unit = Field(0.6, description="hybrid mode: share of entity evidence against relations.")
    top_k_elements: int | None = Field(
        None, ge=1, le=1000, description="Entities/relationships matched (default: from top_k)."
    )
    max_neighbours: int = Field(
        20,
        ge=0,
        le=10_000,
        description="Relationships taken around each matched entity, heaviest first (bounds a hub).",
    )
    dual_keywords: bool = Field(
        False,
        description="Entities match the question's low-level, relationships its high-level keywords.",
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
        weights = {
            "local": (1.0, 0.0),
            "global": (0.0, 1.0),
            "hybrid": (p.entity_weight, 1 - p.entity_weight),
        }[p.mode]
        keywords, source = self._keywords(query) if p.dual_keywords else (None, "")
        if weights[0]:  # entities matched on the low-level keywords (the names), as LightRAG does
            q_low = self._keyed(q, keywords.low_level if keywords else ())
            self._local(q_low, depth, weights[0], p.max_neighbours, entity_scores, relation_scores)
        if weights[1]:  # relationships matched on the high-level keywords (the themes)
            high = keywords.high_level if keywords else ()
            q_high = self._keyed(q, high)
            lexical = keyword_index(snap).shares(high) if high and p.keyword_weight else {}
            self._global(q_high, depth, weights[1], entity_scores, relation_scores, lexical, p.keyword_weight)
        chunk_scores = self._source_chunks(q, entity_scores, relation_scores)
        ranks = chunk_ranks([snap.chunks.ids[row] for row, _, _ in chunk_scores])
        # `mix` takes at most top_k of each kind: only those become results (a hub entity cites
        # thousands of chunks, and building every candidate dominated the latency).
        chunks = [
            chunk_result(snap, row, score, evidence=round(evidence, 4))
            for row, score, evidence in chunk_scores[:top_k]
        ]
        elements: list[RetrievalResult] = [
            entity_result(snap, row, s, ranked_chunks=ranks, mode=p.mode)
            for row, s in heapq.nlargest(top_k, entity_scores.items(), key=_by_score)
        ]
        elements += [
            relationship_result(snap, row, s, ranked_chunks=ranks, mode=p.mode)
            for row, s in heapq.nlargest(top_k, relation_scores.items(), key=_by_score)
        ]
        budget = self.context.settings.query.context_window
        metadata: dict[str, Any] = {"mode": p.mode}
        if keywords is not None:
            metadata |= {"keywords": keywords.as_dict(), "keywords_from": source}
            metadata["explain"] = _explain(p.mode, keywords, source)
        return Retrieval(self.name, mix(chunks, elements, top_k, budget_tokens=budget), metadata=metadata)

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
        weight: float,
        max_neighbours: int,
        entities: dict[int, float],
        relations: dict[int, float],
    ) -> None:
        """Low-level keys: entities, then their heaviest relationships (a hub's thousands are not
        all scored)."""
        snap = self.snapshot
        for row, sim in snap.entity_vectors.search(q, depth):
            score = weight * max(sim, 0.0)
            entities[row] = entities.get(row, 0.0) + score
            around = snap.adjacency.heaviest_relationships(snap.entities[row]["id"], max_neighbours)
            # Only the visited relationships are scored: not a pass over the whole relationship index.
            for rel, similarity in zip(around, snap.relationship_vectors.vectors(around) @ q, strict=True):
                related = score * max(float(similarity), 0.0)
                relations[rel] = max(relations.get(rel, 0.0), related)

    def _global(
        self,
        q: np.ndarray,
        depth: int,
        weight: float,
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
            score = weight * similarity
            relations[rel] = relations.get(rel, 0.0) + score
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
    used = [parts[m] for m in ("local", "global") if mode in (m, "hybrid")]
    return f"lightrag {mode} ({source} keywords): " + "; ".join(used)
