"""Typed strategy parameters: every strategy declares its knobs once, as one pydantic model.

The model is the single source of a parameter's name, type, default, bounds and one-line
description. The request check (`graphunified_query.engine.request`), ``settings.yaml``'s
``strategies.<name>.<param>`` defaults, ``GET /strategies``, the OpenAPI schema and the generated
``docs/settings.md`` all read it, so an unknown name or an out-of-range value is refused the same
way everywhere. A retriever receives its model whole (``retrieve(query, top_k, params)``) and
reads its fields; there is no ``**params`` signature to accept a name and ignore it
(``tests/query/test_params_read.py`` fails for a declared field no retriever call reads).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

# NaN and infinity pass every ``ge``/``le`` check unnoticed; a weight or a damping factor must be a number.
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Cosine = Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)]


def neighbours_per_hop_field(default: int, bound: str) -> Any:
    """The per-hop cap on a walk's fan-out, declared once for every strategy that walks relationships
    from an entity: a hub's walk costs ``default`` steps instead of its whole neighbourhood.
    ``bound`` says, for that strategy, when the cap leaves the unbounded walk's result unchanged."""
    return Field(
        default,
        ge=1,
        le=100_000,
        description="Neighbours followed from each entity per hop, heaviest relationships first "
        f"(bounds a hub's walk; {bound}).",
    )


class StrategyParams(BaseModel):
    """Base of every strategy's parameters: frozen, and a name the model does not declare is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def updated(self: P, **changes: Any) -> P:
        """A copy with ``changes`` applied and checked (``model_copy`` would not validate them)."""
        return type(self).model_validate({**self.model_dump(), **changes})


P = TypeVar("P", bound=StrategyParams)


class NoParams(StrategyParams):
    """A strategy without parameters of its own (``top_k`` and the context options still apply)."""
