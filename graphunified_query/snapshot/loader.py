"""Loading a Snapshot from one published generation, in a home folder or in object storage.

A missing or unreadable piece is a clear error naming the file and the command that rebuilds it;
Lance reads lazily, so every table is read whole here rather than failing mid-query.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TypeVar

from graphunified_query.core.artifacts import (
    BM25_FOLDER,
    BUILT_FOR_FILE,
    CHUNK_SIMILARITY_FILE,
    CHUNK_VECTORS,
    COMMUNITIES,
    COMMUNITY_REPORTS,
    ENTITIES,
    FACTS,
    PPR_FILE,
    RELATIONSHIPS,
    VECTOR_TABLES,
    ann_file,
)
from graphunified_query.core.chunk_order import in_chunk_order
from graphunified_query.core.indexes import ann
from graphunified_query.core.indexes.bm25 import BM25Index
from graphunified_query.core.indexes.chunk_similarity import SimilarityEdges
from graphunified_query.core.indexes.dense import DenseIndex
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.layout import HomeLayout, refresh_command
from graphunified_query.core.stores.errors import IndexNotBuilt, StoreDamaged
from graphunified_query.core.stores.lance_reader import LanceTables
from graphunified_query.core.stores.object_store import is_object_store_uri
from graphunified_query.core.stores.parquet import StoreError
from graphunified_query.core.stores.publication import PublishedFiles, current
from graphunified_query.core.stores.published_check import check_present, index_file
from graphunified_query.snapshot.arrow_rows import ArrowRows
from graphunified_query.snapshot.cache import (
    cache_folder,
    generation_key,
    mapped_columns,
    mapped_report_points,
    mapped_rows,
    mapped_vectors,
    single_model,
)
from graphunified_query.snapshot.model import Snapshot, chunks_from_arrow

_T = TypeVar("_T")
# Columns the retrievers read in loops over many rows: converted to Python lists once, at load.
HOT_COLUMNS: dict[str, tuple[str, ...]] = {
    ENTITIES: ("id", "title", "type", "text_unit_ids"),
    # None for relationships: the walks read `Snapshot.adjacency`'s arrays, a result its own row.
    FACTS: ("id", "subject_id", "object_id"),
    COMMUNITY_REPORTS: ("id", "community", "level"),
}


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
        from graphunified_query.core.stores.remote_generation import NothingPublished, open_current

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
    check_present(generation)
    lance = LanceTables(generation, hint)
    cache = cache_folder(generation.local_home)
    frozen = generation_key(generation)
    # Every chunk column but the vectors: the texts stay in Arrow (`Chunks.texts` reads by row).
    # Rows in one order however the table stores them (an update appends a changed document's).
    chunk_columns = mapped_columns(cache, lance, CHUNK_VECTORS, order=in_chunk_order)
    model = single_model(chunk_columns, CHUNK_VECTORS)
    chunks = chunks_from_arrow(chunk_columns)
    chunk_matrix, _ = mapped_vectors(cache, lance, CHUNK_VECTORS, chunks.ids)
    dimension = chunk_matrix.shape[1]
    tables: dict[str, tuple[ArrowRows, DenseIndex]] = {}
    for name, vector_table in VECTOR_TABLES.items():
        rows = ArrowRows(mapped_rows(cache, generation, frozen, name, hint), hot=HOT_COLUMNS.get(name, ()))
        ids = tuple(rows.column("id"))
        if not ids:
            if lance.count(vector_table):
                raise StoreError(f"{vector_table} has vectors but {name} has no rows; rebuild with `{hint}`.")
            tables[name] = (rows, DenseIndex.empty(dimension))
            continue
        ann_index = index_file(
            partial(ann.load, ids=ids), generation.index_path(ann_file(vector_table)), hint
        )
        matrix, vector_model = mapped_vectors(cache, lance, vector_table, ids)
        if vector_model != model:
            raise StoreError(
                f"{vector_table} was embedded with another model than {CHUNK_VECTORS} ({model}); "
                f"rebuild with `{hint}`."
            )
        tables[name] = (rows, DenseIndex(ids, matrix, ann_index))
    bm25 = index_file(BM25Index.load, generation.index_path(BM25_FOLDER), hint)
    graph = index_file(PPRGraph.load, generation.index_path(PPR_FILE), hint)
    chunk_similarity = index_file(SimilarityEdges.load, generation.index_path(CHUNK_SIMILARITY_FILE), hint)
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
            for row in mapped_rows(cache, generation, frozen, COMMUNITIES, hint)
            .select(["community", "level", "entity_ids", "text_unit_ids"])
            .to_pylist()
        },
        bm25=bm25,
        graph=graph,
        chunk_similarity=chunk_similarity,
        generation=generation.number,
        report_points=mapped_report_points(cache, lance, model),
        built_for=_built_for(generation.index_path(BUILT_FOR_FILE), hint),
    )


def _built_for(path: Path, hint: str) -> tuple[str, ...] | None:
    """The strategies the build served (`BUILT_FOR_FILE`); None when every one (or a home built
    before the file existed). A damaged file is a rebuild, not a guess."""
    if not path.exists():
        return None
    try:
        enabled = json.loads(path.read_text(encoding="utf-8"))["enabled"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise StoreError(f"{path} is unreadable ({error}); rebuild with `{hint}`.") from None
    return tuple(enabled) if enabled is not None else None
