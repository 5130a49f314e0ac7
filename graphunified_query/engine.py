"""The query engine: one loaded index, every strategy, the router and the answer generator.

`QueryEngine.open(home)` loads the snapshot once; `ask` routes (unless a strategy is given),
retrieves, passes the hits through the context pipeline (risk and metadata filters, link
expansion, the token budget), generates and reports what the query cost and how long each part took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from graphunified_query.aliases import read_aliases, with_aliases
from graphunified_query.compose.factory import BUILDERS, build
from graphunified_query.context.options import split_params, with_overrides
from graphunified_query.context.pipeline import ContextPipeline
from graphunified_query.generation import Generator, generator_for
from graphunified_query.layout import HomeLayout
from graphunified_query.object_store import is_object_store_uri
from graphunified_query.providers.cost import Usage
from graphunified_query.providers.embedding import Embedder, check_same_model, make_embedder
from graphunified_query.providers.registry import resolve_llm
from graphunified_query.query_input import check_question, check_top_k
from graphunified_query.remote_generation import cache_root
from graphunified_query.results import GeneratedAnswer, Retrieval, RetrievalResult
from graphunified_query.retrieval import REGISTRY, Retriever, RetrieverContext
from graphunified_query.router import Router
from graphunified_query.settings import Settings, load_settings
from graphunified_query.snapshot import Snapshot
from graphunified_query.snapshot_loader import load_snapshot

if TYPE_CHECKING:
    from graphunified_query.providers.llm import LLM

# Importing the modules registers their strategies.
from graphunified_query.retrieval import (  # noqa: F401  isort: skip
    expanded,
    graphrag_global,
    graphrag_local,
    hipporag,
    hybrid,
    lightrag,
    naive,
)

AUTO = "auto"
STRATEGIES = ("naive", "hybrid", "graphrag_local", "graphrag_global", "lightrag", "hipporag")
# Registered beyond the six: chosen by name (`ask --strategy`, eval lists), not in `all` or `compare`.
EXTRA_STRATEGIES = ("expanded",)
# The composable building blocks (vector with MMR, BFS/DFS graph walks) by name, beside the six.
COMPOSABLE = tuple(BUILDERS)
for _name in COMPOSABLE:
    REGISTRY.setdefault(_name, partial(build, _name))


class UnknownStrategy(ValueError):
    pass


@dataclass(frozen=True)
class QueryResponse:
    question: str
    strategy: str
    answer: str | None  # None with retrieve_only
    contexts: tuple[RetrievalResult, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "strategy": self.strategy,
            "contexts": [c.as_dict() for c in self.contexts],
            "metadata": dict(self.metadata),
        }


class QueryEngine:
    def __init__(
        self,
        snapshot: Snapshot,
        settings: Settings,
        embedder: Embedder,
        *,
        generator: Generator | None = None,
        llm: LLM | None = None,
        router: Router | None = None,
    ) -> None:
        check_same_model(snapshot.model, embedder.model_name)
        self.snapshot = snapshot
        self.settings = settings
        self.embedder = embedder
        self.llm = llm
        # One decision for the whole query path: with an LLM, the LLM maps and answers.
        self.generator = generator or generator_for(llm, settings, embedder)
        self.router = router or Router()
        self._context = RetrieverContext(snapshot, embedder, settings, llm)
        self.context_pipeline = ContextPipeline(snapshot)
        self._retrievers: dict[str, Retriever] = {}
        # Other names of indexed files (identical copies), added to citations; {} for a bare snapshot.
        self.aliases = read_aliases(HomeLayout(snapshot.home), set(snapshot.chunks.document_ids))

    @classmethod
    def open(
        cls, home: str | os.PathLike[str] = "data", *, environ: Mapping[str, str] = os.environ
    ) -> QueryEngine:
        """Load a home folder, or a generation published to object storage (``s3://bucket/prefix``),
        whose settings are the writer's and whose LLM cache is this machine's cache folder."""
        if is_object_store_uri(home):
            snapshot = load_snapshot(str(home), environ=environ)
            settings = load_settings(snapshot.home, environ=environ)
            layout = HomeLayout(cache_root(str(home), environ))
        else:
            layout = HomeLayout.at(home)
            settings = load_settings(layout.home, environ=environ)
            snapshot = load_snapshot(layout.home)
        embedder = make_embedder(settings.embedding, environ)
        llm = resolve_llm(settings, cache=layout.llm_cache, environ=environ)
        return cls(snapshot, settings, embedder, llm=llm)

    @property
    def strategies(self) -> tuple[str, ...]:
        return tuple(name for name in STRATEGIES if name in REGISTRY) + tuple(
            sorted(set(REGISTRY) - set(STRATEGIES))
        )

    def retriever(self, name: str) -> Retriever:
        if name not in REGISTRY:
            raise UnknownStrategy(
                f"Unknown strategy {name!r}; choose one of: {', '.join(self.strategies)}, auto."
            )
        if name not in self._retrievers:
            self._retrievers[name] = REGISTRY[name](self._context)
        return self._retrievers[name]

    def retrieve(
        self, question: str, strategy: str = AUTO, top_k: int | None = None, **params: Any
    ) -> tuple[Retrieval, dict[str, Any]]:
        """The retrieval and the routing metadata (strategy, reason) that produced it."""
        check_question(question)
        top_k = check_top_k(top_k)
        if strategy != AUTO:
            self.retriever(strategy)  # an unknown name fails before the router or any model runs
        routing: dict[str, Any] = {}
        if strategy == AUTO:
            decision = self.router.route(question, self.strategies)
            strategy = decision.strategy
            routing = {"router_reason": decision.reason, "router_features": decision.features}
        retrieval = self.retriever(strategy).retrieve(question, top_k or self.settings.query.top_k, **params)
        return retrieval, {"strategy": strategy, **routing}

    def ask(
        self,
        question: str,
        strategy: str = AUTO,
        top_k: int | None = None,
        *,
        retrieve_only: bool = False,
        **params: Any,
    ) -> QueryResponse:
        """Answer ``question``. ``params`` go to the strategy, except the context pipeline's
        options (``max_risk_level``, ``show_risky``, the metadata filters, ``link_expansion``, …;
        see `context.options`), which override ``settings.query`` for this call only."""
        started = time.perf_counter()
        check_question(question)
        top_k = check_top_k(top_k)
        overrides, strategy_params = split_params(params)
        query_settings = with_overrides(self.settings.query, overrides)  # fail before retrieving
        retrieval, routing = self.retrieve(question, strategy, top_k, **strategy_params)
        # Every strategy's hits, filtered, expanded and budgeted, even when nothing is generated.
        prepared = self.context_pipeline.run(retrieval.results, query_settings)
        retrieved = time.perf_counter()  # retrieval latency includes the (millisecond) context pipeline
        answer: GeneratedAnswer | None = None
        if not retrieve_only:
            answer = self.generator.generate(question, prepared.results)
        finished = time.perf_counter()
        usage = retrieval.usage + (answer.usage if answer else Usage())
        metadata = {
            **routing,
            "requested_strategy": strategy,
            "latency_ms": round((finished - started) * 1000, 2),
            "retrieval_latency_ms": round((retrieved - started) * 1000, 2),
            "generation_latency_ms": round((finished - retrieved) * 1000, 2),
            "tokens_used": usage.input_tokens
            + usage.output_tokens
            + usage.cache_read_tokens
            + usage.cache_write_tokens,
            "cost_usd": round(retrieval.cost_usd + (answer.cost_usd if answer else 0.0), 6),
            "llm_calls": retrieval.llm_calls + (answer.llm_calls if answer else 0),
            # An answer from the LLM cache costs nothing now; what it cost when first asked:
            "cached": bool(answer and answer.cached),
            "cached_tokens": _total_tokens(answer.cached_usage) if answer else 0,
            "context_count": len(retrieval.results),
            "supported": answer.supported if answer else None,
            "context_pipeline": prepared.metadata(),
            **{f"retrieval_{k}": v for k, v in retrieval.metadata.items()},
        }
        return QueryResponse(
            question=question,
            strategy=routing["strategy"],
            answer=answer.text if answer else None,
            contexts=with_aliases(answer.contexts if answer else prepared.results, self.aliases),
            metadata=metadata,
        )


def _total_tokens(usage: Usage) -> int:
    return usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
