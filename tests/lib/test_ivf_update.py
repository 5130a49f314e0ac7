"""An update places new rows in the saved inverted lists instead of re-clustering: unchanged rows
keep their list, new ones go to their nearest centroid, removed ones leave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from graphunified_assets.lib.vectors import ivf_update
from graphunified_query.core.indexes import ivf


def _unit(rows: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _list_of(lists: ivf.InvertedLists) -> np.ndarray:
    found = np.empty(len(lists.rows), np.int64)
    found[lists.rows] = np.repeat(np.arange(len(lists.centroids)), np.diff(lists.offsets))
    return found


def test_new_rows_go_to_their_nearest_list_and_the_rest_stay(tmp_path: Path) -> None:
    path = tmp_path / "ivf" / "t.npz"
    matrix = _unit(400, 0)
    ids = [f"r{n}" for n in range(400)]
    built = ivf.build(matrix, ids)
    ivf_update.save(path, built, pa.array(ids), len(ids))
    before = dict(zip(ids, _list_of(built), strict=True))

    added = _unit(5, 1)
    new_ids = [i for i in ids if i not in {"r3", "r7"}] + [f"n{n}" for n in range(5)]
    new_ids.reverse()  # a rewritten table may order its rows differently
    found = ivf_update.updated(path, pa.array(new_ids), {f"n{n}": added[n] for n in range(5)})

    assert found is not None
    lists, clustered = found
    assert clustered == 400 and np.array_equal(lists.centroids, built.centroids)
    assert ivf.load(path, ids) is not None  # nothing saved yet: the caller saves
    now = dict(zip(new_ids, _list_of(lists), strict=True))
    assert all(now[i] == before[i] for i in new_ids if i in before)
    nearest = np.argmax(added @ built.centroids.T, axis=1)
    assert [now[f"n{n}"] for n in range(5)] == nearest.tolist()
    assert lists.ids_digest == ivf.ids_digest(new_ids)


def test_lists_are_reclustered_when_the_table_moved_far_or_the_assignment_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "t.npz"
    matrix = _unit(400, 0)
    ids = [f"r{n}" for n in range(400)]
    ivf_update.save(path, ivf.build(matrix, ids), pa.array(ids), len(ids))
    grown = ids + [f"n{n}" for n in range(60)]  # 15 % more rows
    vectors = dict(zip(grown[400:], _unit(60, 2), strict=True))
    assert ivf_update.updated(path, pa.array(grown), vectors) is None
    ivf_update.assignment_path(path).unlink()
    assert ivf_update.updated(path, pa.array(ids[:-1]), {}) is None
