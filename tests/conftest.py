"""Shared fixtures: a small input folder, a data home, and an isolated Dagster instance."""

from __future__ import annotations

from pathlib import Path

import pytest

# `--cpu-durations=N`: where the suite's CPU goes (docs/development.md, keeping the suite fast).
pytest_plugins = ["tests.cpu_durations"]

SAMPLE_DOCS = {
    "mill.md": (
        "# Hale Mill\n\nThe Hale Mill was founded by Thomas Hale in 1862 on the River Harrow.\n\n"
        "## Products\n\nIt wove wool cloth for the Harrow Valley Railway uniforms.\n"
    ),
    "people/thomas-hale.md": (
        "# Thomas Hale\n\nThomas Hale was born in Eastfold in 1831. He founded the Hale Mill.\n"
    ),
    "flood.txt": "The Great Flood\nIn 1894 the River Harrow flooded Eastfold and Millbrook.\n",
}


@pytest.fixture
def input_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "input"
    for name, text in SAMPLE_DOCS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    # `index` points DAGSTER_HOME at the home's own instance; restore it after the test.
    monkeypatch.setenv("DAGSTER_HOME", str(folder / "dagster"))
    return folder
