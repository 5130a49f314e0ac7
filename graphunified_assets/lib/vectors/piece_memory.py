"""The vectors of each community report's pieces, kept so that an update need not fetch them again.

Composed report texts and points (`composed_vectors`) are made of pieces: a title, summary
sentences, finding headlines and explanation sentences. An update rewrites the reports of the
communities it touched (342 of 15K when one passage joins the 12.6K-passage index), and almost
every piece of a rewritten report is one its previous version had. Fetched from the embedding
cache (SQLite keyed by hash, 1.7 GB at that scale), each of those ~6K pieces is a random read of
the disk: 5-16 s of an update when the file's pages are not in memory. Here they are rows of one
vectors file that an update appends to, and a small index (texts, references) read whole: a
community's pieces were appended together, so reading them touches few pages.

What it holds: a row per piece with its vector, and references saying which community's report
text or points (``PIECE_TABLES``) were last computed from which rows. An update drops the
references of the communities it recomputes or removes, adds those it computed, and appends rows
for pieces it has not seen; once most rows are no community's any more, the next save writes only
the referenced ones to a new file (`row_file`). A cache: an index of another model, torn or
missing, or naming a short vectors file, reads as empty, and the pieces come from the embedding
cache as before. Its vectors are the ones the embedder returned, so a vector composed from them is
the one composed without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.vectors import row_file
from graphunified_assets.lib.vectors.row_file import no_rows
from graphunified_assets.lib.vectors.text_vectors import decode_texts, encode_texts
from graphunified_query.core.artifacts import REPORT_POINT_VECTORS, REPORT_VECTORS

Embed = Callable[[list[str]], np.ndarray]

REPORT_PIECES = "report_pieces"  # a folder in the home's cache: deleting it costs one update's reads
PIECE_TABLES = (REPORT_VECTORS, REPORT_POINT_VECTORS)  # a reference's table, by its position here
STAGED_SCHEMA = pa.schema(  # what a shard stages: one row per (table, community, piece)
    [
        pa.field("table", pa.int8()),
        pa.field("community", pa.int64()),
        pa.field("text", pa.string()),
        pa.field("vector", pa.list_(pa.float32())),
    ]
)
_INDEX = "index.npz"


@dataclass
class PieceMemory:
    """Rows of piece vectors: those saved (a memory map of the folder's vectors file, which an
    update only appends to) and those added since; each row's text; and the references."""

    # A row's piece; rows no reference names stay until compacted.
    texts: list[str] = field(default_factory=list)
    saved: np.ndarray = field(default_factory=no_rows)  # rows 0 .. len(saved) - 1, in the vectors file
    added: np.ndarray = field(default_factory=no_rows)  # the rows after them, not saved yet
    tables: np.ndarray = field(default_factory=lambda: np.empty(0, np.int8))  # per reference
    communities: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # per reference
    pieces: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # per reference: its row
    file: str = ""  # the vectors file's name in the folder

    @classmethod
    def load(cls, folder: Path, key: str) -> PieceMemory:
        """The memory saved under ``key`` (the model); empty when missing, torn or another key's."""
        try:
            with np.load(folder / _INDEX) as index:
                if str(index["key"]) != key:
                    return cls()
                texts = decode_texts(index["lengths"], index["texts"])
                file, dimension = str(index["vectors_file"]), int(index["dimension"])
                refs = index["tables"], index["communities"], index["pieces"]
            saved = row_file.map_rows(folder, file, len(texts), dimension)
        except Exception:  # missing, torn, not a zip, a short vectors file: read from the embedding cache
            return cls()
        if len({len(r) for r in refs}) != 1 or (refs[2] >= len(texts)).any():
            return cls()
        return cls(texts, saved, no_rows(), *refs, file=file)

    @property
    def rows(self) -> int:
        return len(self.texts)

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The vectors of ``rows`` (reading only their pages of the vectors file)."""
        at = np.asarray(rows, np.int64)
        width = max(self.saved.shape[1], self.added.shape[1])
        found = np.empty((len(at), width), np.float32)
        old = at < len(self.saved)
        if old.any():
            found[old] = self.saved[at[old]]
        if not old.all():
            found[~old] = self.added[at[~old] - len(self.saved)]
        return found

    def referenced(self) -> set[str]:
        """The pieces some community's reference names."""
        return {self.texts[row] for row in np.unique(self.pieces).tolist()}

    def updated(
        self, dropped: Mapping[str, Collection[int] | None], staged: Callable[[], Iterable[pa.RecordBatch]]
    ) -> PieceMemory:
        """The memory after a commit: per table in ``dropped``, the references of those communities
        (None: all of the table's) go; the rows ``staged()`` yields (`STAGED_SCHEMA`, read twice, a
        batch at a time) come in, a piece not held yet as a new row (a reference to a piece neither
        held nor carrying its vector is left out). Only the new pieces' vectors are held."""
        keep = np.ones(len(self.pieces), bool)
        for position, table in enumerate(PIECE_TABLES):
            if table in dropped:
                gone = self.tables == position
                if (communities := dropped[table]) is not None:
                    gone &= np.isin(self.communities, np.fromiter(communities, np.int64))
                keep &= ~gone
        texts = list(self.texts)
        table_parts, community_parts, piece_parts = (
            [self.tables[keep]],
            [self.communities[keep]],
            [self.pieces[keep]],
        )
        row_of = {text: row for row, text in enumerate(texts)}
        fresh: list[list[int]] = []  # per staged batch, its rows of pieces not held yet
        for batch in staged():
            fresh.append([])
            references, kept = [], []
            carries = pc.list_value_length(batch.column("vector")).to_numpy(zero_copy_only=False) > 0
            for i, text in enumerate(batch.column("text").to_pylist()):
                if text not in row_of:
                    if not carries[i]:  # a piece of a memory unreadable since its shard read it
                        continue
                    row_of[text] = len(texts)
                    texts.append(text)
                    fresh[-1].append(i)  # a new piece's first row carries its vector
                references.append(row_of[text])
                kept.append(i)
            rows_kept = pa.array(kept, pa.int64())
            table_parts.append(batch.column("table").take(rows_kept).to_numpy())
            community_parts.append(batch.column("community").take(rows_kept).to_numpy())
            piece_parts.append(np.array(references, np.int64))
        added = self.added
        if new := sum(map(len, fresh)):
            rows, at = None, 0
            for batch, found in zip(staged(), fresh, strict=True):
                if found:
                    taken = pc.take(batch.column("vector"), pa.array(found, pa.int64())).flatten()
                    vectors = taken.to_numpy(zero_copy_only=False).reshape(len(found), -1)
                    rows = rows if rows is not None else np.empty((new, vectors.shape[1]), np.float32)
                    rows[at : at + len(found)], at = vectors, at + len(found)
            assert rows is not None  # some batch held a new piece
            added = np.concatenate([added, rows]) if len(added) else rows
        tables, communities, pieces = (np.concatenate(p) for p in (table_parts, community_parts, piece_parts))
        return PieceMemory(texts, self.saved, added, tables, communities, pieces, file=self.file)

    def save(self, folder: Path, key: str) -> None:
        """Appends the added rows to the vectors file and writes the index beside it, renamed over
        the last one (`row_file`); once most rows are no piece's or the file cannot take them,
        writes the pieces' rows to a new file instead."""
        folder.mkdir(parents=True, exist_ok=True)
        used = np.unique(self.pieces)
        same_width = not len(self.saved) or not len(self.added) or self.saved.shape[1] == self.added.shape[1]
        if same_width and row_file.can_append(folder, self.file, self.rows, len(used)):
            memory = self
            row_file.append_rows(folder, self.file, self.saved, self.added)
        else:
            memory = self._compacted(used)
            memory.file = row_file.write_rows(folder, memory.added)
        memory._write_index(folder, key)
        row_file.remove_other_files(folder, memory.file)

    def _compacted(self, used: np.ndarray) -> PieceMemory:
        """Only the rows some reference names, as added rows of a new vectors file."""
        renumbered = np.full(self.rows, -1, np.int64)
        renumbered[used] = np.arange(len(used))
        if not len(self.saved) and len(used) == self.rows:  # a rewrite: every row new and used
            matrix = self.added
        else:
            matrix = self.vectors(used.tolist()) if len(used) else no_rows()
        texts = [self.texts[i] for i in used.tolist()]
        return PieceMemory(texts, no_rows(), matrix, self.tables, self.communities, renumbered[self.pieces])

    def _write_index(self, folder: Path, key: str) -> None:
        lengths, data = encode_texts(self.texts)
        staged = folder / f".{_INDEX}.{os.getpid()}.tmp"
        try:
            with staged.open("wb") as handle:
                np.savez(
                    handle,
                    key=np.array(key),
                    vectors_file=np.array(self.file),
                    dimension=np.array(max(self.saved.shape[1], self.added.shape[1])),
                    lengths=lengths,
                    texts=data,
                    tables=self.tables,
                    communities=self.communities,
                    pieces=self.pieces,
                )
            os.replace(staged, folder / _INDEX)
        finally:
            staged.unlink(missing_ok=True)


class PieceLookup:
    """One shard's view of the memory: an `Embed` that serves remembered pieces from it and asks
    ``embed`` for the rest, noting what it returned so the shard can stage its pieces: the vectors
    of pieces the memory lacks, the texts of the others (the commit reads the same memory)."""

    def __init__(self, memory: PieceMemory, embed: Embed) -> None:
        self._memory, self._embed = memory, embed
        self._row_of = {text: row for row, text in enumerate(memory.texts)}
        self.fresh: dict[str, np.ndarray] = {}  # pieces the embedder returned
        self.served: set[str] = set()  # pieces the memory returned
        self._staged: set[str] = set()  # fresh pieces whose vector a staged row carries already
        self.remembered = 0  # pieces served from the memory, not the embedder

    def lacking(self, texts: Iterable[str]) -> list[str]:
        """``texts`` the memory does not hold (what a rewrite still asks the embedder for)."""
        return [text for text in texts if text not in self._row_of]

    def __call__(self, texts: list[str]) -> np.ndarray:
        rows = [self._row_of.get(text, -1) for text in texts]
        missing = [i for i, row in enumerate(rows) if row < 0]
        found = [i for i, row in enumerate(rows) if row >= 0]
        fresh = np.asarray(self._embed([texts[i] for i in missing]), np.float32) if missing else None
        remembered = self._memory.vectors([rows[i] for i in found]) if found else None
        width = next(v.shape[1] for v in (fresh, remembered, np.empty((0, 0))) if v is not None)
        vectors = np.empty((len(texts), width), np.float32)
        if remembered is not None:
            vectors[found] = remembered
            self.served.update(texts[i] for i in found)
        if fresh is not None:
            vectors[missing] = fresh
            self.fresh.update(zip([texts[i] for i in missing], fresh, strict=True))
        self.remembered += len(found)
        return vectors

    def staged(self, table: str, communities: Sequence[int], pieces: Sequence[Sequence[str]]) -> pa.Table:
        """Rows of `STAGED_SCHEMA`: each community's pieces (of ``table``) this lookup returned; a
        piece the memory lacked carries its vector on its first row of this lookup (the others, and
        the memory's pieces, an empty list)."""
        rows = [
            (c, text)
            for c, found in zip(communities, pieces, strict=True)
            for text in dict.fromkeys(found)
            if text in self.fresh or text in self.served
        ]
        vectors = []
        for _, text in rows:
            first = text in self.fresh and text not in self._staged
            self._staged.add(text)
            vectors.append(self.fresh[text] if first else np.empty(0, np.float32))
        offsets = np.cumsum([0, *(len(v) for v in vectors)], dtype=np.int32)
        flat = np.concatenate(vectors) if vectors else np.empty(0, np.float32)
        return pa.table(
            {
                "table": pa.array([PIECE_TABLES.index(table)] * len(rows), pa.int8()),
                "community": pa.array([c for c, _ in rows], pa.int64()),
                "text": pa.array([t for _, t in rows], pa.string()),
                "vector": pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.float32())),
            },
            schema=STAGED_SCHEMA,
        )


def communities_of(column: pa.ChunkedArray | pa.Array, positions: Sequence[int]) -> list[int]:
    """The community numbers at ``positions`` of a reports table's ``community`` column."""
    return pc.take(column, pa.array(positions, pa.int64())).to_pylist() if positions else []
