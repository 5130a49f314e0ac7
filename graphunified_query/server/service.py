"""The loaded engine behind the HTTP endpoints: one engine call at a time, the CLI's JSON.

Requests are checked by the engine itself (`request.resolve`), so a refusal over HTTP carries the
same text the CLI prints; `InvalidRequest` carries it to the 422 handler with the field's path.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from graphunified_query.core.risk import rank
from graphunified_query.core.settings.server import ServerSettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.engine.request import QueryRequest, RequestError, ResolvedRequest
from graphunified_query.server.models import AUTO, Health, Strategies, StrategyInfo

log = logging.getLogger(__name__)


class InvalidRequest(ValueError):
    """A request field the engine cannot serve; ``field`` is its path in the JSON body."""

    def __init__(self, field: tuple[str, ...], message: str, value: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class QueryService:
    """Serves one engine at a time; a newly published generation replaces it between requests."""

    def __init__(self, engine: QueryEngine, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.strategies = engine.strategies
        _build_retrievers(engine)
        # The retrievers memoise lazily (cached properties, caches, the router's name index) without locks,
        # and the work is CPU-bound, so engine calls run one at a time; health and the schema do not wait.
        self._lock = threading.Lock()
        self._reloading = threading.Lock()
        self._clock = clock
        self._checked = clock()
        self._check_every = engine.settings.server.reload_check_seconds
        self._failed: frozenset[int] = frozenset()  # generations that did not load: not retried

    def warm_router(self) -> threading.Thread:
        """Build the router's entity name index in the background (shared with hipporag's entity
        linking): only ``auto`` needs it, and a request routed before it is built waits for it."""

        def warm() -> None:
            try:
                self.engine.router.warm()
            except Exception as error:  # a routed request reports it; the server keeps serving
                log.warning("the router's entity name index was not built: %s", error)

        thread = threading.Thread(target=warm, name="warm-router", daemon=True)
        thread.start()
        return thread

    def current(self) -> QueryEngine:
        """The engine of the newest published generation. A request takes it once and keeps it, so
        one in flight finishes on the generation it started on; the one that notices a new
        generation loads it while others go on with the old (a failed load keeps the old)."""
        engine = self.engine
        if self._clock() - self._checked < self._check_every or not self._reloading.acquire(blocking=False):
            return engine
        try:
            self._checked = self._clock()
            newer = engine.reloaded(skip=self._failed)
            if newer is not None:
                _build_retrievers(newer)
                self.engine = newer
                log.info(
                    "serving generation %s (was %s)", newer.snapshot.generation, engine.snapshot.generation
                )
        except Exception as error:  # a half-published or damaged generation: keep serving the old one
            failed = _quietly(engine.published_generation)
            self._failed |= {failed} if failed is not None else set()
            log.warning(
                "kept generation %s: the new one did not load (%s)", engine.snapshot.generation, error
            )
        finally:
            self._reloading.release()
        return self.engine

    def health(self) -> Health:
        snapshot = self.current().snapshot
        return Health(
            home=str(snapshot.home),
            chunks=len(snapshot.chunks.ids),
            generation=snapshot.generation,
            strategies=self.names(),
        )

    def names(self) -> list[str]:
        return [*self.strategies, AUTO]

    def describe(self) -> Strategies:
        return Strategies(
            default=self.engine.settings.query.default_strategy,
            strategies=[self._info(name) for name in self.strategies],
            router=self.engine.router.describe(),
        )

    def _info(self, name: str) -> StrategyInfo:
        strategy = self.engine.registry[name]
        schema = strategy.params.model_json_schema()
        defaults = self.engine.settings.strategy_entries.get(name, {})
        params = {
            param: {**prop, **({"default": defaults[param]} if param in defaults else {})}
            for param, prop in schema.get("properties", {}).items()
        }
        return StrategyInfo(name=name, tier=strategy.tier, summary=strategy.summary, params=params)

    def ask(self, request: QueryRequest, *, retrieve_only: bool) -> dict[str, Any]:
        """The object `ask --json` prints for the same request (with its evidence subgraph when asked)."""
        if retrieve_only:
            request = request.model_copy(update={"retrieve_only": True})
        engine = self.current()
        try:
            resolved = engine.resolve(request)  # refused before waiting for the lock
            _check_policy(request, resolved, engine.settings.server)
            with self._lock:
                response = engine.query(request)
        except RequestError as error:
            value = _value_at(request.model_dump(), error.field)
            raise InvalidRequest(error.field, str(error), value) from None
        except InvalidRequest:  # the server's policy: already says which field
            raise
        except ValueError as error:
            if not request.params:  # not the caller's doing: a server error, reported as one
                raise
            # A valid value the index cannot serve (e.g. reranker 'llm' without an LLM configured).
            raise InvalidRequest(
                ("params",), str(error), _value_at(request.model_dump(), ("params",))
            ) from None
        return response.as_dict()


def _check_policy(request: QueryRequest, resolved: ResolvedRequest, server: ServerSettings) -> None:
    """The server's risk policy, which no client raises: ``server.max_risk_level`` and
    ``server.allow_show_risky`` (the home's own query settings are held to it as well)."""
    query = resolved.query
    if query.show_risky and not server.allow_show_risky:
        raise InvalidRequest(
            _option_path(request, "show_risky"),
            "show_risky is not allowed by this server (server.allow_show_risky is false)",
            True,
        )
    if rank(query.max_risk_level) > rank(server.max_risk_level):
        raise InvalidRequest(
            _option_path(request, "max_risk_level"),
            f"max_risk_level {query.max_risk_level!r} is above this server's ceiling "
            f"{server.max_risk_level!r} (server.max_risk_level)",
            query.max_risk_level,
        )


def _option_path(request: QueryRequest, name: str) -> tuple[str, ...]:
    """Where the request set a context option (``context``, or ``params``, reported as the context
    option it is, as `request.resolve` does); else the home's own query settings."""
    if name in request.context or name in request.params:
        return ("context", name)
    return ("settings", "query", name)


def _quietly(read: Callable[[], int | None]) -> int | None:
    try:
        return read()
    except Exception:  # the pointer itself is unreadable: nothing to remember
        return None


def _build_retrievers(engine: QueryEngine) -> None:
    """Every retriever, before the engine serves: no request races to create one, and each
    strategy's per-snapshot caches are warm, so a first query pays what a second one does."""
    for name in engine.strategies:
        engine.retriever(name)
    engine.warm()


def _value_at(body: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    # NaN and infinity are not JSON: the 422 echoes them as text rather than failing to encode.
    return repr(value) if isinstance(value, float) and not math.isfinite(value) else value
