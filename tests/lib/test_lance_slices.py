"""An update writes only the changed rows of a LanceDB vector table, and the table it leaves
holds what a full rewrite would: same ids, texts and vectors."""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest.mock import patch

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.vectors import lance_slices
from graphunified_assets.lib.vectors.lance_slices import (
    COMPACT_FRAGMENTS,
    SliceChange,
    StoredVectors,
    apply_change,
    optimize_due,
    plan_change,
    plan_recent_change,
    stored_columns,
    stored_rows,
)

DIMENSION = 4


def _vector(text: str) -> np.ndarray:
    """A deterministic vector per text, as the embedding cache gives one."""
    return np.random.default_rng(abs(hash(text)) % 2**32).random(DIMENSION, dtype=np.float32)


def _rows(items: list[tuple[str, str]], model: str = "m") -> pa.Table:
    vectors = (
        np.stack([_vector(text) for _, text in items]) if items else np.zeros((0, DIMENSION), np.float32)
    )
    return pa.table(
        {
            "id": pa.array([i for i, _ in items], pa.string()),
            "text": pa.array([t for _, t in items], pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), DIMENSION),
            "model": pa.array([model] * len(items), pa.string()),
        }
    )


def _update(db: lancedb.DBConnection, wanted: list[tuple[str, str]]) -> tuple[int, int]:
    """Applies ``wanted`` to table "t" by slices → (rows computed, rows deleted)."""
    keys = pa.array([i for i, _ in wanted], pa.string())
    texts = pa.array([t for _, t in wanted], pa.string())
    change = plan_change(keys, texts, stored_rows(db, "t", ["id", "text", "model"]), key="id", model="m")
    assert change is not None
    apply_change(db.open_table("t"), "id", change.stale, _rows([wanted[i] for i in change.compute]))
    return len(change.compute), len(change.stale)


def _by_id(table: pa.Table) -> dict[str, tuple[str, list[float]]]:
    return {row["id"]: (row["text"], row["vector"]) for row in table.to_pylist()}


def test_an_update_writes_only_new_and_changed_rows_and_equals_a_rewrite(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    before = [(f"r{n}", f"text {n}") for n in range(20)]
    db.create_table("t", data=_rows(before))
    version = db.open_table("t").version
    # r3 changes its text, r5 and r6 are removed, r20 is new.
    wanted = [(i, "text 3 changed" if i == "r3" else t) for i, t in before if i not in {"r5", "r6"}]
    wanted.append(("r20", "text 20"))

    computed, deleted = _update(db, wanted)

    assert (computed, deleted) == (2, 3)  # r3 and r20 computed; r3, r5, r6 deleted
    table = db.open_table("t")
    assert table.version == version + 2  # one delete, one append: no rewrite
    rewrite = db.create_table("full", data=_rows(wanted))
    assert _by_id(table.to_arrow()) == _by_id(rewrite.to_arrow())  # vectors included


def test_a_crash_between_delete_and_append_is_repaired_by_the_next_update(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    before = [(f"r{n}", f"text {n}") for n in range(10)]
    db.create_table("t", data=_rows(before))
    wanted = [*before[:9], ("r9", "text 9 changed")]
    change = plan_change(
        pa.array([i for i, _ in wanted]),
        pa.array([t for _, t in wanted]),
        stored_rows(db, "t", ["id", "text", "model"]),
        key="id",
        model="m",
    )
    assert change is not None
    apply_change(db.open_table("t"), "id", change.stale, None)  # the append never happened
    assert _update(db, wanted) == (1, 0)  # the missing row is found and written
    assert _by_id(db.open_table("t").to_arrow()) == _by_id(_rows(wanted))


def test_the_whole_table_is_rewritten_for_another_model_most_rows_changed_or_nothing_stored(
    tmp_path: Path,
) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    rows = [(f"r{n}", f"text {n}") for n in range(10)]
    keys, texts = pa.array([i for i, _ in rows]), pa.array([t for _, t in rows])
    assert (
        plan_change(keys, texts, stored_rows(db, "t", ["id", "text", "model"]), key="id", model="m") is None
    )
    db.create_table("t", data=_rows(rows, model="other"))
    stored = stored_rows(db, "t", ["id", "text", "model"])
    assert plan_change(keys, texts, stored, key="id", model="m") is None
    db.create_table("t", data=_rows(rows), mode="overwrite")
    changed = pa.array([f"{t} changed" if n < 6 else t for n, t in enumerate(texts.to_pylist())])
    stored = stored_rows(db, "t", ["id", "text", "model"])
    assert plan_change(keys, changed, stored, key="id", model="m") is None
    unchanged = plan_change(keys, texts, stored, key="id", model="m")
    assert unchanged is not None and not len(unchanged.compute) and not unchanged.stale


def test_keys_with_quotes_are_deleted(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    db.create_table("t", data=_rows([("it's", "a"), ("b", "b"), ("c", "c")]))
    assert _update(db, [("b", "b"), ("c", "c")]) == (0, 1)
    assert sorted(db.open_table("t").to_arrow().column("id").to_pylist()) == ["b", "c"]


def test_a_repeated_key_is_compared_by_all_its_texts_and_rewritten_whole(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    kept = [(f"k{n}", f"kept {n}") for n in range(6)]
    before = [("f1", "stated once"), ("f2", "stated twice"), ("f2", "stated twice"), *kept]
    db.create_table("t", data=_rows(before))
    wanted = [("f2", "stated twice"), ("f2", "stated twice, changed"), *kept, ("f4", "new")]
    assert _update(db, wanted) == (3, 2)  # both rows of f2 and the new f4; f1 and f2 deleted
    assert sorted(db.open_table("t").to_arrow().select(["id", "text"]).to_pylist(), key=str) == sorted(
        _rows(wanted).select(["id", "text"]).to_pylist(), key=str
    )


def test_stored_vectors_are_reused_by_text_and_only_new_texts_embedded(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    db.create_table("t", data=_rows([("a", "alpha"), ("b", "beta")]))
    asked: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        asked.append(texts)
        return np.stack([_vector(t) for t in texts])

    stored = StoredVectors(db, "t", "m")
    vectors = stored.embedding(embed)(["beta", "gamma", "alpha"])
    assert asked == [["gamma"]] and stored.reused == 2
    assert np.array_equal(vectors, np.stack([_vector(t) for t in ("beta", "gamma", "alpha")]))
    assert StoredVectors(db, "t", "another model").embedding(embed)(["alpha"]).shape == (1, DIMENSION)
    assert asked[-1] == ["alpha"]  # another model's vectors are never reused


def test_publishing_compacts_appended_slices_only_once_they_add_up(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    db.create_table("t", data=_rows([("a", "alpha")]))
    assert optimize_due(db, tmp_path / "db", "t")  # one fragment: releasing versions is cheap
    for n in range(COMPACT_FRAGMENTS - 1):
        db.open_table("t").add(_rows([(f"n{n}", f"new {n}")]))
    assert not optimize_due(db, tmp_path / "db", "t")  # a few slices: no whole-table rewrite yet
    db.open_table("t").add(_rows([("last", "last")]))
    db.open_table("t").add(_rows([("more", "more")]))
    assert optimize_due(db, tmp_path / "db", "t")


def test_stored_columns_reads_the_named_columns_of_every_row(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "lancedb"))
    vectors = np.arange(3000 * 8, dtype=np.float32).reshape(3000, 8)
    rows = pa.table(
        {
            "id": [f"r{i}" for i in range(3000)],
            "model": ["m"] * 2999 + ["other"],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8),
        }
    )
    db.create_table("relationship_vectors", rows)
    models = stored_columns(db, "relationship_vectors", ["model"])
    assert models.column_names == ["model"]  # the vectors are not read
    assert models.num_rows == 3000 and set(models.column("model").to_pylist()) == {"m", "other"}
    ids = stored_columns(db, "relationship_vectors", ["id"]).column("id").to_pylist()
    assert sorted(ids) == sorted(rows.column("id").to_pylist())
    db.create_table("empty", rows.schema.empty_table())
    assert stored_columns(db, "empty", ["model"]).num_rows == 0


def _compared(
    present: dict[int, str | None], wanted: dict[int, str | None], key_type: pa.DataType
) -> tuple[pa.Table, pa.Array, pa.Array]:
    """The stored rows (id, text, model "m") and the wanted keys and texts, keys of ``key_type``."""

    def column(values: list[int]) -> pa.Array:
        return pc.cast(pa.array(values, pa.int64()), key_type)

    stored = pa.table(
        {
            "id": column(list(present)),
            "text": pa.array(list(present.values()), pa.string()),
            "model": pa.array(["m"] * len(present), pa.string()),
        }
    )
    return stored, column(list(wanted)), pa.array(list(wanted.values()), pa.string())


texts_or_none = st.one_of(st.none(), st.sampled_from(["", "a", "b", "a\x1fb"]))


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(0, 30), texts_or_none, min_size=1),
    st.dictionaries(st.integers(0, 30), texts_or_none, min_size=1),
    st.sampled_from([pa.string(), pa.int64()]),
)
def test_the_change_of_unique_keys_is_what_comparing_each_row_gives(
    wanted: dict[int, str | None], present: dict[int, str | None], key_type: pa.DataType
) -> None:
    """Computed: the wanted rows the store does not hold with the same text (a missing text reads
    as empty); stale: the stored rows no wanted row holds, changed texts included."""

    stored, keys, texts = _compared(present, wanted, key_type)
    with patch.object(lance_slices, "REWRITE_SHARE", 1.0):
        change = plan_change(keys, texts, stored, key="id", model="m")
    assert change is not None

    def same(key: int, text: str | None, other: dict[int, str | None]) -> bool:
        return key in other and (other[key] or "") == (text or "")

    assert change.compute.tolist() == [
        i for i, (k, t) in enumerate(wanted.items()) if not same(k, t, present)
    ]
    expected_stale = [k for k, t in present.items() if not same(k, t, wanted)]
    assert change.stale == [str(k) if key_type == pa.string() else k for k in expected_stale]


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.integers(0, 30), texts_or_none, min_size=1),
    st.dictionaries(st.integers(0, 30), texts_or_none, min_size=1),
    st.sets(st.integers(0, 30)),
    st.sampled_from([pa.string(), pa.int64()]),
)
def test_comparing_only_the_recent_rows_plans_what_comparing_every_row_plans(
    wanted: dict[int, str | None], present: dict[int, str | None], recent: set[int], key_type: pa.DataType
) -> None:
    """Rows not recent are stored as they are (the caller's promise) or missing (a crash): the
    plan that composes and compares only the recent rows' texts equals `plan_change`'s."""
    present = {k: wanted[k] if k in wanted and k not in recent else t for k, t in present.items()}

    stored, keys, texts = _compared(present, wanted, key_type)
    mask = np.array([k in recent for k in wanted], bool)
    composed: list[int] = []

    def texts_of(positions: np.ndarray) -> pa.Array:
        composed.extend(positions.tolist())
        return texts.take(pa.array(positions, pa.int64()))

    with tempfile.TemporaryDirectory() as folder, patch.object(lance_slices, "REWRITE_SHARE", 1.0):
        db = lancedb.connect(folder)
        db.create_table("t", data=stored)
        change = plan_recent_change(db, "t", keys, mask, texts_of, key="id", whole=lambda: None)
        full = plan_change(keys, texts, stored, key="id", model="m")
    assert change is not None and full is not None
    assert change.compute.tolist() == full.compute.tolist()
    assert sorted(change.stale) == sorted(full.stale)
    # Only the recent rows the store holds were composed and compared.
    assert sorted(composed) == [i for i, k in enumerate(wanted) if k in recent and k in present]
    assert change.compared == len(composed)


def test_a_repeated_key_is_planned_by_comparing_every_row(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    db.create_table("t", data=_rows([("f1", "a"), ("f2", "b")]))
    keys = pa.array(["f1", "f1", "f2"])  # a fact stated twice under one id

    def texts_of(positions: np.ndarray) -> pa.Array:
        raise AssertionError("recent rows composed for repeated keys")

    whole = SliceChange(np.array([0, 1]), ["f1"], kept=1, compared=3)
    found = plan_recent_change(db, "t", keys, np.ones(3, bool), texts_of, key="id", whole=lambda: whole)
    assert found is whole
