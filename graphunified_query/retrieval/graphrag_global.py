"""`graphrag_global`: GraphRAG's global search — map community reports, reduce in the answer.

Reports are selected dynamically: the ``top_k_communities`` most similar to the query, minus any
whose similarity falls below ``relative_cutoff`` of the best (GraphRAG's dynamic selection idea:
do not pay to map irrelevant communities). Each selected report is mapped to its relevant points
(parallel LLM calls, or an extractive ranking offline); points become the contexts, and the
answer generator performs the reduce.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from graphunified_query.indexes.dense import top_k as top_scores
from graphunified_query.providers.cost import Usage
from graphunified_query.results import Retrieval, RetrievalResult
from graphunified_query.retrieval.base import RetrieverBase, RetrieverContext
from graphunified_query.retrieval.global_map import ExtractiveMapper, LLMMapper, Mapper
from graphunified_query.retrieval.params import Cosine, StrategyParams, Unit


class GraphRAGGlobalParams(StrategyParams):
    top_k_communities: int = Field(5, ge=1, le=500, description="Community reports mapped per question.")
    relative_cutoff: Unit = Field(0.6, description="Keep map points scoring at least this share of the best.")
    min_similarity: Cosine = Field(0.1, description="Cosine a community report needs to be considered.")


class GraphRAGGlobalRetriever(RetrieverBase):
    name = "graphrag_global"

    def __init__(self, context: RetrieverContext) -> None:
        super().__init__(context)
        self._extractive: ExtractiveMapper | None = None

    def retrieve(
        self,
        query: str,
        top_k: int = 10,
        *,
        top_k_communities: int = 5,
        relative_cutoff: float = 0.6,
        min_similarity: float = 0.1,
        **params: Any,
    ) -> Retrieval:
        snap = self.snapshot
        if not query.strip() or not snap.reports:
            return Retrieval(self.name, ())
        q = self.context.embed_query(query)
        similarities = snap.report_vectors.similarities(q)
        ranked = top_scores(similarities, top_k_communities)
        best = ranked[0][1] if ranked else 0.0
        selected = [(row, s) for row, s in ranked if s >= max(min_similarity, best * relative_cutoff)]
        selection = "similarity"
        if len(selected) < 2:
            # A question about the whole collection ("main themes?") resembles no single report:
            # then the top-level communities, most important first, are what it is about.
            selection = "top level by rating"
            chosen = {row for row, _ in selected}
            top_level = sorted(
                (row for row, r in enumerate(snap.reports) if r["level"] == 0 and row not in chosen),
                key=lambda row: (-snap.reports[row]["rank"], -similarities[row]),
            )
            selected += [
                (row, float(similarities[row])) for row in top_level[: top_k_communities - len(selected)]
            ]
        mapper = self._mapper()
        ledger = self.context.llm.ledger if self.context.llm is not None else None
        before = (ledger.usage, ledger.dollars) if ledger is not None else (Usage(), 0.0)
        mapped = mapper.map(query, [snap.reports[row] for row, _ in selected])
        chunk_sims = snap.chunk_vectors.similarities(q)
        results: list[RetrievalResult] = []
        for (row, similarity), points in zip(selected, mapped, strict=True):
            report = snap.reports[row]
            chunk_ids = self._report_chunks(report["community"], chunk_sims)
            for point in points:
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
                        },
                    )
                )
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

    def _mapper(self) -> Mapper:
        if self.context.llm is not None:
            return LLMMapper(self.context.llm, concurrency=self.context.settings.query.map_concurrency)
        if self._extractive is None:
            self._extractive = ExtractiveMapper(self.context.embedder)  # keeps its point vectors
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
