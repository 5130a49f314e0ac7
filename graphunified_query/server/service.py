"""The loaded engine behind the HTTP endpoints: request checks, one engine call at a time, CLI JSON."""

from __future__ import annotations

import threading
from typing import Any

from graphunified_query.engine import QueryEngine
from graphunified_query.query_input import InvalidQuery
from graphunified_query.server.models import AUTO, Health, QueryRequest, Strategies, StrategyInfo
from graphunified_query.server.params import ParamError, StrategyParams


class InvalidRequest(ValueError):
    """A request field the engine cannot serve; ``field`` is its path in the JSON body."""

    def __init__(self, field: tuple[str, ...], message: str, value: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class QueryService:
    def __init__(self, engine: QueryEngine) -> None:
        self.engine = engine
        self.strategies = engine.strategies
        # Builds every retriever now: start-up pays for it, and no request races to create one.
        self.params = StrategyParams.of(self.strategies, engine.retriever)
        # The retrievers memoise lazily (cached properties, caches, the router's spaCy) without locks,
        # and the work is CPU-bound, so engine calls run one at a time; health and the schema do not wait.
        self._lock = threading.Lock()

    def health(self) -> Health:
        snapshot = self.engine.snapshot
        return Health(home=str(snapshot.home), chunks=len(snapshot.chunks.ids), strategies=self.names())

    def names(self) -> list[str]:
        return [*self.strategies, AUTO]

    def describe(self) -> Strategies:
        return Strategies(
            strategies=[StrategyInfo(name=name, params=self.params.schemas(name)) for name in self.strategies]
        )

    def ask(self, request: QueryRequest, *, retrieve_only: bool) -> dict[str, Any]:
        """The object `ask --json` prints for the same question, strategy, top_k and params."""
        if request.strategy not in self.names():
            raise InvalidRequest(
                ("strategy",),
                f"unknown strategy {request.strategy!r}; choose one of: {', '.join(self.names())}",
                request.strategy,
            )
        try:
            params = self.params.validate(request.strategy, request.params, auto=AUTO)
        except ParamError as error:
            raise InvalidRequest(("params", error.name), str(error), request.params.get(error.name)) from None
        try:
            with self._lock:
                response = self.engine.ask(
                    request.question, request.strategy, request.top_k, retrieve_only=retrieve_only, **params
                )
        except InvalidQuery as error:  # the engine's own checks; the model's limits catch these first
            raise InvalidRequest((error.field,), str(error), getattr(request, error.field, None)) from None
        except ValueError as error:
            if not params:  # not the caller's doing: a server error, reported as one
                raise
            # The retrievers check their params' ranges (e.g. lightrag's mode) with ValueError.
            raise InvalidRequest(("params",), str(error), request.params) from None
        return response.as_dict()
