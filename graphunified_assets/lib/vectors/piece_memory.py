"""The vectors of each community report's pieces, kept so that an update reads them in one file.

Composed report texts and points (`composed_vectors`) are made of pieces: a title, summary
sentences, finding headlines and explanation sentences. An update rewrites the reports of the
communities it touched (342 of 15K when one passage joins the 12.6K-passage index), and almost
every piece of a rewritten report is one its previous version had. Fetched from the embedding
cache (SQLite keyed by hash, 1.7 GB at that scale), each of those ~6K pieces is a random read of
the disk: 5-16 s of an update when the file's pages are not in memory. Here they are one file
read whole (123K pieces, ~0.2 GB at that scale).

What it holds: each distinct piece once with its vector, and references saying which community's
report text or points (``PIECE_TABLES``) were last computed from it. An update drops the
references of the communities it recomputes or removes and adds those it computed; a piece no
reference names leaves the file. A cache: a file of another model, torn or missing reads as
empty, and the pieces come from the embedding cache as before. Its vectors are the ones the
embedder returned, so a vector composed from them is the one composed without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_query.core.artifacts import REPORT_POINT_VECTORS, REPORT_VECTORS

Embed = Callable[[list[str]], np.ndarray]

REPORT_PIECES = "report_pieces.npz"  # in the home's cache folder: deleting it costs one update's reads
PIECE_TABLES = (REPORT_VECTORS, REPORT_POINT_VECTORS)  # a reference's table, by its position here
STAGED_SCHEMA = pa.schema(  # what a shard stages: one row per (table, community, piece)
    [
        pa.field("table", pa.int8()),
        pa.field("community", pa.int64()),
        pa.field("text", pa.string()),
        pa.field("vector", pa.list_(pa.float32())),
    ]
)


@dataclass
class PieceMemory:
    texts: list[str] = field(default_factory=list)  # each piece once
    matrix: np.ndarray = field(default_factory=lambda: np.empty((0, 0), np.float32))  # a row per text
    tables: np.ndarray = field(default_factory=lambda: np.empty(0, np.int8))  # per reference
    communities: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # per reference
    pieces: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # per reference: its row

    @classmethod
    def load(cls, path: Path, key: str) -> PieceMemory:
        """The memory saved under ``key`` (the model); empty when missing, torn or another key's."""
        try:
            with np.load(path) as arrays:
                if str(arrays["key"]) != key:
                    return cls()
                data = arrays["texts"].tobytes()
                ends = np.cumsum(arrays["lengths"]).tolist()
                texts = [data[a:b].decode() for a, b in zip([0, *ends], ends, strict=False)]
                memory = cls(
                    texts, arrays["matrix"], arrays["tables"], arrays["communities"], arrays["pieces"]
                )
        except Exception:  # missing, torn, not a zip, an older layout: read from the embedding cache
            return cls()
        sizes = {len(memory.tables), len(memory.communities), len(memory.pieces)}
        if len(texts) != len(memory.matrix) or len(sizes) != 1 or (memory.pieces >= len(texts)).any():
            return cls()
        return memory

    def save(self, path: Path, key: str) -> None:
        """Written beside ``path`` and renamed over it: a crash leaves the previous file."""
        encoded = [text.encode() for text in self.texts]
        staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with staged.open("wb") as handle:
                np.savez(
                    handle,
                    key=np.array(key),
                    lengths=np.array([len(b) for b in encoded], np.int64),
                    texts=np.frombuffer(b"".join(encoded), np.uint8),
                    matrix=self.matrix,
                    tables=self.tables,
                    communities=self.communities,
                    pieces=self.pieces,
                )
            os.replace(staged, path)
        finally:
            staged.unlink(missing_ok=True)

    def updated(self, dropped: Mapping[str, Collection[int] | None], staged: pa.Table | None) -> PieceMemory:
        """The memory after a commit: per table in ``dropped``, the references of those communities
        (None: all of the table's) go; ``staged`` (rows of `STAGED_SCHEMA`) come in; pieces no
        reference names are left out."""
        keep = np.ones(len(self.pieces), bool)
        for position, table in enumerate(PIECE_TABLES):
            if table in dropped:
                gone = self.tables == position
                if (communities := dropped[table]) is not None:
                    gone &= np.isin(self.communities, np.fromiter(communities, np.int64))
                keep &= ~gone
        texts, matrix = list(self.texts), self.matrix
        tables, communities, pieces = self.tables[keep], self.communities[keep], self.pieces[keep]
        if staged is not None and staged.num_rows:
            row_of = {text: row for row, text in enumerate(texts)}
            staged_texts = staged.column("text").to_pylist()
            first: dict[str, int] = {}  # each new piece's first staged row
            for i, text in enumerate(staged_texts):
                if text not in row_of:
                    first.setdefault(text, i)
            vectors = staged.column("vector").combine_chunks()
            flat = vectors.flatten().to_numpy(zero_copy_only=False).reshape(len(vectors), -1)
            row_of.update((text, len(texts) + i) for i, text in enumerate(first))
            texts += list(first)
            rows = flat[list(first.values())].astype(np.float32)
            matrix = np.concatenate([matrix, rows]) if len(self.texts) else rows
            tables = np.concatenate([tables, staged.column("table").to_numpy()])
            communities = np.concatenate([communities, staged.column("community").to_numpy()])
            pieces = np.concatenate([pieces, np.array([row_of[t] for t in staged_texts], np.int64)])
        used = np.unique(pieces)
        if len(used) == len(texts):
            return PieceMemory(texts, matrix, tables, communities, pieces)
        renumbered = np.full(len(texts), -1, np.int64)
        renumbered[used] = np.arange(len(used))
        return PieceMemory([texts[i] for i in used], matrix[used], tables, communities, renumbered[pieces])


class PieceLookup:
    """One shard's view of the memory: an `Embed` that serves remembered pieces from it and asks
    ``embed`` for the rest, noting every vector it returned so the shard can stage its pieces."""

    def __init__(self, memory: PieceMemory, embed: Embed) -> None:
        self._memory, self._embed = memory, embed
        self._row_of = {text: row for row, text in enumerate(memory.texts)}
        self.seen: dict[str, np.ndarray] = {}
        self.remembered = 0  # pieces served from the memory, not the embedder

    def __call__(self, texts: list[str]) -> np.ndarray:
        rows = [self._row_of.get(text, -1) for text in texts]
        missing = [i for i, row in enumerate(rows) if row < 0]
        fresh = np.asarray(self._embed([texts[i] for i in missing]), np.float32) if missing else None
        width = fresh.shape[1] if fresh is not None else self._memory.matrix.shape[1]
        vectors = np.empty((len(texts), width), np.float32)
        found = [i for i, row in enumerate(rows) if row >= 0]
        if found:
            vectors[found] = self._memory.matrix[[rows[i] for i in found]]
        if fresh is not None:
            vectors[missing] = fresh
        self.remembered += len(found)
        self.seen.update(zip(texts, vectors, strict=True))
        return vectors

    def staged(self, table: str, communities: Sequence[int], pieces: Sequence[Sequence[str]]) -> pa.Table:
        """Rows of `STAGED_SCHEMA`: each community's pieces (of ``table``) this lookup returned."""
        rows = [
            (c, text) for c, found in zip(communities, pieces, strict=True) for text in dict.fromkeys(found)
        ]
        rows = [(c, text) for c, text in rows if text in self.seen]
        vectors = [self.seen[text] for _, text in rows]
        flat = np.concatenate(vectors) if vectors else np.empty(0, np.float32)
        offsets = np.arange(0, len(flat) + 1, vectors[0].shape[0] if vectors else 1, dtype=np.int32)
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
