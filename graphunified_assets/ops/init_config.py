"""`python -m graphunified_assets init`: write a commented starter `settings.yaml`.

Every setting is listed, with its description (from the settings model) as a comment and its
default; the preset's values are the only active lines, every other line is commented out, so
the file loads to exactly the preset and uncommenting a line is all it takes to change one.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graphunified_query.core.plugins import secret_variables
from graphunified_query.core.settings.model import Settings, SettingsError
from graphunified_query.core.settings.presets import preset_settings, preset_values
from graphunified_query.core.settings.reference import mapping_value_model, sections, yaml_value

_WIDTH = 100


class InitError(ValueError):
    """The file exists (without --force) or cannot be written; the message says what to do."""


def starter_yaml(preset: str | None = None) -> str:
    """The commented settings file for ``preset`` (None: all defaults)."""
    values = preset_values(preset)
    settings = preset_settings(preset)
    defaults = Settings()
    title = f"preset '{preset}'" if preset else "defaults"
    lines = [
        f"# Graph-Unified settings ({title}), written by `python -m graphunified_assets init`.",
        "# Active lines are what this file changes; uncomment any other line to change it.",
        "# Every setting is described in docs/settings.md. API keys never go here: export",
        f"# {' or '.join(secret_variables())} instead.",
    ]
    for name, model, field in sections():
        chosen: Any = values.get(name)
        lines.append("")
        if model is None:  # a mapping such as `prices`: shown whole, commented unless the preset sets it
            lines += _comment(field.description or "", "")
            value_model = mapping_value_model(field.annotation)
            for sub, sub_field in (value_model.model_fields if value_model else {}).items():
                lines += _comment(f"{sub}: {sub_field.description or ''}", "")
            value = getattr(settings if chosen is not None else defaults, name)
            body = [f"{name}:"] + [f"  {k}: {yaml_value(v)}" for k, v in value.items()]
            lines += body if chosen is not None else [f"# {line}" for line in body]
            continue
        chosen = chosen or {}
        lines.append(f"{name}:" if chosen else f"# {name}:")
        section = getattr(settings, name)
        for key, sub_field in model.model_fields.items():
            nested = sub_field.annotation
            if isinstance(nested, type) and issubclass(nested, BaseModel):  # e.g. query.generation
                lines.append(f"  {key}:" if key in chosen else f"  # {key}:")
                for leaf, leaf_field in nested.model_fields.items():
                    lines += _comment(leaf_field.description or "", "    ")
                    entry = f"{leaf}: {yaml_value(getattr(getattr(section, key), leaf))}"
                    lines.append(f"    {entry}" if leaf in (chosen.get(key) or {}) else f"    # {entry}")
                continue
            lines += _comment(sub_field.description or "", "  ")
            entry = f"{key}: {yaml_value(getattr(section, key))}"
            lines.append(f"  {entry}" if key in chosen else f"  # {entry}")
    return "\n".join(lines) + "\n"


def write_starter(path: Path, preset: str | None = None, *, force: bool = False) -> Path:
    """Write the starter file; refuses to overwrite an existing one unless ``force``."""
    if path.exists() and not force:
        raise InitError(f"{path} already exists; --force overwrites it; --path writes elsewhere.")
    text = starter_yaml(preset)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InitError(f"Cannot write {path}: {error.strerror}; choose another --path.") from None
    return path


def run_init(home: str, path: str | None, preset: str | None, force: bool) -> tuple[int, str]:
    """Exit code and message for the CLI."""
    target = Path(path) if path else Path(home) / "settings.yaml"
    try:
        written = write_starter(target, preset, force=force)
    except (InitError, SettingsError) as error:
        return 2, f"error: {error}"
    return 0, f"wrote {written} ({f'preset {preset}' if preset else 'defaults'}); edit it, then run `index`"


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}# {line}" for line in textwrap.wrap(text, _WIDTH - len(indent) - 2)] if text else []
