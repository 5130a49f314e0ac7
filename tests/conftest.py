"""Shared fixtures: a small input folder, a data home, and an isolated Dagster instance."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from tests.fakes.voyage_server import FakeVoyageServer

# `--cpu-durations=N`: where the suite's CPU goes (docs/development.md, keeping the suite fast).
pytest_plugins = ["tests.cpu_durations", "tests.parallel"]

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


@pytest.fixture(scope="session")
def voyage() -> Iterator[FakeVoyageServer]:
    from tests.fakes.voyage_server import FakeVoyageServer

    with FakeVoyageServer() as server:
        yield server


def voyage_resource(
    home: Path, voyage: FakeVoyageServer, input_dir: Path | None = None
) -> GraphUnifiedResource:
    """A resource for ``home`` that embeds through the fake Voyage server (no key, no network)."""
    from graphunified_assets.defs.resources import GraphUnifiedResource

    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.yaml").write_text(
        f"embedding:\n  provider: voyage\n  voyage_base_url: {voyage.base_url}\n  batch_size: 8\n"
    )
    return GraphUnifiedResource(
        home=str(home), input_dir=str(input_dir) if input_dir else None, voyage_api_key="test-key"
    )


@pytest.fixture(scope="session")
def exported_home(tmp_path_factory: pytest.TempPathFactory, voyage: FakeVoyageServer) -> Iterator[Path]:
    """SAMPLE_DOCS indexed once for the session, for the tests that only read a home (exports)."""
    from graphunified_assets.ops.indexing import index

    root = tmp_path_factory.mktemp("sample")
    for name, text in SAMPLE_DOCS.items():
        (root / "input" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "input" / name).write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(root / "home" / "dagster"))  # index() repoints it
        index(voyage_resource(root / "home", voyage, root / "input"), echo=lambda _: None)
        yield root / "home"
