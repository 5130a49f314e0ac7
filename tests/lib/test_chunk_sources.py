"""The record of what chunk_vectors was built from: which documents an update writes again,
deletes, or reads again for the corpus table, and when there is no record to go by."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from graphunified_assets.lib.vectors.chunk_rows import row_contributions, text_contributions
from graphunified_assets.lib.vectors.chunk_sources import (
    STAMPED,
    ChunkSources,
    SourceChange,
    files_present,
    present_files,
    stamps_now,
)
from graphunified_query.core.artifacts import CHUNK_EMBEDDINGS, CHUNKS, DOCUMENTS
from graphunified_query.core.layout import partition_file_stem


def _listings(stamps: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """Per table, file name -> a stat of that size and mtime for each document listed."""
    found: dict[str, dict[str, Any]] = {table: {} for table in STAMPED}
    for document, sizes in stamps.items():
        for table, size in sizes.items():
            stat = SimpleNamespace(st_size=size, st_mtime_ns=size)
            found[table][f"{partition_file_stem(document)}.parquet"] = stat
    return found


def _recorded(stamps: dict[str, dict[str, int]]) -> ChunkSources:
    live = list(stamps)
    now = stamps_now(live, _listings(stamps))
    change = SourceChange(rows=live, stale=[], texts=live)
    return ChunkSources.empty().updated(
        now, change, row_contributions(live, None, None, None), text_contributions(live, None)
    )


def test_a_change_names_new_rewritten_removed_and_restated_documents() -> None:
    every = {CHUNKS: 1, CHUNK_EMBEDDINGS: 1, DOCUMENTS: 1}
    sources = _recorded({"a": every, "b": every, "c": every, "e": {CHUNKS: 1}})
    now = stamps_now(
        ["a", "b", "d", "e"],
        _listings(
            {
                "a": {**every, DOCUMENTS: 2},  # its text alone
                "b": {**every, CHUNK_EMBEDDINGS: 2},  # re-embedded
                "d": every,  # new
                "e": {CHUNKS: 1},  # as it was, without embeddings or text ("c" removed)
            }
        ),
    )
    change = sources.change(now)
    assert change == SourceChange(rows=["b", "d"], stale=["b", "c"], texts=["a", "d"])
    assert files_present(now, CHUNK_EMBEDDINGS) == 3
    assert present_files(now, CHUNK_EMBEDDINGS, ["b", "e"]) == [("b", [2, 2])]
    assert sources.updated(
        now, change, row_contributions(["b", "d"], None, None, None), text_contributions(["a", "d"], None)
    ).change(now) == SourceChange([], [], [])


def test_no_record_or_another_schema_is_none(tmp_path: Path) -> None:
    path = tmp_path / "sources.parquet"
    assert ChunkSources.load(path) is None
    pq.write_table(pa.table({"document_id": ["a"]}), path)
    assert ChunkSources.load(path) is None
    _recorded({"a": {CHUNKS: 3}}).save(path)
    loaded = ChunkSources.load(path)
    assert loaded is not None and loaded.table.column(
        "chunks_size" if False else f"{CHUNKS}_size"
    ).to_pylist() == [3]


def test_the_record_holds_a_table_with_each_documents_rows() -> None:
    live = ["a", "b", "c"]
    now = stamps_now(live, _listings({d: {CHUNKS: 1} for d in live}))
    rows = pa.table({"document_id": ["a", "a", "b"], "id": ["a1", "a2", "b1"]})
    contributions = row_contributions(live, None, None, rows)
    sources = ChunkSources.empty().updated(
        now, SourceChange(rows=live, stale=[], texts=live), contributions, text_contributions(live, None)
    )
    assert sources.holds(pa.chunked_array([["b", "a"], ["a"]]))
    assert not sources.holds(pa.array(["a", "b"]))  # a row of "a" lost
    assert not sources.holds(pa.array(["a", "a", "b", "c"]))  # rows of "c" it never wrote
