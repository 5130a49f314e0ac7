"""SIMILAR_TO edges: the blocked kNN equals brute force, and the index asset builds and loads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from graphunified_assets.definitions import defs
from graphunified_query.core.artifacts import CHUNK_SIMILARITY_FILE
from graphunified_query.core.indexes import neighbour_choices
from graphunified_query.core.indexes.chunk_similarity import SimilarityEdges, similarity_edges
from graphunified_query.core.indexes.manifest import read_manifest
from graphunified_query.core.settings.model import GraphSettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.snapshot.loader import load_snapshot


def _clustered(n: int, dimension: int, seed: int) -> np.ndarray:
    """Unit vectors around a few centres, so many pairs clear a high threshold and many do not."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, dimension))
    vectors = centres[rng.integers(0, 6, n)] + 0.6 * rng.normal(size=(n, dimension))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _brute_force(vectors: np.ndarray, threshold: float, k: int) -> dict[tuple[int, int], float]:
    sims = vectors.astype(np.float64) @ vectors.T.astype(np.float64)
    pairs: dict[tuple[int, int], float] = {}
    for i in range(len(vectors)):
        others = [j for j in np.argsort(-sims[i], kind="stable") if j != i][:k]
        for j in others:
            if sims[i, j] >= threshold:
                pairs[(min(i, j), max(i, j))] = float(sims[i, j])
    return pairs


def _edges(vectors: np.ndarray, threshold: float, k: int) -> dict[tuple[int, int], float]:
    """The edges of ``similarity_edges`` by row position (ids ``c000``, ... sort as the rows)."""
    table = similarity_edges(
        [f"c{i:03d}" for i in range(len(vectors))], vectors, threshold=threshold, neighbours=k
    )
    rows = zip(*(table.column(name).to_pylist() for name in table.column_names), strict=True)
    return {(int(s[1:]), int(t[1:])): sim for s, t, sim in rows}


@pytest.mark.parametrize("block_cells", [10**9, 700])  # one block, and blocks of a few rows
def test_knn_edges_equal_brute_force(monkeypatch: pytest.MonkeyPatch, block_cells: int) -> None:
    monkeypatch.setattr(neighbour_choices, "_BLOCK_CELLS", block_cells)
    vectors = _clustered(120, 16, seed=7)
    edges = _edges(vectors, 0.6, 4)
    expected = _brute_force(vectors, 0.6, 4)
    assert 20 < len(expected) < 120 * 4  # the threshold and k both bind
    assert set(edges) == set(expected)
    for pair, sim in edges.items():
        assert sim == pytest.approx(expected[pair], abs=1e-5)


def test_knn_edges_respect_the_threshold_and_normalise_their_input() -> None:
    vectors = _clustered(80, 12, seed=3)
    edges = _edges(vectors, 0.8, 2)
    assert edges and min(edges.values()) >= 0.8 and all(s < t for s, t in edges)
    assert set(_edges(vectors * 5.0, 0.8, 2)) == set(edges)
    assert len(_edges(vectors, 0.95, 2)) < len(edges)
    assert not _edges(vectors[:1], 0.0, 3)
    assert not _edges(vectors, 0.0, 0)


def test_equal_cosines_go_to_the_smaller_id_whatever_the_row_order() -> None:
    vectors = np.array([[1, 0], [1, 0], [1, 0], [0, 1]], np.float32)  # three duplicates
    for ids in (["a", "b", "c", "d"], ["c", "b", "a", "d"]):
        table = similarity_edges(ids, vectors, threshold=0.5, neighbours=1)
        # a and b choose each other, c chooses a: its smaller duplicate.
        assert list(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True)) == [
            ("a", "b"),
            ("a", "c"),
        ]


def test_similarity_edges_round_trip_with_symmetric_adjacency() -> None:
    vectors = _clustered(30, 8, seed=11)
    ids = [f"c{i:02d}" for i in range(30)]
    table = similarity_edges(ids, vectors, threshold=0.5, neighbours=3)
    edges = SimilarityEdges.from_table(table)
    assert edges.threshold == 0.5 and edges.neighbours == 3 and len(edges) == table.num_rows > 0
    source, target, sim = edges.source[0], edges.target[0], float(edges.similarity[0])
    assert source < target
    assert (target, sim) in edges.adjacency[source] and (source, sim) in edges.adjacency[target]
    for neighbours in edges.adjacency.values():
        assert [s for _, s in neighbours] == sorted((s for _, s in neighbours), reverse=True)


def test_the_refresh_job_builds_chunk_similarity() -> None:
    selected = defs.resolve_job_def("refresh_indexes").asset_layer.selected_asset_keys
    assert "chunk_similarity" in {key.to_user_string() for key in selected}


def test_indexing_writes_the_edges_the_snapshot_loads(built_home: Path, engine: QueryEngine) -> None:
    snapshot = engine.snapshot
    path = built_home / "indexes" / CHUNK_SIMILARITY_FILE
    manifest = read_manifest(path)
    assert manifest is not None and manifest["built_from"]["chunk_vectors"].startswith("lance-v")
    settings = GraphSettings()
    edges = snapshot.chunk_similarity
    assert edges is not None and edges.threshold == settings.chunk_similarity_threshold
    expected = similarity_edges(
        snapshot.chunks.ids,
        snapshot.chunk_vectors.matrix,
        threshold=settings.chunk_similarity_threshold,
        neighbours=settings.chunk_similarity_neighbours,
    )
    assert set(zip(edges.source, edges.target, strict=True)) == set(
        zip(
            expected.column("source_chunk").to_pylist(),
            expected.column("target_chunk").to_pylist(),
            strict=True,
        )
    )
    assert len(edges) >= 1  # the two Hale pages are close enough on the fixture corpus


def test_an_index_built_before_the_edges_still_loads(built_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "old-home"
    # A home that old predates published generations too: it is read from the live files.
    shutil.copytree(built_home, home, ignore=shutil.ignore_patterns("dagster", "published"))
    (home / "indexes" / CHUNK_SIMILARITY_FILE).unlink()
    assert load_snapshot(home).chunk_similarity is None
