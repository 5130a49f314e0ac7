"""docs/settings.md generated from the settings model, so the reference cannot drift from the code.

`python -m graphunified_assets settings-reference` rewrites the file (`--check` only compares);
a test fails when the committed file differs from what the model generates.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeGuard, Union, get_args, get_origin

import annotated_types as at
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from graphunified_query.core.plugins import secret_variables
from graphunified_query.core.registry import Registry
from graphunified_query.core.settings.model import ENABLED, Settings

REFERENCE_PATH = Path(__file__).resolve().parents[3] / "docs" / "settings.md"
COMMAND = "python -m graphunified_assets settings-reference"
_BOUNDS = ((at.Ge, "ge", "≥"), (at.Gt, "gt", ">"), (at.Le, "le", "≤"), (at.Lt, "lt", "<"))
_LENGTHS = ((at.MinLen, "min_length", "at least {} items"), (at.MaxLen, "max_length", "at most {} items"))


@dataclass(frozen=True)
class SettingDoc:
    name: str  # dotted, e.g. "llm.max_gleanings"; "prices.<model>.input" under a mapping
    type: str
    default: Any
    constraints: str
    description: str


def sections() -> Iterator[tuple[str, type[BaseModel] | None, FieldInfo]]:
    """Each top-level field of `Settings`: name, its section model (None for other fields), field."""
    for name, field in Settings.model_fields.items():
        model = field.annotation if _is_model(field.annotation) else None
        yield name, model, field


def settings_docs() -> list[SettingDoc]:
    """Every setting, in model order, with the defaults of a `Settings()` built from nothing."""
    defaults = Settings()
    docs: list[SettingDoc] = []
    for name, model, field in sections():
        if model is not None:
            section = getattr(defaults, name)
            for sub, sub_field in model.model_fields.items():
                value = getattr(section, sub)
                if _is_model(sub_field.annotation):  # a nested section, e.g. query.generation
                    for leaf, leaf_field in sub_field.annotation.model_fields.items():
                        docs.append(_doc(f"{name}.{sub}.{leaf}", leaf_field, getattr(value, leaf)))
                    continue
                docs.append(_doc(f"{name}.{sub}", sub_field, value))
            continue
        docs.append(_doc(name, field, getattr(defaults, name)))
        value_model = mapping_value_model(field.annotation)
        if value_model is not None:  # e.g. prices: {model name: ModelPrice}
            for sub, sub_field in value_model.model_fields.items():
                docs.append(_doc(f"{name}.<key>.{sub}", sub_field, None, required=sub_field.is_required()))
    return docs


def strategy_docs() -> list[SettingDoc]:
    """``strategies.enabled``, then ``strategies.<name>.<param>``: every registered strategy's
    parameters, from its model."""
    from graphunified_query.strategies.registry import STRATEGIES  # the retrievers: only when documenting

    optional = sorted({artifact for s in STRATEGIES.values() for artifact in s.reads})
    enabled = SettingDoc(
        f"strategies.{ENABLED}",
        "list of strategy names",
        None,
        "registered or defined in strategies",
        "The strategies you run (unset: all). The pipeline writes empty what only the others read "
        f"({', '.join(optional)}); asking a strategy left out is an error saying how to enable it, "
        "and auto never routes to it.",
    )
    return [enabled] + [
        _doc(f"strategies.{name}.{param}", field, field.default)
        for name, strategy in STRATEGIES.items()
        for param, field in strategy.params.model_fields.items()
    ]


def strategy_table() -> str:
    """The strategies and their parameters as one Markdown table (docs/strategies.md embeds it)."""
    from graphunified_query.strategies.registry import STRATEGIES

    lines = [
        "| strategy | tier | parameter | type | default | constraints | description |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, strategy in STRATEGIES.items():
        params = strategy.params.model_fields.items()
        if not params:
            lines.append(f"| `{name}` | {strategy.tier} | (none) | | | | {_cell(strategy.summary)} |")
        for param, field in params:
            doc = _doc(param, field, field.default)
            row = (
                f"`{name}`",
                strategy.tier,
                f"`{param}`",
                doc.type,
                _default_cell(doc),
                doc.constraints,
                doc.description,
            )
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def generate_reference() -> str:
    lines = [
        "# Settings reference",
        "",
        f"Generated from `graphunified_query/core/settings/model.py` by `{COMMAND}`; do not edit by hand.",
        "Set them in `<home>/settings.yaml` (start from `python -m graphunified_assets init`) or as",
        "`GRAPHUNIFIED__SECTION__KEY` environment variables. API keys are never settings: they come",
        f"from the environment ({', '.join(f'`{name}`' for name in secret_variables())}).",
    ]
    docs = settings_docs() + strategy_docs()
    for name, model, field in sections():
        lines += ["", f"## `{name}`", ""]
        about = _doc_text(model) if model is not None else (field.description or "")
        if about:
            lines += [about, ""]
        lines += ["| setting | type | default | constraints | description |", "|---|---|---|---|---|"]
        for doc in docs:
            if doc.name == name or doc.name.startswith(f"{name}."):
                row = (f"`{doc.name}`", doc.type, _default_cell(doc), doc.constraints, doc.description)
                lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def write_reference(path: Path = REFERENCE_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(generate_reference(), encoding="utf-8")
    return path


def type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is Annotated:  # a registered name lists the registry's choices
        for meta in get_args(annotation)[1:]:
            registry = getattr(getattr(meta, "func", None), "__self__", None)
            if isinstance(registry, Registry):
                return " \\| ".join(repr(v) for v in registry.choices())
        if not get_args(annotation)[1:]:
            return type_name(get_args(annotation)[0])
    if origin is Literal:
        return " \\| ".join(repr(v) for v in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " \\| ".join(type_name(a) for a in get_args(annotation))
    if origin is tuple:
        args = get_args(annotation)
        inner = type_name(args[0]) if args else "Any"
        return f"list of {inner}" if len(args) == 2 and args[1] is Ellipsis else f"tuple[{inner}, ...]"
    if origin is dict:
        key, value = get_args(annotation)
        return f"mapping {type_name(key)} → {type_name(value)}"
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


def yaml_value(value: Any) -> str:
    """A value as it would be written in settings.yaml, on one line."""
    text = yaml.safe_dump(_plain(value), default_flow_style=True, width=10_000, allow_unicode=True)
    return text.strip().removesuffix("...").strip()


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return {k: _plain(v) for k, v in value.model_dump().items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def _registered(field: FieldInfo) -> Any:
    """A field validated against a registry (pydantic moves its Annotated metadata to the field)."""
    return next(
        (
            Annotated[field.annotation, m]
            for m in field.metadata
            if isinstance(getattr(getattr(m, "func", None), "__self__", None), Registry)
        ),
        None,
    )


def _doc(name: str, field: FieldInfo, default: Any, *, required: bool = False) -> SettingDoc:
    return SettingDoc(
        name=name,
        type=type_name(_registered(field) or field.annotation),
        default="(required)" if required else default,
        constraints=_constraints(field),
        description=field.description or "",
    )


def _constraints(field: FieldInfo) -> str:
    parts = []
    for item in _metadata(field):
        for kind, attr, symbol in _BOUNDS:
            if isinstance(item, kind):
                parts.append(f"{symbol} {getattr(item, attr)}")
        for length, attr, template in _LENGTHS:
            if isinstance(item, length):
                parts.append(template.format(getattr(item, attr)))
    return ", ".join(parts)


def _metadata(field: FieldInfo) -> list[Any]:
    """The field's constraints, with those of an ``Annotated`` alias (e.g. ``Unit``) inside its type."""
    found = list(field.metadata)
    for arg in get_args(field.annotation):  # Optional[Unit]: the alias sits inside the union
        found += [m for a in getattr(arg, "__metadata__", ()) for m in getattr(a, "metadata", [a])]
    return found


def _default_cell(doc: SettingDoc) -> str:
    if doc.default == "(required)":
        return "(required)"
    text = yaml_value(doc.default)
    return f"`{text}`" if len(text) <= 80 else "see `settings.py`"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("\\\\|", "\\|")


def _doc_text(model: type[BaseModel]) -> str:
    own = model.__dict__.get("__doc__")  # only a docstring the section itself declares
    return " ".join(inspect.cleandoc(own).split()) if own else ""


def _is_model(annotation: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def mapping_value_model(annotation: Any) -> type[BaseModel] | None:
    if get_origin(annotation) is dict:
        value = get_args(annotation)[1]
        return value if _is_model(value) else None
    return None
