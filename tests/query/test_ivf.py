"""Inverted lists: nearly the exact top-k at a fraction of the rows, and never stale."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphunified_query.indexes import ivf
from graphunified_query.indexes.dense import DenseIndex


def _clustered(rows: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 300 topics, as sentence embeddings of a corpus are."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(300, 64)).astype(np.float32)
    matrix = topics[rng.integers(0, 300, rows)] + 0.6 * rng.normal(size=(rows, 64)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_probing_a_tenth_of_the_lists_finds_nearly_all_of_the_exact_top_10() -> None:
    matrix = _clustered(20_000)
    ids = [f"r{i}" for i in range(len(matrix))]
    lists = ivf.build(matrix, ids)
    assert len(lists.centroids) == 566 and lists.offsets[-1] == len(matrix)
    assert sorted(lists.rows.tolist()) == list(range(len(matrix)))  # every row in exactly one list
    exact, approximate = DenseIndex(tuple(ids), matrix), DenseIndex(tuple(ids), matrix, lists)
    queries = _clustered(50, seed=1)
    found = [
        len({r for r, _ in exact.search(q, 10)} & {r for r, _ in approximate.search(q, 10)}) / 10
        for q in queries
    ]
    assert np.mean(found) >= 0.9
    scanned = np.mean([len(lists.candidates(q)) for q in queries]) / len(matrix)
    assert scanned < 0.2
    # Scores are the exact cosines of the rows returned.
    row, score = approximate.search(queries[0], 1)[0]
    assert np.isclose(score, float(matrix[row] @ queries[0]))


def test_lists_built_for_other_rows_are_ignored(tmp_path: Path) -> None:
    matrix = _clustered(2_000)
    ids = [f"r{i}" for i in range(len(matrix))]
    path = tmp_path / ivf.ivf_file("relationship_vectors")
    ivf.save(path, ivf.build(matrix, ids))
    assert ivf.load(path, ids) is not None
    assert ivf.load(path, [*ids[:-1], "changed"]) is None  # the table changed since: exact search
    assert ivf.load(tmp_path / "missing.npz", ids) is None


def test_rows_regrouped_by_list_answer_exactly_as_the_row_ordered_index() -> None:
    matrix = _clustered(6_000, seed=2)
    ids = tuple(f"r{i}" for i in range(len(matrix)))
    lists = ivf.build(matrix, ids)
    gathered, clustered = DenseIndex(ids, matrix, lists), DenseIndex.clustered(ids, matrix, lists)
    assert not np.array_equal(clustered.matrix, matrix)  # the storage order really changed
    rows = [5, 0, 5_999, 17]
    assert np.array_equal(clustered.vectors(rows), matrix[rows])
    for q in _clustered(20, seed=3):
        assert np.allclose(clustered.similarities(q), matrix @ q, atol=1e-6)
        assert [r for r, _ in clustered.search(q, 10)] == [r for r, _ in gathered.search(q, 10)]
        assert [r for r, _ in clustered.search(q, 10, exact=True)] == [
            r for r, _ in gathered.search(q, 10, exact=True)
        ]
    assert clustered.dimension == matrix.shape[1]
