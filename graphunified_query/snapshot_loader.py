"""Loading a Snapshot from one published generation, in a home folder or in object storage.

A missing or unreadable piece is a clear error naming the file and the command that rebuilds it;
Lance reads lazily, so every table is read whole here rather than failing mid-query.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from graphunified_query.arrow_rows import ArrowRows, ArrowStrings
from graphunified_query.indexes import ivf
from graphunified_query.indexes.bm25 import BM25Index
from graphunified_query.indexes.chunk_similarity import CHUNK_SIMILARITY_FILE, SimilarityEdges
from graphunified_query.indexes.dense import DenseIndex
from graphunified_query.indexes.ivf import InvertedLists, ivf_file
from graphunified_query.indexes.ppr_graph import PPRGraph
from graphunified_query.indexes.report_points import REPORT_POINT_VECTORS, ReportPoints
from graphunified_query.lance_reader import LanceTables, damaged
from graphunified_query.layout import HomeLayout, build_command, refresh_command
from graphunified_query.object_store import is_object_store_uri
from graphunified_query.parquet_store import StoreError
from graphunified_query.publication import current
from graphunified_query.snapshot import (
    BM25_FOLDER,
    CHUNK_VECTORS,
    PPR_FILE,
    VECTOR_TABLES,
    IndexNotBuilt,
    Snapshot,
    StoreDamaged,
    chunks_from_arrow,
)
from graphunified_query.snapshot_cache import cache_key, mapped_matrix, mapped_table
from graphunified_query.tables import COMMUNITIES, COMMUNITY_REPORTS, ENTITIES, FACTS, RELATIONSHIPS

_T = TypeVar("_T")
SNAPSHOT_CACHE = "snapshot"  # under the home's cache folder: the mapped vector matrices
# Columns the retrievers read in loops over many rows: converted to Python lists once, at load.
HOT_COLUMNS: dict[str, tuple[str, ...]] = {
    ENTITIES: ("id", "title", "type", "text_unit_ids"),
    RELATIONSHIPS: ("id", "source_id", "target_id", "weight"),
    FACTS: ("id", "subject_id", "object_id"),
    COMMUNITY_REPORTS: ("id", "community", "level"),
}


class PublishedFiles(Protocol):
    """One generation's files, local (`publication.Generation`) or remote (`RemoteGeneration`)."""

    number: int

    @property
    def published(self) -> bool: ...  # False: the live files of a home built before generations
    @property
    def local_home(self) -> Path: ...  # where aliases (and a remote generation's downloads) are
    def describe(self) -> str: ...
    def rebuild_hint(self) -> str: ...
    def missing_files(self) -> list[str]: ...
    def read_table(self, table: str, hint: str) -> pa.Table: ...
    def index_path(self, name: str) -> Path: ...
    def lance_connect(self) -> Any: ...
    def lance_location(self, table: str) -> str: ...
    def lance_exists(self, table: str) -> bool: ...
    def lance_version(self, table: str) -> int | None: ...


def load_snapshot(home: Path | str, *, environ: Mapping[str, str] | None = None) -> Snapshot:
    """Load the latest published generation (or the live files of a home built before them).

    ``home`` is a folder or an object-store location (``s3://bucket/prefix``; ``environ`` gives
    its credentials). A rebuild publishing a newer generation may prune the one being read;
    then the newer one is read instead, so a reader always gets one whole generation, old or new.
    """
    open_current = _opener(home, environ)
    generation = open_current()
    try:
        return _load(generation)
    except StoreError:
        newer = open_current()
        if newer.number == generation.number:
            raise
        return _load(newer)


def published_generation(home: Path | str, *, environ: Mapping[str, str] | None = None) -> int:
    """The number of the generation `load_snapshot` would load now (0: an unpublished home);
    cheap (the pointer and one manifest), so a server can ask it per request."""
    return _opener(home, environ)().number


def _opener(home: Path | str, environ: Mapping[str, str] | None) -> Callable[[], PublishedFiles]:
    if is_object_store_uri(home):
        from graphunified_query.remote_generation import NothingPublished, open_current

        def remote() -> PublishedFiles:
            try:
                return open_current(str(home), os.environ if environ is None else environ)
            except NothingPublished as error:
                raise IndexNotBuilt(str(error)) from None

        return remote
    layout = HomeLayout.at(home)

    def local() -> PublishedFiles:
        try:
            return current(layout, rebuild_hint=refresh_command(layout.home))
        except StoreError as error:
            raise StoreDamaged(str(error)) from None

    return local


def _load(generation: PublishedFiles) -> Snapshot:
    try:
        return _read(generation)
    except IndexNotBuilt:
        raise
    except StoreError as error:  # a table unreadable mid-load: say which and how to rebuild it
        raise StoreDamaged(str(error)) from None


def _read(generation: PublishedFiles) -> Snapshot:
    hint = generation.rebuild_hint()
    missing = generation.missing_files()
    if missing:
        raise StoreDamaged(f"{missing[0]} is missing ({generation.describe()}); rebuild it with `{hint}`.")
    if not generation.lance_exists(CHUNK_VECTORS):
        if not generation.published:
            build = build_command(generation.local_home)
            raise IndexNotBuilt(
                f"No index in {generation.local_home}: {CHUNK_VECTORS} is missing. Build it with `{build}`."
            )
        raise StoreDamaged(
            f"{generation.lance_location(CHUNK_VECTORS)} is missing ({generation.describe()} "
            f"needs it); rebuild it with `{hint}`."
        )
    for name in (CHUNK_VECTORS, *VECTOR_TABLES.values()):
        if not generation.lance_exists(name):  # checked even when its data is mapped from the cache
            raise damaged(name, generation, hint, FileNotFoundError(name))
    lance = LanceTables(generation, hint)
    cache = generation.local_home / "cache" / SNAPSHOT_CACHE
    frozen = _generation_key(generation)
    # Every chunk column but the vectors: the texts stay in Arrow (`Chunks.texts` reads by row).
    chunk_columns = mapped_table(
        cache,
        generation.number,
        CHUNK_VECTORS,
        cache_key(lance.fingerprint(CHUNK_VECTORS)),
        lambda: lance.scan(CHUNK_VECTORS, exclude=("vector",)),
    )
    model = _single_model(chunk_columns, CHUNK_VECTORS)
    chunks = chunks_from_arrow(chunk_columns)
    chunk_matrix, _ = _mapped(cache, lance, CHUNK_VECTORS, chunks.ids, None)
    dimension = chunk_matrix.shape[1]
    tables: dict[str, tuple[ArrowRows, DenseIndex]] = {}
    for name, vector_table in VECTOR_TABLES.items():
        rows = ArrowRows(_rows_table(cache, generation, frozen, name, hint), hot=HOT_COLUMNS.get(name, ()))
        ids = tuple(rows.column("id"))
        if not ids:
            if lance.count(vector_table):
                raise StoreError(f"{vector_table} has vectors but {name} has no rows; rebuild with `{hint}`.")
            tables[name] = (rows, DenseIndex.empty(dimension))
            continue
        lists_path = generation.index_path(ivf_file(vector_table))
        lists = _index_file(lambda p=lists_path, ids=ids: ivf.load(p, ids), lists_path, hint)
        matrix, vector_model = _mapped(cache, lance, vector_table, ids, lists)
        if vector_model != model:
            raise StoreError(
                f"{vector_table} was embedded with another model than {CHUNK_VECTORS} ({model}); "
                f"rebuild with `{hint}`."
            )
        dense = DenseIndex.clustered(ids, matrix, lists, ordered=True) if lists else DenseIndex(ids, matrix)
        tables[name] = (rows, dense)
    bm25 = _index_file(BM25Index.load, generation.index_path(BM25_FOLDER), hint)
    graph = _index_file(PPRGraph.load, generation.index_path(PPR_FILE), hint)
    chunk_similarity = _index_file(SimilarityEdges.load, generation.index_path(CHUNK_SIMILARITY_FILE), hint)
    return Snapshot(
        home=generation.local_home,
        model=model,
        chunks=chunks,
        chunk_vectors=DenseIndex(chunks.ids, chunk_matrix),
        entities=tables[ENTITIES][0],
        entity_vectors=tables[ENTITIES][1],
        relationships=tables[RELATIONSHIPS][0],
        relationship_vectors=tables[RELATIONSHIPS][1],
        facts=tables[FACTS][0],
        fact_vectors=tables[FACTS][1],
        reports=tables[COMMUNITY_REPORTS][0],
        report_vectors=tables[COMMUNITY_REPORTS][1],
        communities={
            row["community"]: row
            for row in _rows_table(cache, generation, frozen, COMMUNITIES, hint)
            .select(["community", "level", "entity_ids", "text_unit_ids"])
            .to_pylist()
        },
        bm25=bm25,
        graph=graph,
        chunk_similarity=chunk_similarity,
        generation=generation.number,
        report_points=_report_points(cache, lance, model),
    )


def _mapped(
    cache: Path, lance: LanceTables, name: str, ids: tuple[str, ...], lists: InvertedLists | None
) -> tuple[np.ndarray, str]:
    """The table's vectors in ``ids`` order (grouped by inverted list with ``lists``), mapped from
    the snapshot cache; read from LanceDB and written there on a generation's first load."""
    order = lists.ids_digest + str(len(lists.rows)) if lists is not None else "rows"
    key = cache_key(lance.fingerprint(name), ivf.ids_digest(ids), order)

    def build() -> tuple[np.ndarray, str]:
        read = lance.scan(name, columns=("id", "vector", "model"))
        matrix = _aligned(ids, read, name, lance.hint)
        return (matrix[lists.rows] if lists is not None else matrix), _single_model(read, name)

    return mapped_matrix(cache, lance.generation.number, name, key, build)


def _report_points(cache: Path, lance: LanceTables, model: str) -> ReportPoints | None:
    """Global search's precomputed map points, mapped like the other vectors; None for a home
    built before the table (the map embeds the points per query then)."""
    if not lance.generation.lance_exists(REPORT_POINT_VECTORS):
        return None
    number, key = lance.generation.number, cache_key(lance.fingerprint(REPORT_POINT_VECTORS))
    name = REPORT_POINT_VECTORS
    columns = mapped_table(cache, number, name, key, lambda: lance.scan(name, exclude=("vector",)))
    if columns.num_rows == 0 or "community" not in columns.column_names:
        return None  # nothing to map, or a table written before it was keyed by community

    def build() -> tuple[np.ndarray, str]:
        read = lance.scan(REPORT_POINT_VECTORS, columns=("id", "vector", "model"))
        if not read.column("id").equals(columns.column("id")):
            raise StoreError(f"{REPORT_POINT_VECTORS} changed while read; rebuild with `{lance.hint}`.")
        return _matrix(read), _single_model(read, REPORT_POINT_VECTORS)

    matrix, vector_model = mapped_matrix(cache, number, REPORT_POINT_VECTORS, key, build)
    if vector_model != model:
        raise StoreError(
            f"{REPORT_POINT_VECTORS} was embedded with another model than {CHUNK_VECTORS} ({model}); "
            f"rebuild with `{lance.hint}`."
        )
    return ReportPoints(columns.column("community").to_pylist(), ArrowStrings(columns.column("text")), matrix)


def _rows_table(
    cache: Path, generation: PublishedFiles, frozen: str | None, name: str, hint: str
) -> pa.Table:
    """A global table, mapped from the snapshot cache for a published (immutable) generation."""
    if frozen is None:  # the live files of an older home change under the same name
        return generation.read_table(name, hint)
    return mapped_table(
        cache,
        generation.number,
        name,
        cache_key(frozen, name, _file_identity(generation, name)),
        lambda: generation.read_table(name, hint),
    )


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


def _generation_key(generation: PublishedFiles) -> str | None:
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


def _index_file(load: Callable[[Path], _T], path: Path, hint: str) -> _T:
    """A strategy index file, or an error naming it (the loaders raise whatever numpy/bm25s do)."""
    try:
        return load(path)
    except Exception as error:  # any failure to parse a stored file means it is damaged
        state = "missing" if not path.exists() else f"unreadable ({type(error).__name__}: {error})"
        raise StoreDamaged(f"{path} is {state}; rebuild it with `{hint}`.") from None


def _single_model(table: pa.Table, name: str) -> str:
    models = set(table.column("model").to_pylist())
    if len(models) > 1:
        raise StoreError(f"{name} mixes embedding models {sorted(models)}; re-embed with one model.")
    return next(iter(models), "")


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
