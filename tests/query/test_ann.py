"""The faiss index of the large vector tables: nearly the exact top-k, updated by id in a delta
beside its base, never stale."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from types import SimpleNamespace

import faiss
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_query.core.artifacts import ann_file
from graphunified_query.core.indexes import ann, ann_delta, ann_update
from graphunified_query.core.indexes.dense import DenseIndex


def _clustered(rows: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 300 topics, as sentence embeddings of a corpus are."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(300, 64)).astype(np.float32)
    matrix = topics[rng.integers(0, 300, rows)] + 0.6 * rng.normal(size=(rows, 64)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _recall(exact: DenseIndex, approximate: DenseIndex, queries: np.ndarray) -> float:
    found = [
        len({r for r, _ in exact.search(q, 10)} & {r for r, _ in approximate.search(q, 10)}) / 10
        for q in queries
    ]
    return float(np.mean(found))


@pytest.fixture(scope="module")
def table() -> tuple[tuple[str, ...], np.ndarray, ann.AnnIndex]:
    matrix = _clustered(20_000)
    ids = tuple(f"r{i}" for i in range(len(matrix)))
    return ids, matrix, ann.build(matrix, ids)


def test_probing_a_fifth_of_the_lists_finds_nearly_all_of_the_exact_top_10(
    table: tuple[tuple[str, ...], np.ndarray, ann.AnnIndex],
) -> None:
    ids, matrix, index = table
    assert index.lists == 566 and len(index) == len(matrix) and index.index.nprobe == 114
    exact, approximate = DenseIndex(ids, matrix), DenseIndex(ids, matrix, index)
    queries = _clustered(50, seed=1)
    assert _recall(exact, approximate, queries) >= 0.9
    # Scores are the cosines of the rows returned, best first, as the exact search gives them.
    hits = approximate.search(queries[0], 5)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert all(np.isclose(s, float(matrix[r] @ queries[0]), atol=1e-5) for r, s in hits)
    assert approximate.search(queries[0], 5, exact=True) == exact.search(queries[0], 5)


def test_a_mapped_index_searches_without_prefetch_threads_and_finds_what_it_held(
    table: tuple[tuple[str, ...], np.ndarray, ann.AnnIndex], tmp_path: Path
) -> None:
    """faiss's mapped lists start 32 threads per search by default (twice a query's time at 316K
    rows, bench/ann.py); a loaded base starts none and returns what the index in memory does."""
    ids, _, index = table
    path = tmp_path / ann_file("relationship_vectors")
    ann.save(path, index)
    loaded = ann.load(path, ids)
    assert loaded is not None
    assert faiss.downcast_InvertedLists(loaded.index.invlists).prefetch_nthread == 0
    query = _clustered(1, seed=2)[0]
    np.testing.assert_array_equal(loaded.search(query, 10)[0], index.search(query, 10)[0])


def test_an_index_for_other_rows_is_ignored_and_the_old_format_names_the_fix(
    tmp_path: Path, table: tuple[tuple[str, ...], np.ndarray, ann.AnnIndex]
) -> None:
    ids, matrix, index = table
    path = tmp_path / ann_file("relationship_vectors")
    assert ann.load(path, ids) is None  # nothing built: exact search
    old = tmp_path / "ivf" / "relationship_vectors.npz"  # the hand-written lists of a home before faiss
    old.parent.mkdir()
    old.write_bytes(b"")
    with pytest.raises(ann.OldIndexFormat, match=r"old inverted-list format.*index --refresh`\.$"):
        ann.load(path, ids)
    ann.save(path, index)
    assert not old.exists()  # converted: the old lists go
    loaded = ann.load(path, ids)  # memory-mapped, read-only
    assert loaded is not None and len(loaded) == len(ids) and ann.lists_holding(path, ids) == 566
    assert ann.load(path, [*ids[:-1], "changed"]) is None  # the table changed since: exact search
    assert ann.lists_holding(path, ids[:-1]) is None
    meta = path.with_name("relationship_vectors.json")
    recorded = json.loads(meta.read_text())
    assert recorded["delta"] is None and not ann_delta.path_of(path).exists()  # built: no delta
    # A .json from before the delta names neither it nor the base's count: the base alone.
    meta.write_text(json.dumps({k: v for k, v in recorded.items() if k not in ("delta", "base_rows")}))
    loaded = ann.load(path, ids)
    assert loaded is not None and len(loaded) == len(ids)
    query = _clustered(1, seed=4)[0]
    assert DenseIndex(ids, matrix, loaded).search(query, 10) == DenseIndex(ids, matrix, index).search(
        query, 10
    )


def test_an_update_removes_and_adds_rows_by_id_and_retrains_after_a_large_move(tmp_path: Path) -> None:
    matrix = _clustered(8_000, seed=5)
    ids = [f"r{i}" for i in range(len(matrix))]
    path = tmp_path / ann_file("fact_vectors")
    ann.save(path, ann.build(matrix, ids))
    previous = ann.load_previous(path)
    assert previous is not None
    added = _clustered(40, seed=6)
    gone = set(ids[100:130])
    changed = {"r5": -matrix[5]}  # a row whose text changed: the same id, another vector
    new_ids = [i for i in ids if i not in gone] + [f"n{n}" for n in range(40)]
    new_ids.reverse()  # a rewritten table may order its rows differently
    vectors = {**changed, **{f"n{n}": added[n] for n in range(40)}}
    found = ann_update.updated(previous, new_ids, sorted(gone | {"r5"}), vectors)
    assert found is not None and len(found) == len(new_ids) and found.trained_rows == 8_000
    row_of = {i: n for n, i in enumerate(new_ids)}
    new_matrix = np.stack([vectors.get(i, matrix[int(i[1:])] if i[0] == "r" else None) for i in new_ids])
    dense = DenseIndex(tuple(new_ids), new_matrix, found)
    for name in ("n0", "n39", "r5"):  # new and changed rows are found at their new vectors
        assert dense.search(vectors[name], 1)[0][0] == row_of[name]
    removed = matrix[110]
    assert all(new_ids[r] not in gone for r, _ in dense.search(removed, 10))
    ann.save(path, found)
    assert ann.lists_holding(path, new_ids) == found.lists
    # 15 % more rows than it was trained at: re-trained, not updated.
    grown = ids + [f"g{n}" for n in range(1_200)]
    more = dict(zip(grown[8_000:], _clustered(1_200, seed=7), strict=True))
    assert ann_update.updated(ann.load_previous(path), grown, [], more) is None  # type: ignore[arg-type]


def test_fewer_rows_in_the_probed_lists_than_asked_falls_back_to_exact() -> None:
    matrix = _clustered(400, seed=8)
    ids = tuple(f"r{i}" for i in range(len(matrix)))
    index = ann.build(matrix, ids)  # 80 lists of ~5 rows: 8 probed hold ~40
    query = _clustered(1, seed=9)[0]
    assert DenseIndex(ids, matrix, index).search(query, 200) == DenseIndex(ids, matrix).search(query, 200)


def test_a_repeated_row_id_is_named_not_called_a_hash_collision() -> None:
    matrix = _clustered(ann.MIN_ROWS)
    ids = [f"r{i}" for i in range(len(matrix))]
    ids[7] = "r3"
    with pytest.raises(ValueError, match="row id 'r3' appears more than once"):
        ann.build(matrix, ids)


def test_lists_sized_once_hold_what_faiss_add_puts_in_them_in_its_order(
    table: tuple[tuple[str, ...], np.ndarray, ann.AnnIndex],
) -> None:
    ids, matrix, built = table
    added = faiss.clone_index(built.index)
    added.reset()  # trained, empty: faiss's own add appends each row to its nearest list
    for start in range(0, len(ids), 7_000):
        added.add_with_ids(matrix[start : start + 7_000], ann.row_keys(ids[start : start + 7_000]))
    mine, theirs = built.index.invlists, added.invlists
    assert built.index.ntotal == added.ntotal == len(ids)
    for number in range(built.index.nlist):
        size = mine.list_size(number)
        assert size == theirs.list_size(number)
        if size:
            ids_in = [faiss.rev_swig_ptr(lists.get_ids(number), size) for lists in (mine, theirs)]
            assert np.array_equal(*ids_in)
            codes = size * mine.code_size
            assert np.array_equal(
                faiss.rev_swig_ptr(mine.get_codes(number), codes),
                faiss.rev_swig_ptr(theirs.get_codes(number), codes),
            )


def test_parts_that_read_other_rows_the_second_time_are_an_error() -> None:
    matrix = _clustered(1_000, seed=10)
    ids = [f"r{i}" for i in range(len(matrix))]
    readings = iter([(ids, matrix), (ids[::-1], matrix[::-1])])

    def parts() -> list[tuple[list[str], np.ndarray]]:
        return [next(readings)]

    with pytest.raises(ValueError, match="second reading holds other rows"):
        ann.build_from(matrix[:200], parts, ids)


def _unit(rng: np.random.Generator, rows: int, dimension: int = 8) -> np.ndarray:
    matrix = rng.normal(size=(rows, dimension)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _base_state(path: Path) -> tuple[int, int, str]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, hashlib.sha1(path.read_bytes()).hexdigest()


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(60, 400),
    updates=st.lists(st.tuples(*[st.integers(0, 40)] * 3), min_size=1, max_size=6),
    fold_share=st.sampled_from([0.0, 0.05, 1.0]),
)
def test_updates_kept_in_a_delta_hold_the_tables_rows_and_search_as_exactly_as_the_base(
    seed: int, rows: int, updates: list[tuple[int, int, int]], fold_share: float
) -> None:
    """Random updates (rows removed, rows given new vectors, rows added), each saved and loaded
    back: the index holds exactly the table's rows, probing every list finds the exact top-k, and
    the base file is not touched unless the delta was folded into it."""
    rng = np.random.default_rng(seed)
    table = dict(zip([f"r{i}" for i in range(rows)], _unit(rng, rows), strict=True))
    folds: list[int] = []
    fold = ann_update._folded
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(ann_update, "FOLD_SHARE", fold_share)
        patch.setattr(ann_update, "RETRAIN_SHARE", 100.0)  # re-training is another test's
        patch.setattr(ann_update, "_folded", lambda index: folds.append(1) or fold(index))
        path = Path(folder) / ann_file("fact_vectors")
        ann.save(path, ann.build(np.stack(list(table.values())), list(table)))
        for number, (removing, replacing, adding) in enumerate(updates):
            held = list(table)
            removed = rng.choice(held, min(removing, len(held) - 20), replace=False).tolist()
            gone = set(removed)
            kept = [i for i in held if i not in gone]
            replaced = rng.choice(kept, min(replacing, len(kept)), replace=False).tolist()
            new = [f"n{number}.{n}" for n in range(adding)]
            added = dict(zip(replaced + new, _unit(rng, len(replaced) + len(new)), strict=True))
            table = {i: table[i] for i in kept} | added
            ids = rng.permutation(list(table)).tolist()  # a rewritten table may reorder its rows
            before, folded = _base_state(path), len(folds)
            previous = ann.load_previous(path)
            assert previous is not None
            found = ann_update.updated(previous, ids, removed, added)
            assert found is not None
            ann.save(path, found)
            folded = len(folds) > folded
            if fold_share == 0.0 and (added or removed):
                assert folded  # any change passes a zero share
            if not folded:
                assert _base_state(path) == before  # only the delta and the .json were written
            else:
                assert not ann_delta.path_of(path).exists()  # folded in: the base alone
            loaded = ann.load(path, ids)
            assert loaded is not None and len(loaded) == len(ids)
            loaded.index.nprobe = loaded.lists  # every list probed: the search is exact
            matrix = np.stack([table[i] for i in ids])
            key_row = {int(key): row for row, key in enumerate(ann.row_keys(ids))}
            query = _unit(rng, 1)[0]
            everything, _ = loaded.search(query, len(ids))
            assert sorted(everything.tolist()) == sorted(key_row)  # each held row once, none other
            for k in (1, 5, 25):
                keys, scores = loaded.search(query, k)
                exact = np.sort(matrix @ query)[::-1][:k]
                assert scores == pytest.approx(exact, abs=1e-5)  # the exact top-k, best first
                truth = [float(matrix[key_row[int(key)]] @ query) for key in keys]
                assert scores == pytest.approx(truth, abs=1e-5)  # each row's own cosine


class _Killed(Exception):
    """The process killed at this point of `ann.save`."""


@pytest.mark.parametrize("fold", [False, True])
def test_an_update_killed_before_its_json_leaves_no_index_rather_than_a_wrong_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fold: bool
) -> None:
    matrix = _clustered(2_000, seed=11)
    ids = [f"r{i}" for i in range(len(matrix))]
    path = tmp_path / ann_file("fact_vectors")
    ann.save(path, ann.build(matrix, ids))
    changed = dict(zip(ids[:10], _clustered(10, seed=12), strict=True))  # the same rows, new vectors
    built = ann.load_previous(path)
    assert built is not None
    first = ann_update.updated(built, ids, [], changed)
    assert first is not None and first.delta.size == 10
    ann.save(path, first)
    # One row out, one in: the same count of rows, so only the delta's token tells them apart.
    second = [*ids[:10], *ids[11:], "n0"]
    monkeypatch.setattr(ann_update, "FOLD_SHARE", 0.0 if fold else 1.0)
    previous = ann.load_previous(path)
    assert previous is not None
    found = ann_update.updated(previous, second, ["r10"], {"n0": matrix[10]})
    assert found is not None and (found.source is None) == fold

    def killed(_: object) -> str:
        raise _Killed

    with monkeypatch.context() as patch:
        patch.setattr(ann, "json", SimpleNamespace(dumps=killed, loads=json.loads))
        with pytest.raises(_Killed):
            ann.save(path, found)
    assert ann.load(path, ids) is None and ann.lists_holding(path, ids) is None
    assert ann.load(path, second) is None and ann.load_previous(path) is None  # re-trained next
    ann.remove(path)
    assert list(path.parent.iterdir()) == []
