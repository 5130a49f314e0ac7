"""Whether a published generation can be read: every file a snapshot loads is present and parses.

The query side's loader (`snapshot/loader.py`) runs `check_present` before it reads anything and
reads index files through `index_file`; the pipeline's `index` runs `published_damage` to repair
what readers would fail on. Both name the file and the command that rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from graphunified_query.core.artifacts import (
    BM25_FOLDER,
    CHUNK_SIMILARITY_FILE,
    CHUNK_VECTORS,
    COMMUNITIES,
    PPR_FILE,
    REPORT_POINT_VECTORS,
    VECTOR_TABLES,
    ann_file,
)
from graphunified_query.core.indexes import ann
from graphunified_query.core.indexes.bm25 import BM25Index
from graphunified_query.core.indexes.chunk_similarity import SimilarityEdges
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.layout import HomeLayout, build_command, refresh_command
from graphunified_query.core.stores.errors import IndexNotBuilt, StoreDamaged
from graphunified_query.core.stores.lance_reader import LanceTables, damaged
from graphunified_query.core.stores.parquet import StoreError
from graphunified_query.core.stores.publication import PublishedFiles, current

_T = TypeVar("_T")


def check_present(generation: PublishedFiles) -> None:
    """Every published file and every LanceDB table a snapshot needs exists; else IndexNotBuilt
    (a home never built) or StoreDamaged naming the first missing one."""
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
        if not generation.lance_exists(name):  # checked even when its data is mapped from a cache
            raise damaged(name, generation, hint, FileNotFoundError(name))


def index_file(load: Callable[[Path], _T], path: Path, hint: str) -> _T:
    """A strategy index file, or an error naming it (the loaders raise whatever numpy/bm25s do)."""
    try:
        return load(path)
    except StoreDamaged:
        raise  # the loader's own one line (an index of an older format)
    except Exception as error:  # any failure to parse a stored file means it is damaged
        state = "missing" if not path.exists() else f"unreadable ({type(error).__name__}: {error})"
        raise StoreDamaged(f"{path} is {state}; rebuild it with `{hint}`.") from None


def published_damage(layout: HomeLayout) -> str | None:
    """What a reader of the published generation would fail on, as one line naming the file; None
    when it reads, or when nothing was built yet (the build then makes it).

    Reads what the loader reads, without building a snapshot: the tables whole, each LanceDB
    table's ids at its published version (which opens every data file: a truncated or deleted one
    fails), and every index file."""
    hint = refresh_command(layout.home)
    try:
        generation = current(layout, rebuild_hint=hint)
        check_present(generation)
        lance = LanceTables(generation, hint)
        for table, vector_table in VECTOR_TABLES.items():
            ids = generation.read_table(table, hint).column("id").to_pylist()
            lance.scan(vector_table, columns=("id",))
            index_file(partial(ann.load, ids=ids), generation.index_path(ann_file(vector_table)), hint)
        generation.read_table(COMMUNITIES, hint)
        lance.scan(CHUNK_VECTORS, columns=("id",))
        if generation.lance_exists(REPORT_POINT_VECTORS):  # optional: a home built before it lacks it
            lance.scan(REPORT_POINT_VECTORS, columns=("id",))
        index_file(BM25Index.load, generation.index_path(BM25_FOLDER), hint)
        index_file(PPRGraph.load, generation.index_path(PPR_FILE), hint)
        index_file(SimilarityEdges.load, generation.index_path(CHUNK_SIMILARITY_FILE), hint)
    except IndexNotBuilt as error:
        if isinstance(error, StoreDamaged):
            return _first_clause(error)
        return None
    except StoreError as error:  # a table unreadable, or CURRENT naming no generation
        return _first_clause(error)
    return None


def _first_clause(error: Exception) -> str:
    """The message without its rebuild advice: `index` is what rebuilds it."""
    return str(error).split("; rebuild")[0].split("; run `")[0]
