"""The one query path every entry point runs: retrieve → risk and metadata filters → expansion → packing.

(Generation, the last step, is the engine's.) The filters act on the candidate set, not on a cut
list: when they leave fewer than ``top_k`` contexts and the strategy had more to give, the strategy
is asked again for a deeper list (x4 each time, up to every chunk of the index), so ``top_k``
matching contexts come back whenever the index holds them (not for a strategy whose candidates do
not grow with the depth asked, `Strategy.deepens`: graphrag_global would repeat its LLM map).
``top_k`` is then a hard cap on what is returned: link expansion competes for those places by
score instead of adding to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from graphunified_query.context.pipeline import ContextPipeline, PreparedContext
from graphunified_query.providers.cost import Usage
from graphunified_query.results import GeneratedAnswer, Retrieval
from graphunified_query.retrieval.base import Retriever
from graphunified_query.settings import QuerySettings

DEEPEN = 4  # how much deeper each refill asks


@dataclass(frozen=True)
class PathOutcome:
    retrieval: Retrieval  # the deepest list the strategy returned, with the cost of every call summed
    prepared: PreparedContext  # what is returned (at most top_k) and sent to a generator
    depth: int  # the list length last asked of the strategy

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
    params: Mapping[str, Any],
    query: QuerySettings,
    *,
    deepens: bool = True,
) -> PathOutcome:
    limit = max(top_k, len(pipeline.snapshot.chunks.ids)) if deepens else top_k
    depth = top_k
    spent: Retrieval | None = None
    while True:
        retrieval = retriever.retrieve(question, depth, **params)
        spent = retrieval if spent is None else _with_costs(retrieval, spent)
        kept, removed = pipeline.filter(retrieval.results, query)
        exhausted = len(retrieval.results) < depth or depth >= limit
        if len(kept) >= top_k or not removed or exhausted:
            break
        depth = min(depth * DEEPEN, limit)
    prepared = pipeline.finish(
        kept[:top_k], query, raw_hits=len(retrieval.results), removed=removed, top_k=top_k
    )
    return PathOutcome(spent, prepared, depth)


def _with_costs(retrieval: Retrieval, earlier: Retrieval) -> Retrieval:
    return replace(
        retrieval,
        usage=retrieval.usage + earlier.usage,
        llm_calls=retrieval.llm_calls + earlier.llm_calls,
        cost_usd=retrieval.cost_usd + earlier.cost_usd,
    )
