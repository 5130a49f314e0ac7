"""What every framework adapter (LangChain, LlamaIndex) shares, with no framework imported here.

An adapter binds a `QueryEngine`, a strategy, ``k`` and strategy parameters (`EngineBinding`); each
call becomes one `QueryRequest` with ``retrieve_only`` on the engine's one query path (same checks,
risk and metadata filters, expansion and ``top_k`` cap as the CLI and HTTP), and each context one
`FlatContext`: id, text and the metadata both adapters give (score, citation source, chunk and
document ids, strategy, ``expanded``, kind, risk and the strategy's own details). The adapter only
wraps a `FlatContext` into its framework's type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphunified_query.engine.request import QueryRequest
from graphunified_query.strategies.results import RetrievalResult

if TYPE_CHECKING:
    from graphunified_query.engine.query_engine import QueryEngine, QueryResponse


@dataclass(frozen=True)
class FlatContext:
    id: str | None  # the chunk id; None for a context no chunk backs (a community report, a summary)
    text: str
    score: float
    metadata: dict[str, Any]


@dataclass(frozen=True)
class EngineBinding:
    """An engine, the strategy it is asked for (None: settings query.default_strategy), ``k`` (None:
    settings query.top_k) and parameters (strategy parameters and context options) for every call."""

    engine: QueryEngine
    strategy: str | None = None
    k: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, target: Any, adapter: str, *, strategy: str | None, k: int | None, params: Mapping[str, Any]
    ) -> EngineBinding:
        """``target`` is a `QueryEngine`, or a retriever built in Python (e.g. a `HybridCombiner`), which
        is then served through an engine over its own context, under its own name."""
        from graphunified_query.engine.query_engine import QueryEngine

        if isinstance(target, QueryEngine):
            return cls(target, strategy, k, dict(params))
        if not callable(getattr(target, "retrieve", None)):
            raise TypeError(f"{adapter} takes a QueryEngine or a Retriever, not {type(target).__name__}")
        return cls(QueryEngine.serving(target), target.name, k, dict(params))

    def request(self, question: str, overrides: Mapping[str, Any] | None = None) -> QueryRequest:
        """One call's request: ``k`` (or ``top_k``) and parameters in ``overrides`` win for this call."""
        extra = dict(overrides or {})
        k, top_k = extra.pop("k", None), extra.pop("top_k", None)
        return QueryRequest(
            question=question,
            strategy=self.strategy,
            top_k=k if k is not None else top_k if top_k is not None else self.k,
            params={**self.params, **extra},
            retrieve_only=True,
        )

    def retrieve(self, question: str, overrides: Mapping[str, Any] | None = None) -> list[FlatContext]:
        return flat_contexts(self.engine.query(self.request(question, overrides)))


def flat_contexts(response: QueryResponse) -> list[FlatContext]:
    """The strategy's contexts (``expanded: False``), then their link neighbours (``expanded: True``)."""
    own = [_flat(c, response.strategy, expanded=False) for c in response.contexts]
    return own + [_flat(c, response.strategy, expanded=True) for c in response.expanded_contexts]


def _flat(result: RetrievalResult, strategy: str, *, expanded: bool) -> FlatContext:
    flat = result.as_dict()
    metadata = {
        "score": flat["score"],
        "source": flat["source"],
        "chunk_id": flat["chunk_id"],
        "document_id": flat["document_id"],
        "strategy": strategy,
        "expanded": expanded,
        **flat["metadata"],
    }
    return FlatContext(result.chunk_id, result.text, result.score, metadata)
