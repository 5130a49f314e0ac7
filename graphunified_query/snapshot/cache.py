"""A generation's snapshot as memory-mapped files: a load maps them instead of decoding tables.

Reading a generation the slow way decodes everything into memory: LanceDB's vector columns
(~1 s per 40K vectors on a loaded machine) and compressed Parquet, and the result stays resident. The
first load of a generation writes what the snapshot keeps to ``cache/snapshot/``: each vector
matrix as one contiguous float32 ``.npy`` (in the row order, or the inverted-list order, the
index searches it in) and each table as an uncompressed Arrow IPC file. Every later load of that
generation (a restart, another worker, a reload) maps them: nothing is decoded or copied, the
pages are shared between processes, and only those a query touches become resident.

A file's name is a digest of what it was made from (the generation and its sources), so a new
generation never meets a stale file; a home that cannot be written keeps the data in memory.
The keyed readers below (`mapped_vectors`, `mapped_rows`, `mapped_report_points`) say what each
file is made from; `snapshot_loader` assembles the snapshot from them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
import pyarrow as pa

from graphunified_query.core.artifacts import CHUNK_VECTORS, PPR_FILE, REPORT_POINT_VECTORS, VECTOR_TABLES
from graphunified_query.core.indexes.ann import ids_digest
from graphunified_query.core.indexes.report_points import ReportPoints
from graphunified_query.core.stores.parquet import StoreError
from graphunified_query.snapshot.arrow_rows import ArrowStrings

if TYPE_CHECKING:
    from graphunified_query.core.stores.lance_reader import LanceTables
    from graphunified_query.core.stores.publication import PublishedFiles

SNAPSHOT_CACHE = "snapshot"  # under the home's cache folder: the mapped vector matrices
_NAME = re.compile(r"^g(\d+)-")


def cache_key(*parts: object) -> str:
    return hashlib.sha1("\n".join(str(p) for p in parts).encode()).hexdigest()[:20]


def mapped_matrix(
    folder: Path, generation: int, table: str, key: str, build: Callable[[], tuple[np.ndarray, str]]
) -> tuple[np.ndarray, str]:
    """(matrix, embedding model) of ``table``: the mapped file for ``key``, or ``build()`` written
    there first. ``build`` returns the float32 matrix and the model its vectors came from."""
    path = folder / f"g{generation}-{table}-{key}.npy"
    model = _mapped_model(path)
    if model is not None:
        try:
            return _mapped_array(path), model
        except (OSError, ValueError):
            pass  # a damaged cache file is rebuilt below
    matrix, model = build()
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    try:
        _write(path, lambda handle: np.save(handle, matrix))
        _write_text(path.with_suffix(".json"), json.dumps({"model": model, "shape": list(matrix.shape)}))
    except OSError:  # a read-only home: serve from memory
        return matrix, model
    _prune(folder, generation)
    return _mapped_array(path), model


def mapped_table(
    folder: Path, generation: int, table: str, key: str, build: Callable[[], pa.Table]
) -> pa.Table:
    """Table ``table`` mapped from its Arrow IPC file for ``key``, or ``build()`` written there first."""
    path = folder / f"g{generation}-{table}-{key}.arrow"
    if path.with_suffix(".done").exists():
        try:
            return pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        except (OSError, pa.ArrowInvalid):
            pass  # a damaged cache file is rebuilt below
    built = build().combine_chunks()

    def write(handle: IO[bytes]) -> None:
        with pa.ipc.new_file(handle, built.schema) as writer:
            writer.write_table(built)

    try:
        _write(path, write)
        _write_text(path.with_suffix(".done"), "")
    except OSError:
        return built
    _prune(folder, generation)
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def cache_folder(home: Path) -> Path:
    """Where a home's (or a remote generation's download folder's) mapped files are."""
    return home / "cache" / SNAPSHOT_CACHE


def mapped_columns(
    cache: Path, lance: LanceTables, name: str, order: Callable[[pa.Table], pa.Table] | None = None
) -> pa.Table:
    """Every column of Lance table ``name`` but its vectors, mapped from the snapshot cache;
    ``order`` sorts the rows (once, before they are mapped: the file holds them sorted)."""
    fingerprint = lance.fingerprint(name)
    key = cache_key(fingerprint) if order is None else cache_key(fingerprint, order.__qualname__)

    def build() -> pa.Table:
        rows = lance.scan(name, exclude=("vector",))
        return rows if order is None else order(rows)

    return mapped_table(cache, lance.generation.number, name, key, build)


def mapped_vectors(
    cache: Path, lance: LanceTables, name: str, ids: tuple[str, ...]
) -> tuple[np.ndarray, str]:
    """The table's vectors in ``ids`` order, mapped from the snapshot cache; read from LanceDB and
    written there on a generation's first load."""
    key = cache_key(lance.fingerprint(name), ids_digest(ids), "rows")

    def build() -> tuple[np.ndarray, str]:
        read = lance.scan(name, columns=("id", "vector", "model"))
        return _aligned(ids, read, name, lance.hint), single_model(read, name)

    return mapped_matrix(cache, lance.generation.number, name, key, build)


def mapped_report_points(cache: Path, lance: LanceTables, model: str) -> ReportPoints | None:
    """Global search's precomputed map points, mapped like the other vectors; None for a home
    built before the table (the map embeds the points per query then)."""
    if not lance.generation.lance_exists(REPORT_POINT_VECTORS):
        return None
    columns = mapped_columns(cache, lance, REPORT_POINT_VECTORS)
    if columns.num_rows == 0 or "community" not in columns.column_names:
        return None  # nothing to map, or a table written before it was keyed by community

    def build() -> tuple[np.ndarray, str]:
        read = lance.scan(REPORT_POINT_VECTORS, columns=("id", "vector", "model"))
        if not read.column("id").equals(columns.column("id")):
            raise StoreError(f"{REPORT_POINT_VECTORS} changed while read; rebuild with `{lance.hint}`.")
        return _matrix(read), single_model(read, REPORT_POINT_VECTORS)

    key = cache_key(lance.fingerprint(REPORT_POINT_VECTORS))
    matrix, vector_model = mapped_matrix(cache, lance.generation.number, REPORT_POINT_VECTORS, key, build)
    if vector_model != model:
        raise StoreError(
            f"{REPORT_POINT_VECTORS} was embedded with another model than {CHUNK_VECTORS} ({model}); "
            f"rebuild with `{lance.hint}`."
        )
    return ReportPoints(columns.column("community").to_pylist(), ArrowStrings(columns.column("text")), matrix)


def mapped_rows(
    cache: Path, generation: PublishedFiles, frozen: str | None, name: str, hint: str
) -> pa.Table:
    """A global table, mapped from the snapshot cache for a published (immutable) generation;
    ``frozen`` is its `generation_key` (None: read the files as they are)."""
    if frozen is None:  # the live files of an older home change under the same name
        return generation.read_table(name, hint)
    return mapped_table(
        cache,
        generation.number,
        name,
        cache_key(frozen, name, _file_identity(generation, name)),
        lambda: generation.read_table(name, hint),
    )


def generation_key(generation: PublishedFiles) -> str | None:
    """What tells this generation from another of the same number (a home rebuilt from scratch
    restarts at 1): its Lance versions and its PageRank graph file's identity; None unpublished."""
    if not generation.published:
        return None
    try:
        stat = generation.index_path(PPR_FILE).stat()
    except OSError:
        return None  # reported as damage by the index load
    versions = [generation.lance_version(t) for t in (CHUNK_VECTORS, *VECTOR_TABLES.values())]
    return f"{generation.number}|{versions}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ino}"


def single_model(table: pa.Table, name: str) -> str:
    """The one embedding model named in the table's ``model`` column ("" for no rows)."""
    models = set(table.column("model").to_pylist())
    if len(models) > 1:
        raise StoreError(f"{name} mixes embedding models {sorted(models)}; re-embed with one model.")
    return next(iter(models), "")


def _mapped_array(path: Path) -> np.ndarray:
    """The file mapped read-only, as a plain ndarray view of the mapping: `np.memmap`'s Python
    ``__getitem__`` cost ~30 us per slice, which the inverted-list search takes hundreds of."""
    return np.asarray(np.load(path, mmap_mode="r"))


def _mapped_model(path: Path) -> str | None:
    try:
        return str(json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["model"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Written under a temporary name, then renamed; a reader trusts it only once its sidecar
    (written after) exists, so a killed writer leaves nothing that looks whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.chmod(staging, 0o644)  # mkstemp makes it private; other readers of the home map it too
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def _write_text(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def _prune(folder: Path, generation: int) -> None:
    """Drop the files of generations older than the previous one (publication keeps two); a
    process still mapping one keeps its pages until it lets go."""
    for path in folder.iterdir():
        found = _NAME.match(path.name)
        if found and int(found.group(1)) < generation - 1:
            path.unlink(missing_ok=True)


def _file_identity(generation: PublishedFiles, name: str) -> str:
    """Size and mtime of a local generation's Parquet file: a file damaged since the cache was
    written misses the cache, so it is read, and named, as without one."""
    table_path = getattr(generation, "table_path", None)  # local generations; remote ones verify downloads
    if table_path is None:
        return ""
    try:
        stat = table_path(name).stat()
    except OSError:
        return "missing"  # read_table names it
    return f"{stat.st_size}|{stat.st_mtime_ns}"


def _matrix(table: pa.Table) -> np.ndarray:
    column = table.column("vector").combine_chunks()
    dimension = column.type.list_size
    return np.asarray(column.flatten().to_numpy(zero_copy_only=False), np.float32).reshape(-1, dimension)


def _aligned(ids: tuple[str, ...], vectors: pa.Table, name: str, hint: str) -> np.ndarray:
    """The vectors in ``ids`` order; a count or id mismatch means a stale index."""
    stored = vectors.column("id").to_pylist()
    matrix = _matrix(vectors)
    if tuple(stored) == ids:  # written in the table's order: no gather, no copy
        return matrix
    position = {identifier: i for i, identifier in enumerate(stored)}
    missing = [i for i in ids if i not in position]
    if missing or len(position) != len(set(ids)):
        raise StoreError(
            f"{name} does not match its table ({len(position)} vectors, {len(ids)} rows); "
            f"rebuild with `{hint}`."
        )
    return matrix[[position[i] for i in ids]]
