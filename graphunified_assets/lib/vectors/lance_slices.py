"""Updating a LanceDB vector table by the rows that changed instead of rewriting all of it.

Adding one document to the 12.6K-passage index changes a few dozen of the 316K relationship rows
and a few hundred of the 100K report points, yet each update recomposed every row, looked every
text up in the embedding cache and rewrote every table. Here the rows a table should hold, as
(key, text), are compared with the stored ones, column by column in Arrow: a row whose key and
text are stored already keeps its stored vector; the others are computed; the change is applied
as one delete of the stale keys and one append of the new rows.

The text stands for everything a vector is computed from (with the model, checked here, and the
composition settings, which the caller compares and answers with a full rewrite when they
changed). A crash between the delete and the append cannot reach a reader: every Lance commit is
atomic and readers read the version their published generation pinned; the next update finds the
missing rows by the same comparison and writes them. Each update appends one small fragment and
marks deleted rows. LanceDB's ``optimize`` (run by ``release_unused_versions`` at publish) compacts
by rewriting the table whole, 0.5 GB for the relationships, so a publish runs it on a table of
appended slices only once it holds more than ``COMPACT_FRAGMENTS`` fragments (``optimize_due``);
versions released meanwhile wait for it (a slice's own files are small).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Above this share of rows changed, one rewrite costs less than a delete plus append and leaves
# one fragment.
REWRITE_SHARE = 0.5
_SEPARATOR = "\x1f"  # between key and text in the comparison: in neither
_IN_LIST = 2_000  # keys per delete or lookup predicate
_FILTERED_KEYS = 4 * _IN_LIST
COMPACT_FRAGMENTS = 8


@dataclass(frozen=True)
class SliceChange:
    """What an update writes: ``compute`` (positions in the wanted rows) get new vectors,
    ``stale`` stored keys are deleted first; ``kept`` rows keep their stored vectors;
    ``compared``: the wanted texts the plan compared with stored ones."""

    compute: np.ndarray
    stale: list[Any]
    kept: int
    compared: int


def stored_rows(db: Any, name: str, columns: list[str]) -> pa.Table | None:
    """``columns`` of LanceDB table ``name`` (no vectors unless asked), or None when it is absent
    or unreadable: a damaged table is rewritten whole, as every update did before slices."""
    if name not in db.table_names(limit=None):
        return None
    try:
        return stored_columns(db, name, columns)
    except Exception:  # lance raises several error types for missing or damaged files
        return None


def stored_columns(db: Any, name: str, columns: list[str]) -> pa.Table:
    """Only ``columns`` of LanceDB table ``name``: ``to_arrow()`` reads every vector too (the 316K
    relationship vectors alone are 1.4 s of a 12.6K-home update's checks, their model column 0.14 s)."""
    return db.open_table(name).search().select(columns).limit(None).to_arrow()


def plan_change(
    keys: pa.Array | pa.ChunkedArray,
    texts: pa.Array | pa.ChunkedArray,
    stored: pa.Table | None,
    *,
    key: str,
    model: str,
) -> SliceChange | None:
    """The slice an update writes, or None when the whole table is rewritten: nothing stored, a
    stored row of another model, or most rows changed. Keys that repeat (a fact stated twice under
    one id) are compared by all their texts: a key whose texts changed is deleted and written whole."""
    if stored is None or stored.num_rows == 0 or len(keys) == 0:
        return None
    if pc.any(pc.not_equal(stored.column("model"), model)).as_py():
        return None
    stored_keys = stored.column(key)
    if (matched := _matched(keys, stored_keys)) is not None:
        in_stored, in_wanted = matched
        reused = _held(texts, stored.column("text"), in_stored)
        gone = ~_held(stored.column("text"), texts, in_wanted)  # or its text changed
        stale = stored_keys.filter(pa.array(gone)).to_pylist()
    else:
        wanted_keys, wanted_texts = _grouped(keys, texts)
        stored_keys, stored_texts = _grouped(stored.column(key), stored.column("text"))
        wanted, present = _pairs(wanted_keys, wanted_texts), _pairs(stored_keys, stored_texts)
        changed = wanted_keys.filter(pc.invert(pc.is_in(wanted, value_set=present)))
        reused = pc.invert(pc.is_in(keys, value_set=changed)).to_numpy(zero_copy_only=False)
        stale = stored_keys.filter(pc.invert(pc.is_in(present, value_set=wanted))).to_pylist()
    compute = np.flatnonzero(~reused)
    if len(compute) > REWRITE_SHARE * len(keys):
        return None
    return SliceChange(compute=compute, stale=stale, kept=int(reused.sum()), compared=len(keys))


def plan_recent_change(
    db: Any,
    name: str,
    keys: pa.Array | pa.ChunkedArray,
    recent: np.ndarray,
    texts_of: Callable[[np.ndarray], pa.Array | pa.ChunkedArray],
    *,
    key: str,
    whole: Callable[[], SliceChange | None],
) -> SliceChange | None:
    """`plan_change` when only the ``recent`` rows (a mask) can differ from what is stored: the
    others are known stored as they are, so only their keys are checked (a row may have gone).
    The recent rows' texts (``texts_of(positions)``) are compared with the stored texts of their
    keys alone. ``whole()`` plans it the full way when a key repeats. The caller vouches that the
    stored rows are of this model (`graph_vectors` knows it from its manifest)."""
    stored = stored_rows(db, name, [key])
    if stored is None or stored.num_rows == 0 or len(keys) == 0:
        return None
    stored_keys = stored.column(key)
    if (matched := _matched(keys, stored_keys)) is None:
        return whole()
    in_stored, in_wanted = matched
    check = np.flatnonzero(recent & (in_stored >= 0))
    wanted_texts = pc.fill_null(texts_of(check), "")
    stored_texts = _stored_texts(db, name, key, _take(keys, check))
    changed = check[~pc.equal(wanted_texts, stored_texts).to_numpy(zero_copy_only=False)]
    compute = np.union1d(np.flatnonzero(in_stored < 0), changed)
    if len(compute) > REWRITE_SHARE * len(keys):
        return None
    stale = _take(stored_keys, np.flatnonzero(in_wanted < 0)).to_pylist() + _take(keys, changed).to_pylist()
    return SliceChange(compute=compute, stale=stale, kept=len(keys) - len(compute), compared=len(check))


def _stored_texts(db: Any, name: str, key: str, keys: pa.Array) -> pa.Array:
    """The stored text of each of ``keys`` (each stored once), in their order: a filter per
    ``_IN_LIST`` keys, 0.06 s for 2.3K of the 316K relationships where reading every stored text
    took 0.37 s."""
    if not len(keys):
        return pa.array([], pa.string())
    if len(keys) > _FILTERED_KEYS:  # each filter scans the keys: past this, read every text once
        stored = stored_columns(db, name, [key, "text"])
    else:
        table = db.open_table(name)
        values = keys.to_pylist()
        stored = pa.concat_tables(
            table.search()
            .where(f"{key} IN ({', '.join(_literal(v) for v in values[start : start + _IN_LIST])})")
            .select([key, "text"])
            .limit(None)
            .to_arrow()
            for start in range(0, len(values), _IN_LIST)
        )
    rows, _ = _matched(keys, stored.column(key)) or (None, None)
    if rows is None or (rows < 0).any():
        raise ValueError(f"{name}: a stored key was not found again")  # `_matched` said it is stored
    return pc.fill_null(stored.column("text"), "").take(pa.array(rows))


def _take(values: pa.Array | pa.ChunkedArray, positions: np.ndarray) -> pa.Array:
    taken = values.take(pa.array(positions, pa.int64()))
    return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken


def apply_change(table: Any, key: str, stale: list[Any], rows: pa.Table | pa.RecordBatch | None) -> None:
    """Deletes the ``stale`` keys, then appends ``rows`` (each a new Lance version)."""
    for start in range(0, len(stale), _IN_LIST):
        table.delete(f"{key} IN ({', '.join(_literal(v) for v in stale[start : start + _IN_LIST])})")
    if rows is not None and rows.num_rows:
        table.add(rows)


def rewrite(table: Any, name: str, batches: Iterator[pa.RecordBatch]) -> bool:
    """Streams ``batches`` into one new version of LanceDB table ``name`` of connection ``table``
    (what a rewrite writes, staged shard by shard), holding a batch at a time; False when they
    hold no rows (nothing is written)."""
    first = next((batch for batch in batches if batch.num_rows), None)
    if first is None:
        return False

    def rest() -> Iterator[pa.RecordBatch]:
        yield first
        yield from batches

    table.create_table(name, data=pa.RecordBatchReader.from_batches(first.schema, rest()), mode="overwrite")
    return True


def vector_matrix(rows: pa.Table | pa.RecordBatch) -> np.ndarray:
    """The ``vector`` column of stored rows as a (rows, dimension) array."""
    vectors = rows.column("vector")
    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks()
    return vectors.values.to_numpy(zero_copy_only=False).reshape(len(vectors), vectors.type.list_size)


def _pairs(keys: pa.Array | pa.ChunkedArray, texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    strings = pc.cast(keys, pa.string()) if not pa.types.is_string(keys.type) else keys
    return pc.binary_join_element_wise(strings, pc.fill_null(texts, ""), _SEPARATOR)


def _matched(
    keys: pa.Array | pa.ChunkedArray, other: pa.Array | pa.ChunkedArray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(each key's row in ``other``, each of ``other``'s rows in ``keys``; -1: none), or None
    when either repeats a key. Both sides are coded by one dictionary encoding of their keys
    together: a hash lookup each way and a distinct count of each took 0.5 s of every update's
    plan at 316K relationships."""
    if other.type != keys.type:
        keys, other = pc.cast(keys, pa.string()), pc.cast(other, pa.string())
    chunks = [*_chunks(keys), *_chunks(other)]
    encoded = pa.chunked_array(chunks, keys.type).combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    mine, theirs = codes[: len(keys)], codes[len(keys) :]
    size = len(encoded.dictionary)
    if (
        np.bincount(mine, minlength=size).max(initial=0) > 1
        or np.bincount(theirs, minlength=size).max(initial=0) > 1
    ):
        return None
    row_of_mine, row_of_theirs = np.full(size, -1), np.full(size, -1)
    row_of_mine[mine], row_of_theirs[theirs] = np.arange(len(mine)), np.arange(len(theirs))
    return row_of_theirs[mine], row_of_mine[theirs]


def _chunks(values: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return values.chunks if isinstance(values, pa.ChunkedArray) else [values]


def _held(texts: Any, other_texts: Any, rows: np.ndarray) -> np.ndarray:
    """Per text, whether the other side's row ``rows`` (-1: none) holds the same text."""
    theirs = pc.fill_null(other_texts, "").take(pa.array(rows, mask=rows < 0))
    return pc.fill_null(pc.equal(pc.fill_null(texts, ""), theirs), False).to_numpy(zero_copy_only=False)


def _grouped(
    keys: pa.Array | pa.ChunkedArray, texts: pa.Array | pa.ChunkedArray
) -> tuple[pa.Array, pa.Array]:
    """(each key once, all its texts sorted and joined)."""
    table = pa.table({"key": keys, "text": pc.fill_null(texts, "")})
    table = table.sort_by([("key", "ascending"), ("text", "ascending")])
    grouped = table.group_by("key", use_threads=False).aggregate([("text", "list")])
    joined = pc.binary_join(grouped.column("text_list"), _SEPARATOR)
    return grouped.column("key").combine_chunks(), joined.combine_chunks()


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(int(value))


class StoredVectors:
    """The vectors a LanceDB table holds, by text: a rewrite of a table whose rows moved (community
    numbers shift when a document joins) reuses them instead of embedding or fetching each text."""

    def __init__(self, db: Any, name: str, model: str) -> None:
        stored = stored_rows(db, name, ["text", "vector", "model"])
        if stored is None or pc.any(pc.not_equal(stored.column("model"), model)).as_py():
            stored = None
        self.texts = stored.column("text") if stored is not None else pa.chunked_array([], pa.string())
        self.matrix = vector_matrix(stored) if stored is not None else None
        self.reused = 0

    def embedding(self, embed: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
        """``embed`` that returns a stored text's vector without calling ``embed`` for it."""

        def reusing(texts: list[str]) -> np.ndarray:
            if self.matrix is None or not texts:
                return embed(texts)
            positions = pc.index_in(pa.array(texts, pa.string()), value_set=self.texts)
            found = positions.is_valid().to_numpy(zero_copy_only=False)
            vectors = np.empty((len(texts), self.matrix.shape[1]), np.float32)
            rows = positions.filter(positions.is_valid()).to_numpy(zero_copy_only=False)
            vectors[found] = self.matrix[rows]
            missing = np.flatnonzero(~found)
            if len(missing):
                vectors[missing] = np.asarray(embed([texts[i] for i in missing]), np.float32)
            self.reused += int(found.sum())
            return vectors

        return reusing


def optimize_due(db: Any, folder: Path, name: str) -> bool:
    """Whether publishing should run LanceDB's ``optimize`` on table ``name`` (under ``folder``):
    with one fragment it only releases old versions (cheap), with a few small appended ones it
    would rewrite the table to merge them, so it waits for more than ``COMPACT_FRAGMENTS``."""
    if not (folder / f"{name}.lance").is_dir():
        return True  # not on local disk: as before
    try:
        fragments = db.open_table(name).stats()["fragment_stats"]["num_fragments"]
    except Exception:  # unreadable: leave it to optimize, which reports and retries
        return True
    return fragments <= 1 or fragments > COMPACT_FRAGMENTS
