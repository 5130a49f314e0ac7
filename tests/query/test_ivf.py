"""Inverted lists: nearly the exact top-k at a fraction of the rows, and never stale."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphunified_query.core.artifacts import ivf_file
from graphunified_query.core.indexes import ivf
from graphunified_query.core.indexes.dense import DenseIndex


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
    path = tmp_path / ivf_file("relationship_vectors")
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


def _build_with_add_at(matrix: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ivf.build as it was before the one-hot sums: np.add.at accumulation, a cold start."""
    count = len(matrix)
    lists = max(1, round(ivf.LISTS_PER_SQRT_ROWS * count**0.5))
    rng = np.random.default_rng(seed)
    sample = matrix[rng.choice(count, min(count, ivf.TRAINING_ROWS), replace=False)]
    centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(ivf.ITERATIONS):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        empty = ~sums.any(axis=1)
        sums[empty] = centroids[empty]
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    assignment = np.argmax(matrix @ centroids.T, axis=1)
    rows = np.argsort(assignment, kind="stable").astype(np.int32)
    offsets = np.searchsorted(assignment[rows], np.arange(lists + 1)).astype(np.int64)
    return centroids.astype(np.float32), rows, offsets


def test_one_hot_sums_build_the_same_lists_as_add_at_bit_for_bit() -> None:
    rng = np.random.default_rng(4)
    sample = rng.normal(size=(5_000, 48)).astype(np.float32)
    nearest = rng.integers(0, 200, len(sample))
    nearest[nearest == 7] = 8  # list 7 stays empty
    expected = np.zeros((200, 48), np.float32)
    np.add.at(expected, nearest, sample)
    assert np.array_equal(ivf._sums(sample, nearest, 200), expected)
    matrix = _clustered(8_000, seed=5)
    lists = ivf.build(matrix, [f"r{i}" for i in range(len(matrix))])
    centroids, rows, offsets = _build_with_add_at(matrix)
    assert np.array_equal(lists.centroids, centroids)
    assert np.array_equal(lists.rows, rows) and np.array_equal(lists.offsets, offsets)


def _recall(matrix: np.ndarray, lists: ivf.InvertedLists, queries: np.ndarray) -> float:
    ids = tuple(f"r{i}" for i in range(len(matrix)))
    exact, approximate = DenseIndex(ids, matrix), DenseIndex(ids, matrix, lists)
    return float(
        np.mean(
            [
                len({r for r, _ in exact.search(q, 10)} & {r for r, _ in approximate.search(q, 10)}) / 10
                for q in queries
            ]
        )
    )


def test_an_update_starts_from_the_previous_centroids_and_finds_as_much(tmp_path: Path) -> None:
    matrix = _clustered(20_000, seed=6)
    ids = [f"r{i}" for i in range(len(matrix))]
    path = tmp_path / ivf_file("relationship_vectors")
    ivf.save(path, ivf.build(matrix[:19_500], ids[:19_500]))  # before a few documents were added
    previous = ivf.load_previous(path)
    assert previous is not None and ivf.load(path, ids) is None  # other rows: a warm start only
    warm = ivf.build(matrix, ids, previous=previous, seed=1)
    fresh = ivf.build(matrix, ids, seed=1)
    assert warm.iterations == ivf.WARM_ITERATIONS < fresh.iterations == ivf.ITERATIONS
    assert len(warm.centroids) == len(fresh.centroids) == 566  # grown from 559 lists
    assert sorted(warm.rows.tolist()) == list(range(len(matrix)))
    queries = _clustered(300, seed=7)
    assert _recall(matrix, warm, queries) >= _recall(matrix, fresh, queries) - 0.005
    ivf.save(path, warm)
    loaded = ivf.load(path, ids)  # the warm lists serve queries for exactly these rows
    assert loaded is not None and np.array_equal(loaded.rows, warm.rows)
    assert ivf.load(path, ids[:-1]) is None


def test_a_shrunk_table_keeps_its_largest_lists_and_another_dimension_starts_cold() -> None:
    matrix = _clustered(20_000, seed=8)
    ids = [f"r{i}" for i in range(len(matrix))]
    previous = ivf.build(matrix, ids)
    shrunk = ivf.build(matrix[:10_000], ids[:10_000], previous=previous)
    assert shrunk.iterations == ivf.WARM_ITERATIONS and len(shrunk.centroids) == 400
    assert shrunk.offsets[-1] == 10_000
    other = np.ascontiguousarray(matrix[:10_000, :32])
    other /= np.linalg.norm(other, axis=1, keepdims=True)
    assert ivf.build(other, ids[:10_000], previous=previous).iterations == ivf.ITERATIONS
