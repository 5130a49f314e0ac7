"""The one query path every entry point runs: retrieve → risk and metadata filters → expansion → packing.

(Generation, the last step, is the engine's.) The filters act on the candidate set, not on a cut
list: when they leave fewer than ``top_k`` contexts and the strategy had more to give, the strategy
is asked again for a deeper list (x4 each time, up to every chunk of the index), so ``top_k``
matching contexts come back whenever the index holds them (not for a strategy whose candidates do
not grow with the depth asked, `Strategy.deepens`: graphrag_global would repeat its LLM map).
A strategy whose candidates stop growing (a graph walk reaches only the question's neighbourhood;
global search answers with community reports no one document backs) can still leave places empty
under a metadata filter. Those are filled from the dense passage search inside the filter, ranked below
everything the strategy found (``metadata["fill"]``), as the graph strategies already fall back to
dense search when no entity matches: ``top_k`` matching contexts come back whenever the index
holds them, whatever the strategy. ``top_k`` is then a hard cap on the strategy's contexts: link
expansion never takes one of those places, its chunks come back beside them (`ContextPipeline`).
The whole path's outcome is cached per request and generation (`result_cache`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphunified_query.context.candidates import filtering
from graphunified_query.context.filters import ContextFilter
from graphunified_query.context.pipeline import ContextPipeline, PreparedContext
from graphunified_query.core.providers.cost import Usage
from graphunified_query.core.settings.model import QuerySettings
from graphunified_query.strategies.base import Retriever
from graphunified_query.strategies.params import StrategyParams
from graphunified_query.strategies.results import GeneratedAnswer, Retrieval, RetrievalResult

DEEPEN = 4  # how much deeper each refill asks


@dataclass(frozen=True)
class PathOutcome:
    retrieval: Retrieval  # the deepest list the strategy returned, with the cost of every call summed
    prepared: PreparedContext  # what is returned (at most top_k) and sent to a generator
    depth: int  # the list length last asked of the strategy

    def reused(self) -> PathOutcome:
        """This outcome served again from the result cache: its retrieval costs nothing now."""
        free = replace(self.retrieval, usage=Usage(), llm_calls=0, cost_usd=0.0)
        return replace(self, retrieval=free)

    def costs(self, answer: GeneratedAnswer | None) -> dict[str, Any]:
        """Tokens, dollars and LLM calls of the retrieval and the answer together."""
        usage = self.retrieval.usage + (answer.usage if answer else Usage())
        return {
            "tokens_used": usage.total,
            "cost_usd": round(self.retrieval.cost_usd + (answer.cost_usd if answer else 0.0), 6),
            "llm_calls": self.retrieval.llm_calls + (answer.llm_calls if answer else 0),
            # An answer from the LLM cache costs nothing now; what it cost when first asked:
            "cached": bool(answer and answer.cached),
            "cached_tokens": answer.cached_usage.total if answer else 0,
        }


def run_path(
    retriever: Retriever,
    pipeline: ContextPipeline,
    question: str,
    top_k: int,
    params: StrategyParams | None,
    query: QuerySettings,
    *,
    deepens: bool = True,
    fill: Retriever | None = None,
) -> PathOutcome:
    """``params``: the strategy's typed parameters (None: the retriever's own); ``fill``: the dense
    passage search that fills places a filter left empty (None: no fill)."""
    spent, kept, removed, depth = _filtered(retriever, pipeline, question, top_k, params, query, deepens)
    # Only a metadata filter narrows the search to a part the strategy may not reach; what the
    # risk filter drops alone is left out, not replaced by passages the strategy did not find.
    if len(kept) < top_k and fill is not None and removed and ContextFilter.from_settings(query).narrows:
        _, filler, _, _ = _filtered(fill, pipeline, question, top_k, None, query, True)
        kept = [*kept, *_ranked_below(kept, filler, top_k - len(kept))]
    prepared = pipeline.finish(kept[:top_k], query, raw_hits=len(spent.results), removed=removed, top_k=top_k)
    return PathOutcome(spent, prepared, depth)


def _filtered(
    retriever: Retriever,
    pipeline: ContextPipeline,
    question: str,
    top_k: int,
    params: StrategyParams | None,
    query: QuerySettings,
    deepens: bool,
) -> tuple[Retrieval, list[RetrievalResult], Counter[str], int]:
    """The strategy's results through the filters, asked deeper until ``top_k`` pass or it has no
    more: (the deepest retrieval with every call's cost, kept, removed counts, depth asked)."""
    limit = max(top_k, len(pipeline.snapshot.chunks.ids)) if deepens else top_k
    depth = top_k
    spent: Retrieval | None = None
    while True:
        with filtering(ContextFilter.from_settings(query)):  # MMR, rerankers, combiners filter first
            retrieval = retriever.retrieve(question, depth, params)
        spent = retrieval if spent is None else _with_costs(retrieval, spent)
        kept, removed = pipeline.filter(retrieval.results, query)
        exhausted = len(retrieval.results) < depth or depth >= limit
        if len(kept) >= top_k or not removed or exhausted:
            return spent, list(kept), removed, depth
        depth = min(depth * DEEPEN, limit)


def _ranked_below(
    kept: Sequence[RetrievalResult], filler: Sequence[RetrievalResult], places: int
) -> list[RetrievalResult]:
    """Up to ``places`` of ``filler`` not already kept, scaled below the lowest kept score (their
    order kept) so the packer never ranks a fill above what the strategy itself found."""
    seen = {r.chunk_id for r in kept}
    floor = min((r.score for r in kept), default=None)
    added = [r for r in filler if r.chunk_id not in seen][:places]
    if floor is None:
        return [replace(r, metadata={**r.metadata, "fill": "naive"}) for r in added]
    top = max((r.score for r in added), default=1.0) or 1.0
    return [
        replace(r, score=floor * 0.99 * max(r.score, 0.0) / top, metadata={**r.metadata, "fill": "naive"})
        for r in added
    ]


def _with_costs(retrieval: Retrieval, earlier: Retrieval) -> Retrieval:
    return replace(
        retrieval,
        usage=retrieval.usage + earlier.usage,
        llm_calls=retrieval.llm_calls + earlier.llm_calls,
        cost_usd=retrieval.cost_usd + earlier.cost_usd,
    )
