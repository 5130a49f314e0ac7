"""Values of a strategy parameter other than its default, read from its declaration (the pydantic
field: type, bounds, choices), so tests generated from the registries cover a new parameter
without anyone writing its values down."""

from __future__ import annotations

import typing
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic.fields import FieldInfo

from graphunified_query.strategies.params import StrategyParams


def boundaries(model: type[StrategyParams], name: str) -> list[Any]:
    """Valid values of ``model.name`` other than its default: every other choice of a Literal, the
    other bool, a number's bounds (or a step from its default where it has none), and for an
    optional field a value of its type. Each is accepted by the model."""
    field = model.model_fields[name]
    default = field.default
    values = [v for v in _candidates(field) if v != default or type(v) is not type(default)]
    accepted = []
    for value in values:
        try:
            model.model_validate({name: value})
        except ValueError:
            continue  # e.g. a model rule tying two fields (similarity_score_threshold needs a threshold)
        if value not in accepted:
            accepted.append(value)
    return accepted


def _candidates(field: FieldInfo) -> list[Any]:
    annotation = field.annotation
    args = typing.get_args(annotation)
    optional = type(None) in args
    inner = [a for a in args if a is not type(None)] if optional else [annotation]
    base = inner[0] if len(inner) == 1 else annotation
    metadata = list(field.metadata)
    if typing.get_origin(base) is typing.Annotated:  # Cosine | None: the bounds are inside
        base, *extra = typing.get_args(base)
        metadata += [m for e in extra for m in getattr(e, "metadata", [e])]
    found: list[Any] = []
    if typing.get_origin(base) is Literal:
        found += list(typing.get_args(base))
    elif base is bool:
        found += [not field.default]
    elif base in (int, float):
        low, high = _bounds(metadata)
        if low is not None:
            found.append(base(low))
        if high is not None:
            found.append(base(high))
        if high is None:  # unbounded above: a step well past the default
            found.append(base((field.default or 1) * 2))
    if optional and field.default is not None:
        found.append(None)
    return found


def _bounds(metadata: list[Any]) -> tuple[float | None, float | None]:
    low: float | None = None
    high: float | None = None
    for meta in metadata:
        if isinstance(meta, Ge):
            low = float(meta.ge)  # type: ignore[arg-type]
        elif isinstance(meta, Gt):
            low = float(meta.gt) + 0.05  # type: ignore[operator]
        elif isinstance(meta, Le):
            high = float(meta.le)  # type: ignore[arg-type]
        elif isinstance(meta, Lt):
            high = float(meta.lt) - 0.05  # type: ignore[operator]
    return low, high
