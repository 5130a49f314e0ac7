"""Offline indexes shared by the query tests, each built once per session: the two-hop fixture
corpus (`built_home`) and the bundled data/sample (`sample_home`). Both are read-only; a test that
writes to a home copies it first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.engine.query_engine import QueryEngine

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "two_hop"
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


OFFLINE_SETTINGS = "embedding:\n  provider: local\nllm:\n  provider: offline\n"


def index_offline(corpus: Path, home: Path, settings_yaml: str = OFFLINE_SETTINGS) -> Path:
    """``corpus`` indexed into ``home`` with the local embedder and no LLM (no key is read)."""
    (home / "settings.yaml").write_text(settings_yaml)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        patch.delenv("VOYAGE_API_KEY", raising=False)
        index(GraphUnifiedResource(home=str(home), input_dir=str(corpus)), echo=lambda _: None)
    return home


@pytest.fixture(scope="session")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield index_offline(FIXTURE, tmp_path_factory.mktemp("query-home"))


@pytest.fixture(scope="session")
def engine(built_home: Path) -> QueryEngine:
    return QueryEngine.open(built_home, environ={})


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data/sample indexed offline (the strategy fidelity, expansion and LightRAG keyword tests)."""
    return index_offline(SAMPLE, tmp_path_factory.mktemp("sample-home"))
