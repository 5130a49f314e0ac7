"""The pipeline's own bookkeeping, in SQLite so concurrent runs can share it safely.

- ``indexed_documents``: the content hash of every document as last written by the
  ``documents`` asset; the sensor and ``index`` compare the input folder against it.
- ``chunked_with``: the chunker's settings (`chunking.chunking_key`) each document was last
  chunked with: a change re-chunks it though its content hash did not change.
- ``embedded_with``: the embedding model (its recorded name) each document's chunks were last
  embedded with: another model (a changed `embedding.models`, or a new default) re-embeds them.
- ``failures``: every document or record that could not be processed, with the reason, so a
  bad file is visible (CLI, Dagster metadata) and retried on the next run instead of lost.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from graphunified_query.core.artifacts import DOCUMENTS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.sqlite_files import open_rebuildable
from graphunified_query.core.stores.sqlite_journal import set_journal_mode

_SCHEMA = """
create table if not exists indexed_documents (document_id text primary key, content_hash text not null);
create table if not exists failures (
    source text not null, stage text not null, reason text not null, recorded_at text not null,
    primary key (source, stage)
);
create table if not exists parse_failed (document_id text primary key, content_hash text not null);
create table if not exists chunked_with (document_id text primary key, chunking text not null);
create table if not exists embedded_with (document_id text primary key, model text not null);
"""


@dataclass(frozen=True)
class Failure:
    source: str
    stage: str
    reason: str
    recorded_at: str


class IndexState:
    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """``read_only``: `status` on a disk too full to open the state for writing (SQLite needs
        room for its WAL index): nothing is created or written, and the file is read as immutable."""
        self.path = path
        self.read_only = read_only
        self.repaired: str | None = None  # the warning naming the damaged file, or None
        if read_only:
            return
        db, self.repaired = open_rebuildable(path, lambda db: db.executescript(_SCHEMA), timeout=60)
        db.close()
        if self.repaired:
            self.mark_indexed(hashes_in_tables(path.parent))

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if not self.read_only:
            db = sqlite3.connect(self.path, timeout=60)
            set_journal_mode(db)  # WAL, but not on a network filesystem
        elif self.path.exists():  # immutable: SQLite needs no room for a WAL index to read it
            db = sqlite3.connect(f"file:{self.path}?immutable=1", uri=True)
        else:  # nothing indexed yet: an empty state
            db = sqlite3.connect(":memory:")
            db.executescript(_SCHEMA)
        try:
            with db:  # one transaction: committed on success, rolled back on error
                yield db
        finally:
            db.close()

    def indexed_hashes(self) -> dict[str, str]:
        with self._connect() as db:
            return dict(db.execute("select document_id, content_hash from indexed_documents"))

    def mark_indexed(self, hashes: dict[str, str]) -> None:
        with self._connect() as db:
            db.executemany("insert or replace into indexed_documents values (?, ?)", hashes.items())

    def forget(self, document_ids: Iterable[str]) -> None:
        ids = [(d,) for d in document_ids]
        with self._connect() as db:
            db.executemany("delete from indexed_documents where document_id = ?", ids)
            db.executemany("delete from parse_failed where document_id = ?", ids)
            db.executemany("delete from chunked_with where document_id = ?", ids)
            db.executemany("delete from embedded_with where document_id = ?", ids)

    def mark_chunked(self, document_ids: Iterable[str], chunking: str) -> None:
        with self._connect() as db:
            db.executemany(
                "insert or replace into chunked_with values (?, ?)", ((d, chunking) for d in document_ids)
            )

    def chunked_with(self) -> dict[str, str]:
        with self._connect() as db:
            return dict(db.execute("select document_id, chunking from chunked_with"))

    def mark_embedded(self, document_ids: Iterable[str], model: str) -> None:
        with self._connect() as db:
            db.executemany(
                "insert or replace into embedded_with values (?, ?)", ((d, model) for d in document_ids)
            )

    def embedded_with(self) -> dict[str, str]:
        with self._connect() as db:
            try:
                return dict(db.execute("select document_id, model from embedded_with"))
            except sqlite3.OperationalError:  # a state older than the table, opened read-only
                return {}

    def mark_parse_failed(self, hashes: dict[str, str], parsed: Iterable[str]) -> None:
        """Content that failed to parse: not retried (nor a refresh run) until it changes."""
        with self._connect() as db:
            db.executemany("delete from parse_failed where document_id = ?", ((d,) for d in parsed))
            db.executemany("insert or replace into parse_failed values (?, ?)", hashes.items())

    def parse_failed_hashes(self) -> dict[str, str]:
        with self._connect() as db:
            return dict(db.execute("select document_id, content_hash from parse_failed"))

    def retry_parse_failures(self) -> None:
        with self._connect() as db:
            db.execute("delete from parse_failed")

    def record_failures(self, stage: str, failures: Iterable[tuple[str, str]]) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._connect() as db:
            db.executemany(
                "insert or replace into failures values (?, ?, ?, ?)",
                ((source, stage, reason, now) for source, reason in failures),
            )

    def replace_failures(self, stage: str, failures: Iterable[tuple[str, str]]) -> None:
        """Make ``failures`` the whole list for ``stage`` (a fresh scan supersedes the last one)."""
        with self._connect() as db:
            db.execute("delete from failures where stage = ?", (stage,))
        self.record_failures(stage, failures)

    def clear_failures(self, stage: str, sources: Iterable[str]) -> None:
        with self._connect() as db:
            db.executemany(
                "delete from failures where stage = ? and source = ?", ((stage, s) for s in sources)
            )

    def failures(self) -> list[Failure]:
        with self._connect() as db:
            rows = db.execute(
                "select source, stage, reason, recorded_at from failures order by source, stage"
            )
            return [Failure(*row) for row in rows]


def hashes_in_tables(home: Path) -> dict[str, str]:
    """What `documents` wrote, from its files: a lost state costs no re-indexing (failures are
    found again by the next run, as their documents have no files)."""
    folder = HomeLayout.at(home).partition_dir(DOCUMENTS)
    hashes: dict[str, str] = {}
    for path in folder.glob("*.parquet") if folder.is_dir() else []:
        try:
            table = pq.read_table(path, columns=["id", "content_hash"])
        except (OSError, pa.ArrowException):
            continue  # a damaged file: its document is redone
        hashes.update(
            zip(table.column("id").to_pylist(), table.column("content_hash").to_pylist(), strict=True)
        )
    return hashes
