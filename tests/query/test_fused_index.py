"""An index built with two fused embedding models: every strategy serves it, vectors of another
model list are refused, and the graph is the one the first model alone gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphunified_query.core.artifacts import CHUNK_SIMILARITY_FILE, SYNONYMS
from graphunified_query.core.indexes.chunk_similarity import SimilarityEdges
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers import EmbeddingModelMismatch
from graphunified_query.core.stores.parquet import read_table
from graphunified_query.engine.query_engine import QueryEngine
from tests.query.conftest import FIXTURE, OFFLINE_SETTINGS, index_offline

FUSED = (
    "embedding:\n  provider: local\n  models:\n    - name: all-MiniLM-L6-v2\n"
    "    - name: multilingual-e5-small-q4\nllm:\n  provider: offline\n"
)


@pytest.fixture(scope="module")
def fused_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_offline(FIXTURE, tmp_path_factory.mktemp("fused-home"), FUSED)


def test_every_strategy_ranks_by_the_fused_vectors(fused_home: Path) -> None:
    engine = QueryEngine.open(fused_home, environ={})
    assert engine.snapshot.model.startswith("fused(all-MiniLM-L6-v2:")
    assert engine.embedder.dimension == 768
    for strategy in ("naive", "hybrid", "graphrag_local", "lightrag", "hipporag", "expanded"):
        retrieval, _ = engine.retrieve("Who founded the Hale Mill?", strategy, 5)
        assert retrieval.results, strategy
    retrieval, _ = engine.retrieve("Who founded the Hale Mill?", "naive", 1)
    assert "hale" in retrieval.results[0].document_id  # hale-mill.md or thomas-hale.md


def test_an_engine_with_another_model_list_is_refused(fused_home: Path) -> None:
    (fused_home / "settings.yaml").write_text(OFFLINE_SETTINGS)
    try:
        with pytest.raises(EmbeddingModelMismatch, match="fused"):
            QueryEngine.open(fused_home, environ={})
    finally:
        (fused_home / "settings.yaml").write_text(FUSED)


def test_synonym_edges_keep_the_first_models_cosines(fused_home: Path, built_home: Path) -> None:
    fused = read_table(HomeLayout.at(fused_home).table_path(SYNONYMS)).to_pylist()
    alone = read_table(HomeLayout.at(built_home).table_path(SYNONYMS)).to_pylist()
    assert alone  # the fixture has synonyms to compare
    pairs = lambda rows: {(r["source"], r["target"]): r["similarity"] for r in rows}  # noqa: E731
    assert pairs(fused).keys() == pairs(alone).keys()
    assert np.allclose(list(pairs(fused).values()), list(pairs(alone).values()), atol=1e-4)


def test_similar_to_edges_keep_the_first_models_cosines(fused_home: Path, built_home: Path) -> None:
    def edges(home: Path) -> dict[tuple[str, str], float]:
        found = SimilarityEdges.load(HomeLayout.at(home).index_path(CHUNK_SIMILARITY_FILE))
        assert found is not None
        return dict(zip(zip(found.source, found.target, strict=True), found.similarity.tolist(), strict=True))

    fused, alone = edges(fused_home), edges(built_home)
    assert alone and fused.keys() == alone.keys()
    assert np.allclose([fused[k] for k in alone], list(alone.values()), atol=1e-4)
