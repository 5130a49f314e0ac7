"""One query request, validated in one place for the CLI, HTTP, Python, LangChain and eval.

`QueryRequest` is what every entry point builds (the HTTP body is this model). `resolve` checks it
against the strategy registry and the settings and returns a `ResolvedRequest`: the strategy, the
effective ``top_k``, the context options (as `QuerySettings`) and, per strategy, its typed
parameters with where each value came from (``call`` > ``settings`` > ``default``). Every refusal is
a `RequestError` whose text names the parameter, the strategy and what is allowed, with the closest
valid name for a misspelling; the CLI prints it and exits 2, HTTP answers 422 with the same text.

``params`` may mix strategy parameters and context options (``max_risk_level``, ``source_type``,
…), as ``--param`` does; a context option given in ``params`` is moved to ``context``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphunified_query.context.options import PIPELINE_KEYS
from graphunified_query.core.settings.model import QuerySettings, Settings
from graphunified_query.engine.query_input import InvalidQuery, check_question, check_top_k
from graphunified_query.engine.switches import SWITCHES
from graphunified_query.strategies.params import StrategyParams
from graphunified_query.strategies.registry import AUTO, Strategy

Source = Literal["call", "settings", "default"]


class RequestError(ValueError):
    """A request the engine refuses; ``field`` is the path of the offending input (JSON body order)."""

    def __init__(self, field: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.field = field


class QueryRequest(BaseModel):
    # A misspelt field ("topk") would otherwise be dropped and its default used without a word.
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="the question")
    strategy: str | None = Field(
        None, description="a name from GET /strategies, or auto; default: settings query.default_strategy"
    )
    top_k: int | None = Field(
        None, strict=True, description="most contexts returned (a hard cap); default: settings query.top_k"
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="the strategy's parameters (GET /strategies lists them); context options allowed too",
    )
    context: dict[str, Any] = Field(
        default_factory=dict,
        description=f"per-call context options: {', '.join(sorted(PIPELINE_KEYS))}",
    )
    # The switches (engine/switches.py): the CLI's flags are declared from the same names.
    retrieve_only: bool = Field(False, description=SWITCHES["retrieve_only"])
    evidence: bool = Field(False, description=SWITCHES["evidence"])


@dataclass(frozen=True)
class ResolvedParams:
    values: StrategyParams
    sources: Mapping[str, Source]


@dataclass(frozen=True)
class ResolvedRequest:
    question: str
    strategy: str  # a registered name or auto
    top_k: int
    top_k_source: Source
    query: QuerySettings  # settings.query with the call's context options
    call_params: Mapping[str, Any]  # the strategy parameters as given (for auto: checked per strategy)
    retrieve_only: bool
    evidence: bool


def resolve(request: QueryRequest, strategies: Mapping[str, Strategy], settings: Settings) -> ResolvedRequest:
    try:
        question = check_question(request.question)
        top_k = check_top_k(request.top_k)
    except InvalidQuery as error:
        raise RequestError((error.field,), str(error)) from None
    strategy = request.strategy or settings.query.default_strategy
    if strategy != AUTO and strategy not in strategies:
        raise RequestError(
            ("strategy",),
            f"unknown strategy {strategy!r}{_hint(strategy, [*strategies, AUTO])}; "
            f"choose one of: {', '.join([*strategies, AUTO])}",
        )
    context = dict(request.context)
    unknown_context = [k for k in context if k not in PIPELINE_KEYS]
    if unknown_context:
        name = unknown_context[0]
        raise RequestError(
            ("context", name),
            f"unknown context option {name!r}{_hint(name, PIPELINE_KEYS)}; "
            f"context options: {', '.join(sorted(PIPELINE_KEYS))}",
        )
    call_params: dict[str, Any] = {}
    for name, value in request.params.items():
        if name in PIPELINE_KEYS:
            context[name] = value
        elif name == "top_k":
            raise RequestError(
                ("params", "top_k"),
                'top_k is not a strategy parameter: give it on its own (--top-k 3, "top_k": 3)',
            )
        else:
            call_params[name] = value
    resolved = ResolvedRequest(
        question=question,
        strategy=strategy,
        top_k=top_k or settings.query.top_k,
        top_k_source="call"
        if top_k
        else ("settings" if "top_k" in settings.query.model_fields_set else "default"),
        query=_context(settings.query, context),
        call_params=call_params,
        retrieve_only=request.retrieve_only,
        evidence=request.evidence,
    )
    candidates = (
        [strategies[strategy]] if strategy != AUTO else [s for s in strategies.values() if s.tier == "core"]
    )
    for name in call_params:  # a name no candidate takes is a typo, whichever strategy the router picks
        if not any(name in s.params.model_fields for s in candidates):
            raise unknown_param(name, strategy, candidates)
    for candidate in candidates:
        params_for(call_params, candidate, settings)  # values out of range fail before anything runs
    return resolved


def params_for(call: Mapping[str, Any], strategy: Strategy, settings: Settings) -> ResolvedParams:
    """The strategy's typed parameters for this request: call > settings > default."""
    model = strategy.params
    entry = settings.strategy_entries.get(strategy.name, {})
    from_settings = {k: v for k, v in entry.items() if k not in strategy.structure}
    from_call = {k: v for k, v in call.items() if k in model.model_fields}
    try:
        values = model.model_validate({**from_settings, **from_call})
    except ValidationError as error:
        raise _invalid(error, strategy.name, from_call) from None
    sources: dict[str, Source] = {
        name: "call" if name in from_call else "settings" if name in from_settings else "default"
        for name in model.model_fields
    }
    return ResolvedParams(values, sources)


def _context(query: QuerySettings, options: Mapping[str, Any]) -> QuerySettings:
    if not options:
        return query
    try:
        return QuerySettings.model_validate({**query.model_dump(), **options})
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        name = ".".join(str(p) for p in problem["loc"]) or next(iter(options))
        raise RequestError(
            ("context", name), f"context option {name!r}: {problem['msg']} (got {options.get(name)!r})"
        ) from None


def unknown_param(name: str, strategy: str, candidates: list[Strategy]) -> RequestError:
    taken = sorted({p for s in candidates for p in s.params.model_fields})
    # "k" is what LangChain and many tools call the number of results, which is top_k here.
    hint = (
        " (the number of contexts is top_k, a field of its own)"
        if name == "k"
        else _hint(name, [*taken, *PIPELINE_KEYS])
    )
    return RequestError(
        ("params", name),
        f"{strategy} takes no parameter {name!r}{hint}; it takes: {', '.join(taken) or 'none'}"
        f" (context options: {', '.join(sorted(PIPELINE_KEYS))})",
    )


def _invalid(error: ValidationError, strategy: str, given: Mapping[str, Any]) -> RequestError:
    problem = error.errors(include_url=False)[0]
    name = ".".join(str(p) for p in problem["loc"])
    source = "" if name in given else " (from settings.yaml strategies section)"
    return RequestError(
        ("params", name),
        f"{strategy} parameter {name!r}: {problem['msg']} (got {problem.get('input')!r}){source}",
    )


def _hint(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def per_strategy(
    registry: Mapping[str, Strategy],
    question: str,
    top_k: int | None,
    params: Mapping[str, Any],
    names: list[str],
) -> list[QueryRequest]:
    """``compare``/eval: one request per strategy, with the params each takes. A name no strategy
    takes is refused first, with the same message as for one strategy."""
    for name in names:
        if name != AUTO and name not in registry:
            raise RequestError(
                ("strategy",),
                f"unknown strategy {name!r}{_hint(name, registry)}; choose one of: "
                f"{', '.join([*registry, AUTO])}",
            )
    chosen = [registry[n] for n in names if n != AUTO]
    shared = {k: v for k, v in params.items() if k in PIPELINE_KEYS}
    for name in params:
        if name not in shared and not any(name in s.params.model_fields for s in chosen):
            raise unknown_param(name, ", ".join(names), chosen)
    return [
        QueryRequest(
            question=question,
            strategy=name,
            top_k=top_k,
            params={
                **shared,
                **{
                    k: v for k, v in params.items() if name == AUTO or k in registry[name].params.model_fields
                },
            },
        )
        for name in names
    ]


def _takes(registry: Mapping[str, Strategy], name: str, param: str) -> bool:
    return name == AUTO or param in registry[name].params.model_fields
