"""docs/settings.md is generated from the settings model: it must match and list every setting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graphunified_assets.cli.main import main
from graphunified_query.core.settings.model import Settings
from graphunified_query.core.settings.reference import COMMAND, REFERENCE_PATH, generate_reference


def _dotted_names(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every leaf setting, walked independently of the generator."""
    names = []
    for name, field in model.model_fields.items():
        annotation: Any = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names += _dotted_names(annotation, f"{prefix}{name}.")
        else:
            names.append(f"{prefix}{name}")
    return names


def test_the_committed_reference_is_up_to_date() -> None:
    assert REFERENCE_PATH.read_text(encoding="utf-8") == generate_reference(), (
        f"docs/settings.md is out of date: run `{COMMAND}`"
    )


def test_the_reference_lists_every_setting_with_type_default_and_constraints() -> None:
    text = generate_reference()
    names = _dotted_names(Settings)
    assert len(names) > 50
    for name in names:
        assert f"| `{name}` |" in text, name
    assert "| `llm.max_gleanings` | int | `1` | ≥ 0, ≤ 5 |" in text
    assert "'auto' \\| 'tools' \\| 'json' \\| 'json_schema'" in text
    assert "| `prices.<key>.input` | float | (required) |" in text


def test_check_flag_detects_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "settings.md"
    stale.write_text("# old\n")
    assert main(["settings-reference", "--out", str(stale), "--check"]) == 1
    assert main(["settings-reference", "--out", str(stale)]) == 0
    assert main(["settings-reference", "--out", str(stale), "--check"]) == 0
