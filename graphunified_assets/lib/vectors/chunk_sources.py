"""What `chunk_vectors` was built from, per live document: the stamps (size, mtime_ns) of its
`text_units`, `chunk_embeddings` and `documents` files, and what they added to the table and to
the step's metadata (its rows, model, chunk tokens, characters).

An update compares the stamps with the files' own: a document whose chunks or embeddings file
changed has its rows deleted and written again, one no longer live has them deleted, and no other
document's files are read. The metadata's figures over every live document are summed from the
record: reading every document's text for the corpus table took 0.26 s of each one-document
update at 12.6K documents, and the chunks' token counts as long.

The record is a cache (`SOURCES_FILE` in the home's cache folder), replaced atomically once the
table is written. A crash in between leaves the previous record, against which the next update
finds the same documents changed and writes them again (a document's rows are deleted by its id
first); deleting it costs one full rewrite.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphunified_query.core.artifacts import CHUNK_EMBEDDINGS, CHUNKS, DOCUMENTS
from graphunified_query.core.layout import partition_file_stem
from graphunified_query.core.stores.parquet import write_table_atomic

SOURCES_FILE = "chunk_vector_sources.parquet"  # in the home's cache folder
STAMPED = (CHUNKS, CHUNK_EMBEDDINGS, DOCUMENTS)  # the per-document tables whose files are stamped
MISSING = -1  # the size and mtime of no file


def _stamp_columns(*tables: str) -> list[str]:
    return [f"{table}_{part}" for table in tables for part in ("size", "mtime_ns")]


_ROW_COLUMNS = ("model", "vectors", "tokens", "tokens_counted")  # from its chunks and embeddings
_TEXT_COLUMNS = ("format", "document_rows", "chars", "chars_counted")  # from its documents file
SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        *[(name, pa.int64()) for name in _stamp_columns(*STAMPED)],
        ("model", pa.string()),  # its embeddings' model ("" without any)
        ("vectors", pa.int64()),  # its rows in chunk_vectors
        ("tokens", pa.int64()),  # its chunks' n_tokens: summed, and how many are set
        ("tokens_counted", pa.int64()),
        ("format", pa.string()),  # its documents rows: format, how many, text characters summed
        ("document_rows", pa.int64()),
        ("chars", pa.int64()),
        ("chars_counted", pa.int64()),
    ]
)


def stamps_now(documents: Sequence[str], listings: Mapping[str, Mapping[str, os.stat_result]]) -> pa.Table:
    """The stamps of ``documents``' files (`MISSING` for none) in each `STAMPED` table's
    ``listings`` (file name -> stat, `HomeLayout.partition_stats`): document_id and the stamps."""
    names = [f"{partition_file_stem(document)}.parquet" for document in documents]
    columns = {"document_id": pa.array(documents, pa.string())}
    for table in STAMPED:
        found = [listings[table].get(name) for name in names]
        size, mtime = _stamp_columns(table)
        columns[size] = pa.array([s.st_size if s else MISSING for s in found], pa.int64())
        columns[mtime] = pa.array([s.st_mtime_ns if s else MISSING for s in found], pa.int64())
    return pa.table(columns)


def files_present(now: pa.Table, table: str) -> int:
    """How many documents of ``now`` have a ``table`` file."""
    return int(pc.sum(pc.not_equal(now.column(_stamp_columns(table)[0]), MISSING)).as_py() or 0)


def present_files(
    now: pa.Table, table: str, documents: Iterable[str] | None = None
) -> list[tuple[str, list[int]]]:
    """(document, [size, mtime_ns]) of each document of ``now`` (of those also in ``documents``,
    when given) whose ``table`` file is present, in ``now``'s order."""
    size, mtime = _stamp_columns(table)
    present = pc.not_equal(now.column(size), MISSING)
    if documents is not None:
        wanted = pa.array(list(documents), pa.string())
        present = pc.and_(present, pc.is_in(now.column("document_id"), value_set=wanted))
    found = now.filter(present)
    sizes, mtimes = found.column(size).to_pylist(), found.column(mtime).to_pylist()
    return [
        (d, [s, m]) for d, s, m in zip(found.column("document_id").to_pylist(), sizes, mtimes, strict=True)
    ]


@dataclass(frozen=True)
class SourceChange:
    """What changed since the record: ``rows`` are written again (live documents, new or with
    another chunks or embeddings file), ``stale`` documents' rows deleted first (those of
    ``rows`` the record holds, and recorded documents no longer live), ``texts`` read again for
    the corpus table (another documents file)."""

    rows: list[str]
    stale: list[str]
    texts: list[str]


class ChunkSources:
    """The record: one row per document (`SCHEMA`)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    @classmethod
    def empty(cls) -> ChunkSources:
        return cls(SCHEMA.empty_table())

    @classmethod
    def load(cls, path: Path) -> ChunkSources | None:
        """The record at ``path``; None when missing, unreadable or of another schema."""
        try:
            table = pq.read_table(path)
        except (FileNotFoundError, pa.ArrowInvalid, OSError):
            return None
        return cls(table) if table.schema.equals(SCHEMA, check_metadata=False) else None

    def save(self, path: Path) -> None:
        # Not fsynced: a record lost to a power cut costs one rewrite.
        write_table_atomic(path, self.table, durable=False)

    def change(self, now: pa.Table) -> SourceChange:
        """What changed between the record and the stamps ``now`` (`stamps_now`)."""
        documents, recorded = now.column("document_id"), self.table.column("document_id")
        at = pc.index_in(documents, value_set=recorded)
        rows = self._differs(now, at, _stamp_columns(CHUNKS, CHUNK_EMBEDDINGS))
        texts = self._differs(now, at, _stamp_columns(DOCUMENTS))
        gone = recorded.filter(pc.invert(pc.is_in(recorded, value_set=documents)))
        stale = documents.filter(pc.and_(rows, at.is_valid()))
        return SourceChange(
            rows=documents.filter(rows).to_pylist(),
            stale=[*stale.to_pylist(), *gone.to_pylist()],
            texts=documents.filter(texts).to_pylist(),
        )

    def _differs(self, now: pa.Table, at: pa.Array, columns: list[str]) -> pa.Array:
        """Per document of ``now``: unrecorded, or a stamp in ``columns`` differs."""
        differs = pc.invert(at.is_valid())
        for name in columns:
            differs = pc.or_(
                differs, pc.fill_null(pc.not_equal(now.column(name), self.table.column(name).take(at)), True)
            )
        return differs

    def updated(self, now: pa.Table, change: SourceChange, rows: pa.Table, texts: pa.Table) -> ChunkSources:
        """The record once ``change`` is written: the stamps ``now``, what `row_contributions`
        (``rows``) and `text_contributions` (``texts``) found for the documents read again, the
        rest as recorded; documents no longer live dropped."""
        documents = now.column("document_id")
        at = pc.index_in(documents, value_set=self.table.column("document_id"))
        columns = {name: now.column(name) for name in ("document_id", *_stamp_columns(*STAMPED))}
        for names, fresh, read in ((_ROW_COLUMNS, rows, change.rows), (_TEXT_COLUMNS, texts, change.texts)):
            again = pc.is_in(documents, value_set=pa.array(read, pa.string()))
            fresh_at = pc.index_in(documents, value_set=fresh.column("document_id"))
            for name in names:
                columns[name] = pc.if_else(
                    again, fresh.column(name).take(fresh_at), self.table.column(name).take(at)
                )
        return ChunkSources(pa.table(columns, schema=SCHEMA))

    def holds(self, document_ids: pa.Array | pa.ChunkedArray) -> bool:
        """Whether a table whose rows have these document ids holds, per document, as many rows
        as recorded."""
        grouped = pa.table({"document_id": document_ids}).group_by("document_id", use_threads=False)
        found = grouped.aggregate([("document_id", "count")]).sort_by("document_id")
        recorded = self.table.filter(pc.greater(self.table.column("vectors"), 0)).sort_by("document_id")
        return (found.column("document_id").to_pylist(), found.column("document_id_count").to_pylist()) == (
            recorded.column("document_id").to_pylist(),
            recorded.column("vectors").to_pylist(),
        )

    def models(self) -> set[str]:
        """The embedding models of the recorded documents' rows."""
        return {m for m in pc.unique(self.table.column("model")).to_pylist() if m}

    def mean_chunk_tokens(self) -> float:
        """Mean n_tokens over every live chunk (where set), as the chunks' own mean."""
        counted = pc.sum(self.table.column("tokens_counted")).as_py() or 0
        return pc.sum(self.table.column("tokens")).as_py() / counted if counted else 0.0

    def corpus(self) -> str:
        """Per-format document counts and sizes, as a Markdown table for the UI."""
        documents = self.table.filter(pc.greater(self.table.column("document_rows"), 0))
        if not documents.num_rows:
            return "no documents"
        sums = documents.group_by("format").aggregate(
            [("document_rows", "sum"), ("chars", "sum"), ("chars_counted", "sum")]
        )
        lines = ["| format | documents | characters | mean characters |", "|---|---|---|---|"]
        for row in sorted(sums.to_pylist(), key=lambda r: str(r["format"])):
            counted = row["chars_counted_sum"]
            chars, mean = (row["chars_sum"], row["chars_sum"] / counted) if counted else (None, None)
            lines.append(f"| {row['format']} | {row['document_rows_sum']} | {chars} | {mean:.0f} |")
        return "\n".join(lines)
