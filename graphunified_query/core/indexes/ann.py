"""Approximate search for the large vector tables: faiss IVF-Flat over inner products (cosine).

An exact scan reads the whole matrix per query: at the 12.6K-passage scale the relationship
table alone is ~300K x 384 floats (~0.5 GB), ~60 ms a query on two cores. faiss splits the rows
into 4*sqrt(n) lists by k-means (trained on a sample) and a query scans the rows of its nearest
fifth of them. It replaced hand-written numpy inverted lists of the same shape, which answered in
16.8 ms where faiss answered in 2.2 ms at equal recall on 100K vectors (`bench/ann.py`). IVF, not
HNSW: an IVF index removes and adds rows by id, so an update never rebuilds it
(`ann_update.py`), and faiss's HNSW cannot remove. Tables under ``MIN_ROWS`` stay exact (numpy).

Rows are keyed in the index by a 63-bit hash of their string id (`row_keys`), so a row keeps its
key whatever its position in the table. A table's index is three files in ``ann/``:

- ``<table>.faiss``, the base, in faiss's own format (memory-mapped read-only by readers and by
  updates), written only when trained or when the delta is folded into it;
- ``<table>.delta.npz``, what updates changed since (`ann_delta.py`), absent while empty;
- ``<table>.json``, written last: the digest of the ids base and delta hold (the query side uses
  the index only while they are the table's), the delta it goes with, the base's row count and
  the row count it was trained at.

A search scans the base without the rows the delta removed, and the delta's rows exactly.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import faiss
import numpy as np

from graphunified_query.core.indexes import ann_delta
from graphunified_query.core.indexes.ann_delta import Delta
from graphunified_query.core.stores.errors import StoreDamaged

MIN_ROWS = 50_000
LISTS_PER_SQRT_ROWS = 4
# Probe 1/5 of the lists: on 2Wiki's 16.5K MiniLM relationship vectors (515 lists, 200 held-out
# rows as queries) 1/10 found 99.80 % of the exact top-10 and 1/5 99.95 %, what the hand-written
# lists found at 1/10, at the same ~1.3-1.5 ms (bench/ann.py).
PROBE_SHARE = 5
# faiss's k-means wants >= 39 rows a list (it warns below: tables under 25.6K rows, never at
# MIN_ROWS); a sample bounds the build's memory (87.6K of 300K rows at 2,191 lists).
TRAINING_POINTS_PER_LIST = 40
OLD_FORMAT = "ivf"  # the hand-written lists' folder (`ivf/<table>.npz`), before faiss
_KEY_MASK = (1 << 63) - 1


@dataclass(frozen=True)
class AnnIndex:
    index: faiss.IndexIVFFlat  # the base
    ids_digest: str
    trained_rows: int
    delta: Delta  # what changed since the base
    source: Path | None = None  # the file the base was read from, as it is there; None: in memory

    def __len__(self) -> int:
        return int(self.index.ntotal) - len(self.delta.removed) + len(self.delta.keys)

    @property
    def lists(self) -> int:
        return int(self.index.nlist)

    @cached_property
    def _excluded(self) -> faiss.IDSelector | None:
        """The base rows a search skips (built once: its hash set costs 2-4 ms at 15.8K keys)."""
        if not len(self.delta.removed):
            return None
        return faiss.IDSelectorNot(faiss.IDSelectorBatch(self.delta.removed))

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(row keys, cosines) of the about-k nearest rows, best first; fewer when the probed lists
        and the delta hold fewer (faiss pads with key -1, dropped here)."""
        vector = np.ascontiguousarray(query, np.float32).reshape(1, -1)
        params = None
        if self._excluded is not None:
            params = faiss.SearchParametersIVF()
            params.sel, params.nprobe = self._excluded, self.index.nprobe
        scores, keys = self.index.search(vector, k, params=params)
        found = keys[0] >= 0
        keys, scores = keys[0][found], scores[0][found]
        if not len(self.delta.keys):
            return keys, scores
        added_keys, added_scores = self.delta.nearest(vector[0], k)
        keys, scores = np.concatenate([keys, added_keys]), np.concatenate([scores, added_scores])
        best = np.argsort(-scores, kind="stable")[:k]
        return keys[best], scores[best]


def row_keys(ids: Iterable[str]) -> np.ndarray:
    """Each id's key in the index: the first 63 bits of its BLAKE2b digest (non-negative int64)."""
    return np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "little") & _KEY_MASK
            for i in ids
        ),
        np.int64,
    )


def ids_digest(ids: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(ids).encode()).hexdigest()


def lists_for(count: int) -> int:
    return max(1, min(round(LISTS_PER_SQRT_ROWS * count**0.5), count))  # k-means needs a row a list


def sample_positions(count: int, *, seed: int = 0) -> np.ndarray:
    """The sorted row positions a table of ``count`` rows trains its lists on."""
    size = min(count, TRAINING_POINTS_PER_LIST * lists_for(count))
    return np.sort(np.random.default_rng(seed).choice(count, size, replace=False))


def build(matrix: np.ndarray, ids: Sequence[str], *, seed: int = 0) -> AnnIndex:
    """The index of ``matrix`` (unit rows in ``ids`` order), held whole (tests, benchmarks)."""
    step = 65_536

    def parts() -> Iterator[tuple[Sequence[str], np.ndarray]]:
        for start in range(0, len(ids), step):
            yield ids[start : start + step], matrix[start : start + step]

    return build_from(matrix[sample_positions(len(ids), seed=seed)], parts, ids, seed=seed)


def build_from(
    sample: np.ndarray,
    parts: Callable[[], Iterable[tuple[Sequence[str], np.ndarray]]],
    ids: Sequence[str],
    *,
    seed: int = 0,
) -> AnnIndex:
    """Lists trained on ``sample``, then every row put in by its key, a part (ids, vectors) at a
    time: the build never holds the table's vectors twice (the index holds them once).

    ``parts()`` is read twice: first to count each list's rows, then to fill the lists, each
    allocated once at its size. faiss's own ``add`` grows a list by doubling: 808 MB for the
    462 MB of the 12.6K build's relationship vectors, against 451 MB here."""
    lists = lists_for(len(ids))
    index = faiss.IndexIVFFlat(
        faiss.IndexFlatIP(sample.shape[1]), sample.shape[1], lists, faiss.METRIC_INNER_PRODUCT
    )
    index.cp.seed = seed
    index.cp.spherical = True  # unit centroids: the lists of cosine similarity, as the rows are unit
    index.train(np.ascontiguousarray(sample, np.float32))
    index.nprobe = max(1, -(-lists // PROBE_SHARE))
    # The list each row goes to, as IndexIVF.add assigns it (the nearest centroid).
    assigned, keyed = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for part_ids, vectors in parts():
        assigned.append(index.quantizer.assign(_rows(vectors), 1).ravel())
        keyed.append(row_keys(part_ids))
    listed, part_keys = np.concatenate(assigned), np.concatenate(keyed)
    if len(listed) != len(ids):
        raise ValueError(f"{len(listed)} vectors given for {len(ids)} rows")
    _fill(index, listed, part_keys, parts())
    keys = row_keys(ids)
    if len(np.unique(keys)) != len(keys):
        repeated = [i for i, n in Counter(ids).items() if n > 1]
        if repeated:  # the table's fault, not a hash collision (~1e-8 at 300K rows)
            raise ValueError(f"row id {repeated[0]!r} appears more than once: a table's ids must be unique")
        raise ValueError("two row ids hash to one key")
    return AnnIndex(index, ids_digest(ids), len(ids), Delta.empty(index.d))


def _fill(
    index: faiss.IndexIVFFlat,
    listed: np.ndarray,
    keys: np.ndarray,
    parts: Iterable[tuple[Sequence[str], np.ndarray]],
) -> None:
    """Puts row ``n`` of ``parts`` (key ``keys[n]``) in list ``listed[n]``: each list sized once,
    then written in place, in the order ``add`` would have appended them."""
    assert index.invlists is not None  # a trained IndexIVFFlat owns its lists
    invlists = faiss.downcast_InvertedLists(index.invlists)
    sizes = np.bincount(listed, minlength=index.nlist)
    for number in np.flatnonzero(sizes).tolist():
        invlists.resize(number, int(sizes[number]))
    filled = np.zeros(index.nlist, np.int64)
    offset = 0
    for part_ids, vectors in parts:
        rows = _rows(vectors)
        if not len(rows):
            continue
        part = slice(offset, offset + len(rows))
        offset += len(rows)
        if len(part_ids) != len(rows) or not np.array_equal(row_keys(part_ids), keys[part]):
            raise ValueError("the vectors' second reading holds other rows than the first")
        order = np.argsort(listed[part], kind="stable")  # each list's rows together, in part order
        part_lists, part_keys = listed[part][order], np.ascontiguousarray(keys[part][order])
        rows = np.ascontiguousarray(rows[order])
        starts = np.flatnonzero(np.diff(part_lists, prepend=-1)).tolist()
        for start, stop in zip(starts, [*starts[1:], len(rows)], strict=True):
            number, count = int(part_lists[start]), stop - start
            invlists.update_entries(
                number,
                int(filled[number]),
                count,
                faiss.swig_ptr(part_keys[start:stop]),
                faiss.swig_ptr(rows[start:stop].view(np.uint8)),
            )
            filled[number] += count
    if offset != len(listed):
        raise ValueError("the vectors' second reading holds other rows than the first")
    index.ntotal = offset


def _rows(vectors: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(vectors, np.float32)


def save(path: Path, ann: AnnIndex) -> None:
    """The files of ``ann`` at ``path`` (``ann/<table>.faiss``), each replaced atomically: its base
    only when not already there (trained, or folded), its delta, then its ``.json``. A crash
    between them leaves the previous index whole, or files no ``.json`` describes, which readers
    take for no index (exact search) and updates re-train. The table's lists in the old format, if
    any, go (this is the one-time conversion)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta_path, delta_path = _meta_path(path), ann_delta.path_of(path)
    if ann.source != path:
        meta_path.unlink(missing_ok=True)  # the old .json would describe the new base with its delta
        tmp = path.with_name(f".{path.name}.tmp")
        if ann.source is None:
            faiss.write_index(ann.index, str(tmp))
        else:  # a mapped base would be written as a reference to its file
            shutil.copyfile(ann.source, tmp)
        tmp.replace(path)
    token = None if ann.delta.is_empty else ann_delta.write(delta_path, ann.delta)
    meta = {
        "ids_digest": ann.ids_digest,
        "trained_rows": ann.trained_rows,
        "lists": ann.lists,
        "base_rows": int(ann.index.ntotal),
        "delta": token,
    }
    tmp_meta = path.with_name(f".{path.name}.json.tmp")
    tmp_meta.write_text(json.dumps(meta))
    tmp_meta.replace(meta_path)
    if token is None:
        delta_path.unlink(missing_ok=True)  # folded in: the .json names none
    for old in _old_files(path):
        old.unlink(missing_ok=True)


def remove(path: Path) -> None:
    for stale in (_meta_path(path), path, ann_delta.path_of(path), *_old_files(path)):  # .json first
        stale.unlink(missing_ok=True)


def load(path: Path, ids: Sequence[str]) -> AnnIndex | None:
    """The index at ``path`` if it holds exactly these rows, else None (exact search); its base
    memory-mapped (faiss's IO_FLAG_MMAP), so processes serving one home share its pages. An index
    in the old format (the hand-written lists) and none in this one raises `OldIndexFormat`."""
    meta = _meta(path)
    if meta is None:
        if any(old.exists() for old in _old_files(path)):
            raise OldIndexFormat(
                f"{_old_files(path)[0]} is the old inverted-list format, replaced by faiss; "
                "rebuild it with `python -m graphunified_assets index --refresh`."
            )
        return None
    if meta["ids_digest"] != ids_digest(ids):
        return None
    found = _read(path, meta)
    return found if found is not None and len(found) == len(ids) else None


def lists_holding(path: Path, ids: Sequence[str]) -> int | None:
    """The lists of the index at ``path`` if it holds exactly these rows, else None (its ``.json``
    and its delta's token are read)."""
    meta = _meta(path)
    if meta is None or not path.exists() or meta["ids_digest"] != ids_digest(ids):
        return None
    if not ann_delta.holds(ann_delta.path_of(path), meta.get("delta")):
        return None
    return int(meta["lists"])


def load_previous(path: Path) -> AnnIndex | None:
    """The index at ``path`` whatever rows it holds, to be updated (its base memory-mapped); None
    without one, or with files its ``.json`` does not describe."""
    meta = _meta(path)
    if meta is None or not path.exists():
        return None
    return _read(path, meta)


def _read(path: Path, meta: dict) -> AnnIndex | None:
    index = read_base(path)
    if index.ntotal != meta.get("base_rows", index.ntotal):
        return None  # another base than the .json's (its .json predates the delta: no count)
    delta = ann_delta.read(ann_delta.path_of(path), meta.get("delta"), index.d)
    if delta is None:
        return None
    return AnnIndex(index, meta["ids_digest"], int(meta["trained_rows"]), delta, path)


class OldIndexFormat(StoreDamaged):
    """A home indexed before faiss: its lists are rebuilt by `index` (which finds this through
    `published_damage`) or `index --refresh`."""


def read_base(path: Path, *, mapped: bool = True) -> faiss.IndexIVFFlat:
    """The base at ``path``: memory-mapped read-only, or read whole to be changed."""
    # read_index returns the index's own class (IndexIVFFlat); downcast_index would hand back a
    # second proxy of an object the first one frees.
    index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP if mapped else 0)
    if not isinstance(index, faiss.IndexIVFFlat):
        raise ValueError(f"{path} holds a faiss {type(index).__name__}, not an IndexIVFFlat")
    lists = faiss.downcast_InvertedLists(index.invlists) if index.invlists is not None else None
    if isinstance(lists, faiss.OnDiskInvertedLists):  # mapped
        # They start 32 threads per search to touch the probed lists' pages first: at 316K rows
        # that doubled a query, warm (13.9 against 7.3 ms) and from a cold page cache.
        lists.prefetch_nthread = 0
    return index


def _meta_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".faiss") + ".json")


def _meta(path: Path) -> dict | None:
    try:
        return dict(json.loads(_meta_path(path).read_text()))
    except FileNotFoundError:
        return None


def _old_files(path: Path) -> list[Path]:
    """The hand-written lists of the same table: ``ivf/<table>.npz`` and its row assignment."""
    folder = path.parent.parent / OLD_FORMAT
    table = path.name.removesuffix(".faiss")
    return [folder / f"{table}.npz", folder / f"{table}.rows.parquet"]
