"""The query engine: one loaded index, every strategy, the router and the answer generator.

`QueryEngine.open(home)` loads the snapshot once. `query(QueryRequest)` is the one query path of
every entry point (CLI, HTTP, eval, LangChain, Python): validate the request (`request.resolve`),
route (unless a strategy is given), retrieve through the risk and metadata filters, expand and
pack (`query_path.run_path`), generate, and report what the query cost, how long each part took,
what was returned and sent, and the parameters used with where each came from.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphunified_query.context.aliases import with_aliases
from graphunified_query.context.pipeline import ContextPipeline
from graphunified_query.core.aliases import read_aliases
from graphunified_query.core.layout import HomeLayout, refresh_command
from graphunified_query.core.providers.embedding import Embedder, check_same_model, make_embedder
from graphunified_query.core.providers.registry import resolve_llm
from graphunified_query.core.settings.model import Settings, load_settings
from graphunified_query.core.stores.object_store import is_object_store_uri
from graphunified_query.engine.evidence import Evidence, evidence
from graphunified_query.engine.query_path import PathOutcome, run_path
from graphunified_query.engine.reload import SnapshotSource, reloaded
from graphunified_query.engine.request import (
    QueryRequest,
    RequestError,
    ResolvedParams,
    ResolvedRequest,
    params_for,
    per_strategy,
    resolve,
)
from graphunified_query.engine.result_cache import ResultCache, request_key
from graphunified_query.generation import Generator, generator_for
from graphunified_query.routing.learned import select_router
from graphunified_query.routing.rules import Router
from graphunified_query.snapshot.loader import load_snapshot
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies import Retriever, RetrieverContext
from graphunified_query.strategies.base import WithinDocuments
from graphunified_query.strategies.composable.named import with_compositions
from graphunified_query.strategies.entity_linking import name_index
from graphunified_query.strategies.params import NoParams, StrategyParams
from graphunified_query.strategies.query_vectors import QueryVectors
from graphunified_query.strategies.registry import AUTO, STRATEGIES, Strategy, Tier, names, served
from graphunified_query.strategies.results import GeneratedAnswer, Retrieval, RetrievalResult
from graphunified_query.strategies.settings_check import check_strategy_settings

if TYPE_CHECKING:
    from graphunified_query.core.providers.llm import LLM

__all__ = [
    "AUTO",
    "QueryEngine",
    "QueryRequest",
    "QueryResponse",
    "RequestError",
    "StrategyNotServed",
    "UnknownStrategy",
]


class UnknownStrategy(RequestError):
    pass


class StrategyNotServed(RequestError):
    """A registered strategy that `strategies.enabled` leaves out, or that the index was built without."""


@dataclass(frozen=True)
class QueryResponse:
    question: str
    strategy: str
    answer: str | None  # None with retrieve_only
    contexts: tuple[RetrievalResult, ...]  # the strategy's own, at most top_k
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Link neighbours of those contexts, beside them (never in their places), sent after them.
    expanded_contexts: tuple[RetrievalResult, ...] = ()
    evidence: Evidence | None = None  # only when the request asked for it

    def as_dict(self) -> dict[str, Any]:
        asked = {"evidence": self.evidence.model_dump()} if self.evidence is not None else {}
        return {
            "answer": self.answer,
            "strategy": self.strategy,
            "contexts": [c.as_dict() for c in self.contexts],
            "expanded_contexts": [c.as_dict() for c in self.expanded_contexts],
            "metadata": dict(self.metadata),
            **asked,
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
        query_vectors: QueryVectors | None = None,
    ) -> None:
        check_same_model(snapshot.model, embedder.model_name)
        # The registry's strategies, plus any this engine is given (`add`); settings are checked
        # against them now, so a misspelt strategies.<name>.<param> fails at start-up.
        self.registry: dict[str, Strategy] = with_compositions(
            settings.strategy_entries, STRATEGIES, self.retriever
        )
        check_strategy_settings(settings, self.registry)
        self.snapshot = snapshot
        self.settings = settings
        self.embedder = embedder
        self.llm = llm
        # One decision for the whole query path: with an LLM, the LLM maps and answers.
        self.generator = generator or generator_for(llm, settings, embedder)
        # The learned router when the home holds one for this embedder, the rule router otherwise.
        # Its question entities are read against this snapshot's entity names (built on first use).
        rule = (router or Router()).with_names(lambda: name_index(snapshot))
        self.router = select_router(snapshot.home, settings.query.router, embedder, rule)
        self._context = RetrieverContext(snapshot, embedder, settings, llm, query_vectors or QueryVectors())
        self.context_pipeline = ContextPipeline(snapshot)
        self.result_cache: ResultCache[PathOutcome] = ResultCache.from_settings(settings.query.cache)
        self._retrievers: dict[str, Retriever] = {}
        self._added: set[str] = set()  # retrievers built in Python: bound to this snapshot
        self.source: SnapshotSource | None = None  # where `open` loaded from: a reload reads it again
        # Other names of indexed files (identical copies), added to citations; {} for a bare snapshot.
        self.aliases = read_aliases(HomeLayout(snapshot.home), set(snapshot.chunks.document_ids))

    @classmethod
    def open(
        cls, home: str | os.PathLike[str] = "data", *, environ: Mapping[str, str] = os.environ
    ) -> QueryEngine:
        """Load a home folder, or a generation published to object storage (``s3://bucket/prefix``),
        whose settings are the writer's and whose LLM cache is this machine's cache folder."""
        if is_object_store_uri(home):
            from graphunified_query.core.stores.remote_generation import (
                cache_root,  # lancedb: remote homes only
            )

            snapshot = load_snapshot(str(home), environ=environ)
            settings = load_settings(snapshot.home, environ=environ)
            layout = HomeLayout(cache_root(str(home), environ))
        else:
            layout = HomeLayout.at(home)
            settings = load_settings(layout.home, environ=environ)
            snapshot = load_snapshot(layout.home)
        # Queries embed with the variant the home's vectors were made with (a home built before
        # the default changed answers until its next `index` re-embeds it).
        settings = settings.model_copy(
            update={"embedding": settings.embedding.with_recorded_variants(snapshot.model)}
        )
        embedder = make_embedder(settings.embedding, environ)
        llm = resolve_llm(settings, cache=layout.llm_cache, environ=environ)
        generation = settings.query.generation
        if llm is not None and generation.model and generation.model != settings.llm.model:
            # Answers from another model than the rest (the global map, reranking): its own client,
            # priced as that model.
            answering = settings.model_copy(
                update={"llm": settings.llm.model_copy(update={"model": generation.model})}
            )
            answer_llm = resolve_llm(answering, cache=layout.llm_cache, environ=environ)
            engine = cls(
                snapshot, settings, embedder, llm=llm, generator=generator_for(answer_llm, settings, embedder)
            )
        else:
            engine = cls(snapshot, settings, embedder, llm=llm)
        engine.source = SnapshotSource.at(home, environ)
        return engine

    def published_generation(self) -> int | None:
        """The generation the home publishes now (None: not opened from a home)."""
        return None if self.source is None else self.source.published_generation()

    def reloaded(self, *, skip: frozenset[int] = frozenset()) -> QueryEngine | None:
        """An engine over the generation published since this one was loaded (same settings,
        models and caches), or None when it is still the current one, is in ``skip`` (failed to
        load before) or the engine was not opened from a home. This engine is left as it is:
        requests running on it finish on it (`engine_reload`)."""
        if self._added:  # retrievers built in Python are bound to this snapshot
            return None
        return reloaded(self, skip=skip)

    @classmethod
    def serving(cls, retriever: Retriever) -> QueryEngine:
        """An engine over a Python-built retriever's own context that serves it under its name
        (with the registry parameters of that name, if any), on the one query path."""
        context: RetrieverContext = getattr(retriever, "context")  # noqa: B009  (a RetrieverBase)
        engine = cls(context.snapshot, context.settings, context.embedder, llm=context.llm)
        known = engine.registry.get(retriever.name)
        engine.add(retriever.name, retriever, known.params if known else NoParams)
        return engine

    @property
    def context(self) -> RetrieverContext:
        """What a retriever built outside the registry (a composition in Python) is built with."""
        return self._context

    @property
    def strategies(self) -> tuple[str, ...]:
        return tuple(self.registry)

    def add(
        self,
        name: str,
        retriever: Retriever,
        params: type[StrategyParams] = NoParams,
        tier: Tier = "composable",
    ) -> None:
        """Serve a retriever built in Python (e.g. a `HybridCombiner`) by name on every path."""
        self.registry[name] = Strategy(name, lambda *_: retriever, params, tier, "added in Python")
        self._retrievers[name] = retriever
        self._added.add(name)

    def unavailable(self, name: str) -> str | None:
        """Why strategy ``name`` cannot answer here, saying how to enable it; None when it can."""
        strategy = self.registry.get(name)
        if strategy is None or name in self._added:
            return None
        enabled, built_for = self.settings.enabled_strategies, self.snapshot.built_for
        refresh = f"run `{refresh_command(self.snapshot.home)}` to build what it reads"
        if enabled is not None and name not in enabled:
            parts = self.settings.composition_parts
            then = f" and {refresh}" if not served(strategy, built_for, parts) else ""
            return (
                f"strategy {name!r} is not enabled: strategies.enabled in settings.yaml lists "
                f"{', '.join(enabled)}; add {name} there{then}"
            )
        if not served(strategy, built_for, self.settings.composition_parts):
            return (
                f"strategy {name!r} is enabled, but the published index was built without what it reads "
                f"(strategies.enabled was {', '.join(built_for or ())}); {refresh}"
            )
        return None

    def retriever(self, name: str) -> Retriever:
        if name not in self.registry:
            raise UnknownStrategy(
                ("strategy",), f"unknown strategy {name!r}; choose one of: {', '.join(self.strategies)}, auto"
            )
        if name not in self._retrievers:  # built with its strategies.<name> settings over defaults
            strategy = self.registry[name]
            self._retrievers[name] = strategy.build(
                self._context, params_for({}, strategy, self.settings).values
            )
        return self._retrievers[name]

    def warm(self) -> None:
        """Pay first-use costs now (a server before it answers): the snapshot's row maps, each built
        retriever's per-snapshot caches, the query embedder's model session."""
        self.snapshot.warm()
        for retriever in self._retrievers.values():
            warm = getattr(retriever, "warm", None)
            if callable(warm):
                warm()
        with contextlib.suppress(Exception):  # a provider down reports its own error on a real query
            self.embedder.embed(["warm-up"], kind="query")

    def embed_query(self, question: str) -> None:
        """The question's vector into the shared query-vector cache, untimed: `eval` calls it before
        timing the strategies, so none pays for it by running first."""
        self._context.embed_query(question)

    def resolve(self, request: QueryRequest) -> ResolvedRequest:
        return resolve(request, self.registry, self.settings)

    def ask(
        self,
        question: str,
        strategy: str | None = None,
        top_k: int | None = None,
        *,
        retrieve_only: bool = False,
        **params: Any,
    ) -> QueryResponse:
        """``query`` with the request spelt as arguments; ``params`` mixes the strategy's parameters
        and the context options (``max_risk_level``, ``show_risky``, the metadata filters, …)."""
        request = QueryRequest(
            question=question, strategy=strategy, top_k=top_k, params=params, retrieve_only=retrieve_only
        )
        return self.query(request)

    def retrieve(
        self, question: str, strategy: str | None = None, top_k: int | None = None, **params: Any
    ) -> tuple[Retrieval, dict[str, Any]]:
        """The contexts of ``ask(..., retrieve_only=True)`` as a `Retrieval`, and its metadata."""
        response = self.ask(question, strategy, top_k, retrieve_only=True, **params)
        meta = dict(response.metadata)
        retrieval = Retrieval(
            response.strategy, response.contexts, llm_calls=meta["llm_calls"], cost_usd=meta["cost_usd"]
        )
        return retrieval, meta

    def compare_requests(
        self, question: str, top_k: int | None, params: Mapping[str, Any], names: Sequence[str] | None = None
    ) -> list[QueryRequest]:
        """One request per strategy (default: the core tier's served ones) with the params each takes."""
        chosen = list(
            names or (n for n, s in self.registry.items() if s.tier == "core" and not self.unavailable(n))
        )
        return per_strategy(self.registry, question, top_k, params, chosen)

    def query(self, request: QueryRequest) -> QueryResponse:
        started = time.perf_counter()
        resolved = self.resolve(request)  # every check before the router or any model runs
        routing: dict[str, Any] = {}
        strategy = resolved.strategy
        if strategy == AUTO:  # the router never routes to a strategy not served
            core = tuple(n for n, s in self.registry.items() if s.tier == "core" and not self.unavailable(n))
            if not core:
                raise StrategyNotServed(
                    ("strategy",),
                    "auto routes among the core strategies and strategies.enabled enables none of them; "
                    f"add one of {', '.join(names('core'))} to it, or ask a strategy by name",
                )
            decision = self.router.route(resolved.question, core)
            strategy = decision.strategy
            routing = {"router_reason": decision.reason, "router_features": decision.features}
        elif reason := self.unavailable(strategy):
            raise StrategyNotServed(("strategy",), reason)
        params = params_for(resolved.call_params, self.registry[strategy], self.settings)
        retriever, values = self._call(strategy, params, resolved)
        # The full request on this generation: strategy, question, top_k, params, filters and options.
        key = request_key(
            self.snapshot,
            {
                "strategy": strategy,
                "question": resolved.question,
                "top_k": resolved.top_k,
                "params": values.model_dump(mode="json"),
                "query": resolved.query.model_dump(mode="json"),
            },
        )
        outcome, hit = self.result_cache.get_or_compute(
            key,
            lambda: run_path(
                retriever,
                self.context_pipeline,
                resolved.question,
                resolved.top_k,
                values,
                resolved.query,
                deepens=self.registry[strategy].deepens,
                fill=None if strategy == "naive" else self.retriever("naive"),
            ),
        )
        outcome = outcome.reused() if hit else outcome
        retrieved = time.perf_counter()  # retrieval latency includes the (millisecond) context pipeline
        answer: GeneratedAnswer | None = None
        if not resolved.retrieve_only:
            prepared = outcome.prepared  # packed once, with this call's budget: the generator sends it all
            answer = self.generator.generate(
                resolved.question, prepared.sent, budget_tokens=prepared.budget_tokens
            )
        finished = time.perf_counter()
        contexts = outcome.prepared.results
        metadata = {
            "strategy": strategy,
            "generation": self.snapshot.generation,  # the published index generation that answered
            **routing,
            "requested_strategy": resolved.strategy,
            **outcome.costs(answer),
            # The retrieval served from the result cache (query.cache): it cost nothing now.
            "result_cache": "hit" if hit else ("miss" if self.result_cache.enabled and key else "off"),
            "latency_ms": round((finished - started) * 1000, 2),
            "retrieval_latency_ms": round((retrieved - started) * 1000, 2),
            "generation_latency_ms": round((finished - retrieved) * 1000, 2),
            "context_count": len(contexts),
            "contexts_sent": len(answer.contexts) if answer else 0,
            "params_used": {
                "top_k": {"value": resolved.top_k, "source": resolved.top_k_source},
                **{n: {"value": getattr(values, n), "source": s} for n, s in params.sources.items()},
            },
            "supported": answer.supported if answer else None,
            "context_pipeline": {**outcome.prepared.metadata(), "depth": outcome.depth},
            **{f"retrieval_{k}": v for k, v in outcome.retrieval.metadata.items()},
        }
        expanded = outcome.prepared.expanded_results
        shown = (
            evidence(
                self.snapshot,
                [c.entities for c in (*contexts, *expanded)],  # numbered as the answer's [n]
                max_risk_level=resolved.query.max_risk_level,
                show_risky=resolved.query.show_risky,
            )
            if resolved.evidence
            else None
        )
        return QueryResponse(
            question=resolved.question,
            strategy=strategy,
            answer=answer.text if answer else None,
            contexts=with_aliases(contexts, self.aliases),
            metadata=metadata,
            expanded_contexts=with_aliases(expanded, self.aliases),
            evidence=shown,
        )

    def _call(
        self, strategy: str, params: ResolvedParams, resolved: ResolvedRequest
    ) -> tuple[Retriever, StrategyParams]:
        """The retriever and the parameters it runs with: its own (settings over defaults, or how it
        was built in Python) with the values the call or settings chose."""
        retriever = self.retriever(strategy)
        changed = {name: getattr(params.values, name) for name, s in params.sources.items() if s != "default"}
        own = getattr(retriever, "params", None)
        values = params.values
        if isinstance(own, type(values)):
            values = own.model_copy(update=changed)  # checked already, as params.values
        elif isinstance(own, StrategyParams) and not changed:
            values = own  # added in Python under a name whose model is not its own (NoParams)
        # A strategy that can search inside documents itself is told which (the filter still applies).
        if getattr(retriever, "searches_documents", False) and resolved.query.document_ids:
            retriever = WithinDocuments(retriever, resolved.query.document_ids)
        return retriever, values
