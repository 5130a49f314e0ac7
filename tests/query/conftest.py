"""One offline index of the two-hop fixture corpus, shared by the query tests (built once)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graphunified_assets.indexing import index
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.engine import QueryEngine

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "two_hop"


def index_offline(home: Path, input_dir: Path) -> Path:
    """Index ``input_dir`` into ``home`` with the local embedder and no LLM."""
    (home / "settings.yaml").write_text("embedding:\n  provider: local\nllm:\n  provider: offline\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        patch.delenv("VOYAGE_API_KEY", raising=False)
        index(GraphUnifiedResource(home=str(home), input_dir=str(input_dir)), echo=lambda _: None)
    return home


@pytest.fixture(scope="session")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield index_offline(tmp_path_factory.mktemp("query-home"), FIXTURE)


@pytest.fixture(scope="session")
def engine(built_home: Path) -> QueryEngine:
    return QueryEngine.open(built_home, environ={})
