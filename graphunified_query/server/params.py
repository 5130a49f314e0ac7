"""Which per-call ``params`` each strategy takes, and of which type, so the service can refuse the rest.

The retrievers take ``**params`` and ignore names they do not know (a combiner forwards one set to
both of its sides). Over HTTP a misspelt name should be an error instead of a silent default, so the
accepted names and types are read from the code itself, never listed by hand: the keyword-only
parameters of ``retrieve`` (and of ``_retrieve`` where ``retrieve`` forwards to it through a cache),
or the fields of a composable retriever's config dataclass.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError

from graphunified_query.retrieval import Retriever

# Popped by a retriever before its keyword parameters are seen, so introspection cannot find it.
POPPED: Mapping[str, Mapping[str, Any]] = {"expanded": {"use_cache": bool}}


class ParamError(ValueError):
    """A param the strategy does not take, or a value of the wrong type; ``name`` is the param."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class Param:
    name: str
    adapter: TypeAdapter[Any] | None  # None: a Python object (e.g. a reranker), not expressible in JSON

    def json_schema(self) -> dict[str, Any]:
        if self.adapter is None:
            return {"description": "Python object: not accepted over HTTP"}
        try:
            return self.adapter.json_schema()
        except PydanticSchemaGenerationError:  # a type pydantic validates but cannot describe
            return {}


class StrategyParams:
    """The params table of one engine's strategies, built once at start-up."""

    def __init__(self, table: Mapping[str, Mapping[str, Param]]) -> None:
        self._table = {name: dict(params) for name, params in table.items()}

    @classmethod
    def of(cls, strategies: Iterable[str], retriever: Callable[[str], Retriever]) -> StrategyParams:
        return cls({name: accepted(name, retriever(name)) for name in strategies})

    def schemas(self, strategy: str) -> dict[str, dict[str, Any]]:
        return {name: param.json_schema() for name, param in sorted(self._table[strategy].items())}

    def validate(self, strategy: str, params: Mapping[str, Any], auto: str = "auto") -> dict[str, Any]:
        """``params`` checked and coerced for ``strategy``; with ``auto``, for any strategy taking them
        (the router picks after this check, and the strategy it picks ignores params it does not take).
        """
        candidates = list(self._table) if strategy == auto else [strategy]
        checked: dict[str, Any] = {}
        for name, value in params.items():
            declared = [self._table[s][name] for s in candidates if name in self._table[s]]
            if not declared:
                known = sorted({n for s in candidates for n in self._table[s] if self._table[s][n].adapter})
                raise ParamError(
                    name,
                    f"{strategy} takes no param {name!r}; it takes: {', '.join(known) or 'none'}"
                    + (" (top_k is a top-level field)" if name == "top_k" else ""),
                )
            checked[name] = _coerce(name, value, declared)
        return checked


def accepted(strategy: str, retriever: Retriever) -> dict[str, Param]:
    config = getattr(retriever, "config", None)
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        hints = _hints(type(config))
        found = {f.name: hints.get(f.name, Any) for f in dataclasses.fields(config)}
    else:
        found = {}
        for method in (getattr(retriever, "retrieve", None), getattr(retriever, "_retrieve", None)):
            if method is not None:
                found |= _keyword_only(method)
    found |= POPPED.get(strategy, {})
    return {name: Param(name, _adapter(hint)) for name, hint in found.items()}


def _keyword_only(method: Callable[..., Any]) -> dict[str, Any]:
    hints = _hints(method)
    return {
        name: hints.get(name, Any)
        for name, parameter in inspect.signature(method).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }


def _hints(owner: Any) -> dict[str, Any]:
    """Resolved annotations; one that cannot be resolved (a TYPE_CHECKING import) is left as Any."""
    try:
        return typing.get_type_hints(owner)
    except (NameError, TypeError):
        namespace = vars(sys.modules[owner.__module__])
        resolved: dict[str, Any] = {}
        for name, annotation in inspect.get_annotations(owner).items():
            try:
                resolved[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation
            except Exception:  # any failure only loses the type check, never the param
                resolved[name] = Any
        return resolved


def _adapter(hint: Any) -> TypeAdapter[Any] | None:
    try:
        return TypeAdapter(hint)
    except PydanticSchemaGenerationError:
        return None


def _coerce(name: str, value: Any, declared: list[Param]) -> Any:
    errors: list[str] = []
    for param in declared:
        if param.adapter is None:
            errors.append("takes a Python object, which cannot be given over HTTP")
            continue
        try:
            return param.adapter.validate_python(value)
        except ValidationError as error:
            errors.append("; ".join(e["msg"] for e in error.errors()))
    raise ParamError(name, f"param {name!r}: {errors[0]}")
