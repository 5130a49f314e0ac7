"""Settings: defaults with no file, YAML and environment overrides, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_query.core.settings.model import SettingsError, load_settings


def test_defaults_without_any_file(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, environ={})
    assert (settings.chunking.size, settings.chunking.overlap, settings.chunking.min_size) == (512, 128, 100)
    assert settings.embedding.provider == "auto"


def test_yaml_then_environment_override(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("chunking:\n  size: 256\n  overlap: 32\n")
    settings = load_settings(tmp_path, environ={"GRAPHUNIFIED__CHUNKING__OVERLAP": "64"})
    assert settings.chunking.size == 256
    assert settings.chunking.overlap == 64


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("chunking:\n  size: 100\n  overlap: 100\n", "overlap"),
        ("chunking:\n  sise: 100\n", "chunking.sise"),
        ("embedding:\n  provider: openai\n", "embedding.provider"),
        ("- just\n- a list\n", "mapping"),
        ("chunking: [unclosed\n", "not valid YAML"),
    ],
)
def test_invalid_settings_name_the_problem(tmp_path: Path, text: str, named: str) -> None:
    (tmp_path / "settings.yaml").write_text(text)
    with pytest.raises(SettingsError, match=named) as error:
        load_settings(tmp_path, environ={})
    assert "settings.yaml" in str(error.value)
