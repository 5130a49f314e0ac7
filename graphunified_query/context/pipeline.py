"""The context pipeline: what every strategy's hits go through before an answer is generated.

1. Filter: a context over ``max_risk_level`` (unless ``show_risky``) or outside the metadata
   filters (``source_type``, ``has_code``, ``document_ids``, ``section_prefix``) is left out.
   Kept contexts carry ``risk_level``/``risk_flags`` in their metadata; the prompt marks risky ones.
2. Order (score, then shallower section, then source diversity), pack into the token budget
   (``context_window`` less the reserved system and query tokens, ``generation.packing``) and keep
   at most ``top_k``: the strategy's own contexts, which nothing displaces.
3. Expand (``link_expansion``): the packed hits pull in linked and adjacent chunks (see
   ``expansion``), which must pass the same filters. They come back *beside* the strategy's
   contexts (``expanded``, at most ``max_total_expanded``), packed after them into what the
   budget has left: the prompt holds the strategy's contexts first, then their neighbours.

`PreparedContext.metadata()` records what happened: raw hits, what each filter removed, how many
chunks expansion added and how many of them fitted, what was packed and the token estimate.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from graphunified_query.context.expansion import expand
from graphunified_query.context.facts import ContextFacts, facts_of
from graphunified_query.context.filters import ContextFilter
from graphunified_query.context.links import link_graph
from graphunified_query.core.providers.tokenizer import count_tokens
from graphunified_query.core.risk import LOW
from graphunified_query.core.settings.model import QuerySettings
from graphunified_query.generation.packing import (
    TokenCounter,
    context_budget,
    framed,
    order_contexts,
    pack_after,
    pack_contexts,
)
from graphunified_query.generation.templates import choose_template
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.results import RetrievalResult


@dataclass(frozen=True)
class PreparedContext:
    """The contexts a generator gets, and the record of how they were chosen."""

    results: tuple[RetrievalResult, ...]  # the strategy's own contexts, at most top_k
    raw_hits: int
    filtered_out: Mapping[str, int]  # reason → contexts left out for it
    applied_filters: Mapping[str, Any]
    expanded: int  # chunks link expansion added (before packing)
    budget_tokens: int
    token_estimate: int  # the packed contexts with their prompt framing
    template: str  # the answer template the contexts call for
    risky: int = 0  # packed contexts above "low", shown with their risk marked
    expanded_results: tuple[RetrievalResult, ...] = ()  # link neighbours that fitted, after `results`

    @property
    def sent(self) -> tuple[RetrievalResult, ...]:
        """What a generator gets: the strategy's contexts, then their link neighbours."""
        return (*self.results, *self.expanded_results)

    def metadata(self) -> dict[str, Any]:
        return {
            "raw_hits": self.raw_hits,
            "filtered_out": dict(self.filtered_out),
            "filters": dict(self.applied_filters),
            "expanded": self.expanded,
            "expanded_packed": len(self.expanded_results),
            "packed": len(self.sent),  # the prompt's contexts: the strategy's, then the expanded
            "risky_packed": self.risky,
            "budget_tokens": self.budget_tokens,
            "token_estimate": self.token_estimate,
            "template": self.template,
        }


class ContextPipeline:
    def __init__(self, snapshot: Snapshot, *, count: TokenCounter = count_tokens) -> None:
        self.snapshot = snapshot
        self.count = count

    def run(
        self, results: Sequence[RetrievalResult], settings: QuerySettings, *, top_k: int | None = None
    ) -> PreparedContext:
        kept, removed = self.filter(results, settings)
        return self.finish(kept, settings, raw_hits=len(results), removed=removed, top_k=top_k)

    def filter(
        self, results: Sequence[RetrievalResult], settings: QuerySettings
    ) -> tuple[list[RetrievalResult], Counter[str]]:
        """The contexts the risk ceiling and metadata filters keep (marked), and why others left."""
        filters = ContextFilter.from_settings(settings)
        removed: Counter[str] = Counter()
        kept: list[RetrievalResult] = []
        for result in results:
            facts = facts_of(self.snapshot, result)
            reason = filters.reason(facts)
            if reason is None:
                kept.append(_marked(result, facts))
            else:
                removed[reason] += 1
        return kept, removed

    def finish(
        self,
        kept: Sequence[RetrievalResult],
        settings: QuerySettings,
        *,
        raw_hits: int,
        removed: Counter[str],
        top_k: int | None = None,
    ) -> PreparedContext:
        """Order the kept hits, pack them into the token budget and keep at most ``top_k``; then
        expand those and pack their neighbours into what is left, beside them."""
        filters = ContextFilter.from_settings(settings)
        budget = context_budget(settings)
        count = _memoized(framed(self.count))  # each text is counted once, however often it is weighed
        packed = pack_contexts(order_contexts(kept), budget, count)
        if top_k is not None:
            packed = packed[:top_k]

        def admit(candidate: RetrievalResult) -> RetrievalResult | None:
            facts = facts_of(self.snapshot, candidate)
            return _marked(candidate, facts) if filters.reason(facts) is None else None

        expanded: tuple[RetrievalResult, ...] = ()
        if settings.link_expansion:
            expanded = expand(
                packed,
                self.snapshot,
                link_graph(self.snapshot),
                admit=admit,
                per_hit=settings.max_expanded_per_hit,
                total=settings.max_total_expanded,
                decay=settings.expansion_decay,
            )
        # Ordered as if after the packed contexts, so source diversity counts the documents they use.
        pulled = {id(r) for r in expanded}
        ranked = [r for r in order_contexts([*packed, *expanded]) if id(r) in pulled]
        beside = pack_after(packed, ranked, budget, count)
        sent = (*packed, *beside)
        return PreparedContext(
            results=packed,
            raw_hits=raw_hits,
            filtered_out=MappingProxyType(dict(removed)),
            applied_filters=MappingProxyType(filters.applied()),
            expanded=len(expanded),
            budget_tokens=budget,
            token_estimate=sum(count(r.text) for r in sent),
            template=choose_template(sent),
            risky=sum(1 for r in sent if r.metadata.get("risk_level", LOW) != LOW),
            expanded_results=beside,
        )


def _memoized(count: TokenCounter) -> TokenCounter:
    counts: dict[str, int] = {}

    def counted(text: str) -> int:
        if text not in counts:
            counts[text] = count(text)
        return counts[text]

    return counted


def _marked(result: RetrievalResult, facts: ContextFacts) -> RetrievalResult:
    """The context with its risk in its metadata, where the prompt and the caller can see it."""
    metadata = {**result.metadata, "risk_level": facts.risk_level, "risk_flags": list(facts.risk_flags)}
    return dataclasses.replace(result, metadata=MappingProxyType(metadata))
