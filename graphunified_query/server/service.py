"""The loaded engine behind the HTTP endpoints: one engine call at a time, the CLI's JSON.

Requests are checked by the engine itself (`request.resolve`), so a refusal over HTTP carries the
same text the CLI prints; `InvalidRequest` carries it to the 422 handler with the field's path.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from graphunified_query.engine import QueryEngine
from graphunified_query.request import QueryRequest, RequestError
from graphunified_query.server.models import AUTO, Health, Strategies, StrategyInfo


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
        for name in self.strategies:
            engine.retriever(name)
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
            default=self.engine.settings.query.default_strategy,
            strategies=[self._info(name) for name in self.strategies],
            router=self.engine.router.describe(),
        )

    def _info(self, name: str) -> StrategyInfo:
        strategy = self.engine.registry[name]
        schema = strategy.params.model_json_schema()
        defaults = self.engine.settings.strategies.get(name, {})
        params = {
            param: {**prop, **({"default": defaults[param]} if param in defaults else {})}
            for param, prop in schema.get("properties", {}).items()
        }
        return StrategyInfo(name=name, tier=strategy.tier, summary=strategy.summary, params=params)

    def ask(self, request: QueryRequest, *, retrieve_only: bool) -> dict[str, Any]:
        """The object `ask --json` prints for the same request."""
        if retrieve_only:
            request = request.model_copy(update={"retrieve_only": True})
        try:
            self.engine.resolve(request)  # refused before waiting for the lock
            with self._lock:
                response = self.engine.query(request)
        except RequestError as error:
            value = _value_at(request.model_dump(), error.field)
            raise InvalidRequest(error.field, str(error), value) from None
        except ValueError as error:
            if not request.params:  # not the caller's doing: a server error, reported as one
                raise
            # A valid value the index cannot serve (e.g. reranker 'llm' without an LLM configured).
            raise InvalidRequest(
                ("params",), str(error), _value_at(request.model_dump(), ("params",))
            ) from None
        return response.as_dict()


def _value_at(body: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    # NaN and infinity are not JSON: the 422 echoes them as text rather than failing to encode.
    return repr(value) if isinstance(value, float) and not math.isfinite(value) else value
