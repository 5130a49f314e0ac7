"""`graphrag_global`: GraphRAG's global search — map community reports, reduce in the answer.

A question about the whole collection ("What are the main topics?") takes the top-level
communities ranked by rating and size, and keeps each report's most helpful points whatever their
similarity to the question: it lists the collection's themes. Other questions select reports
dynamically: the ``top_k_communities`` most similar to the query, minus any whose similarity falls
below ``relative_cutoff`` of the best (GraphRAG's dynamic selection idea: do not pay to map
irrelevant communities). Each selected report is mapped to its relevant points
(parallel LLM calls, or an extractive ranking offline); points become the contexts, and the
answer generator performs the reduce.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from graphunified_query.core.indexes.dense import top_k as top_scores
from graphunified_query.core.providers.cost import Usage
from graphunified_query.generation.themes import CORPUS_SELECTION
from graphunified_query.strategies.base import RetrieverBase, RetrieverContext
from graphunified_query.strategies.global_map import ExtractiveMapper, LLMMapper, Mapper, main_points
from graphunified_query.strategies.params import Cosine, StrategyParams, Unit
from graphunified_query.strategies.results import Retrieval, RetrievalResult

# "auto": a question about the whole collection (the router's summary cue, no name) takes the
# top-level communities; "corpus" and "specific" force one selection or the other.
Scope = Literal["auto", "corpus", "specific"]


class GraphRAGGlobalParams(StrategyParams):
    top_k_communities: int = Field(5, ge=1, le=500, description="Community reports mapped per question.")
    relative_cutoff: Unit = Field(0.6, description="Keep map points scoring at least this share of the best.")
    min_similarity: Cosine = Field(0.1, description="Cosine a community report needs to be considered.")
    scope: Scope = Field(
        "auto",
        description="auto (a whole-collection question takes top-level communities), corpus or specific.",
    )


class GraphRAGGlobalRetriever(RetrieverBase[GraphRAGGlobalParams]):
    name = "graphrag_global"
    params_model = GraphRAGGlobalParams

    def __init__(self, context: RetrieverContext, params: GraphRAGGlobalParams | None = None) -> None:
        super().__init__(context, params)
        self._extractive: ExtractiveMapper | None = None

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        p = self.using(params)
        snap = self.snapshot
        if not query.strip() or not snap.reports:
            return Retrieval(self.name, ())
        q = self.context.embed_query(query)
        similarities = snap.report_vectors.similarities(q)
        # The router's cue, imported here: the router reads the registry, which imports this module.
        from graphunified_query.routing.rules import asks_about_collection

        corpus_wide = p.scope == "corpus" or (p.scope == "auto" and asks_about_collection(query))
        if corpus_wide:
            selected, selection = self._top_level(similarities, p.top_k_communities), CORPUS_SELECTION
            ranked = selected
        else:
            ranked = top_scores(similarities, p.top_k_communities)
            selected, selection = self._similar(
                snap, similarities, ranked, p.top_k_communities, p.relative_cutoff, p.min_similarity
            )
        mapper = self._mapper()
        ledger = self.context.llm.ledger if self.context.llm is not None else None
        before = (ledger.usage, ledger.dollars) if ledger is not None else (Usage(), 0.0)
        reports = [snap.reports[row] for row, _ in selected]
        if corpus_wide and isinstance(mapper, ExtractiveMapper):
            mapped = [main_points(report) for report in reports]
        else:
            mapped = mapper.map(query, reports)
        if corpus_wide:  # every theme is listed: a report the model found nothing in gives its own points
            mapped = [points or main_points(report) for points, report in zip(mapped, reports, strict=True)]
        chunk_sims = snap.chunk_vectors.similarities(q)
        results: list[RetrievalResult] = []
        for (row, similarity), points in zip(selected, mapped, strict=True):
            report = snap.reports[row]
            # A theme is cited to the passages closest to its report; a specific answer to the question.
            anchor = snap.report_vectors.vectors([row])[0] if corpus_wide else None
            sims = snap.chunk_vectors.similarities(anchor) if anchor is not None else chunk_sims
            chunk_ids = self._report_chunks(report["community"], sims)
            sources = list(dict.fromkeys(snap.chunks.source(snap.chunk_row[c]) for c in chunk_ids))
            for position, point in enumerate(points):
                results.append(
                    RetrievalResult(
                        text=point.text,
                        score=float(point.score),
                        source=f"Community {report['community']} report: {report['title']}",
                        kind="community_report",
                        chunk_id=chunk_ids[0] if chunk_ids else None,
                        document_id=snap.chunks.document_ids[snap.chunk_row[chunk_ids[0]]]
                        if chunk_ids
                        else None,
                        chunk_ids=tuple(chunk_ids),
                        metadata={
                            "community": report["community"],
                            "level": report["level"],
                            "report_similarity": round(similarity, 6),
                            "report_rank": report["rank"],
                            "report_title": report["title"],
                            "source_chunks": sources,
                            "selection": selection,
                            "point": position,
                        },
                    )
                )
        if corpus_wide:  # each report's best point first, so a short list still spans the themes
            results.sort(key=lambda r: (r.metadata["point"], -r.score, r.source))
        else:
            results.sort(key=lambda r: (-r.score, r.source))
        usage, dollars = (
            (_minus(ledger.usage, before[0]), ledger.dollars - before[1])
            if ledger is not None
            else (Usage(), 0.0)
        )
        return Retrieval(
            self.name,
            tuple(results[:top_k]),
            usage=usage,
            llm_calls=mapper.llm_calls,
            cost_usd=dollars,
            metadata={
                "communities_considered": len(ranked),
                "communities_mapped": len(selected),
                "selection": selection,
                "map": self.context.llm.label
                if isinstance(mapper, LLMMapper) and self.context.llm
                else "extractive",
            },
        )

    def _top_level(self, similarities: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """The top-level communities, by rating then size: what the whole collection is about."""
        reports = self.snapshot.reports
        top = min((r["level"] for r in reports), default=0)
        rows = sorted(
            (row for row, r in enumerate(reports) if r["level"] == top),
            key=lambda row: (-float(reports[row]["rank"] or 0), -int(reports[row].get("size") or 0), row),
        )
        return [(row, float(similarities[row])) for row in rows[:limit]]

    @staticmethod
    def _similar(
        snap: Any,
        similarities: np.ndarray,
        ranked: list[tuple[int, float]],
        limit: int,
        relative_cutoff: float,
        min_similarity: float,
    ) -> tuple[list[tuple[int, float]], str]:
        """The reports most similar to a specific question, minus those far below the best."""
        best = ranked[0][1] if ranked else 0.0
        selected = [(row, s) for row, s in ranked if s >= max(min_similarity, best * relative_cutoff)]
        if len(selected) >= 2:
            return selected, "similarity"
        # Too little resembles the question: the top-level communities, most important first.
        chosen = {row for row, _ in selected}
        top_level = sorted(
            (row for row, r in enumerate(snap.reports) if r["level"] == 0 and row not in chosen),
            key=lambda row: (-snap.reports[row]["rank"], -similarities[row]),
        )
        fill = [(row, float(similarities[row])) for row in top_level[: limit - len(selected)]]
        return selected + fill, "top level by rating"

    def _mapper(self) -> Mapper:
        if self.context.llm is not None:
            return LLMMapper(self.context.llm, concurrency=self.context.settings.query.map_concurrency)
        points = self.snapshot.report_points  # the index's point vectors (None: an older home)
        if self._extractive is None or self._extractive.points is not points:
            self._extractive = ExtractiveMapper(  # keeps the point vectors it had to embed
                self.context.embedder, embed_query=self.context.embed_query, points=points
            )
        return self._extractive

    def _report_chunks(self, community: int, chunk_sims: np.ndarray, limit: int = 5) -> list[str]:
        """The community's passages most similar to the query: where its report's claims come from."""
        row = self.snapshot.communities.get(community)
        rows = self.snapshot.chunk_rows(row["text_unit_ids"]) if row else []
        rows.sort(key=lambda r: -chunk_sims[r])
        return [self.snapshot.chunks.ids[r] for r in rows[:limit]]


def _minus(after: Usage, before: Usage) -> Usage:
    return Usage(
        after.input_tokens - before.input_tokens,
        after.output_tokens - before.output_tokens,
        after.cache_read_tokens - before.cache_read_tokens,
        after.cache_write_tokens - before.cache_write_tokens,
    )
