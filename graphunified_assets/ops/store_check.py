"""Before a rebuild: clear what killed writers left behind, and find damaged derived files.

Every table under `<home>/tables` is derived (from the input files, through the caches), so a
damaged one is removed and rebuilt rather than failing the run: a per-document file makes its
document "incomplete" (redone), a global one forces the global refresh. A Parquet file carries
the magic bytes `PAR1` at both ends; a truncated or overwritten file loses the trailing ones,
which a 4-byte read per file finds (~10 µs, so thousands of documents cost milliseconds).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from graphunified_assets.lib.ingest.index_state import IndexState, hashes_in_tables
from graphunified_query.core.layout import HomeLayout, is_partition_file_stem, legacy_document_id
from graphunified_query.core.stores.sqlite_files import check_rebuildable

_MAGIC = b"PAR1"


@dataclass(frozen=True)
class StoreCheck:
    leftovers: list[Path]  # temporary files of writers that were killed, removed
    damaged_documents: list[Path]  # per-document files removed: their documents are redone
    damaged_globals: list[Path]  # global tables removed: the global refresh rebuilds them

    def messages(self) -> list[str]:
        lines = [f"{p} was damaged (truncated or unreadable); removed, its document is re-indexed"
                 for p in self.damaged_documents]  # fmt: skip
        lines += [f"{p} was damaged (truncated or unreadable); removed, the global refresh rebuilds it"
                  for p in self.damaged_globals]  # fmt: skip
        if self.leftovers:
            lines.append(f"removed {len(self.leftovers)} temporary file(s) left by an interrupted run")
        return lines


def check_store(layout: HomeLayout, per_document_tables: Iterable[str]) -> StoreCheck:
    """Run while holding the home's index lock: no writer is active, so every temp file is stale."""
    leftovers = _remove_leftovers(layout)
    damaged_documents: list[Path] = []
    for table in per_document_tables:
        folder = layout.partition_dir(table)
        if folder.is_dir():
            _rename_legacy(layout, table)
            damaged_documents += _remove_damaged(folder.glob("*.parquet"))
    damaged_globals = _remove_damaged(layout.tables.glob("*.parquet")) if layout.tables.is_dir() else []
    return StoreCheck(leftovers, damaged_documents, damaged_globals)


def check_sqlite_files(layout: HomeLayout) -> list[str]:
    """Caches and the index state: a damaged one is moved aside (one line each, naming it) and
    starts empty, the state refilled from the documents table, so no run fails inside a step."""
    messages = []
    for path in (layout.extraction_cache, layout.embedding_cache, layout.llm_cache, layout.index_state):
        if (message := check_rebuildable(path)) is not None:
            messages.append(message)
            if path == layout.index_state:
                IndexState(path).mark_indexed(hashes_in_tables(layout.home))
    return messages


def _rename_legacy(layout: HomeLayout, table: str) -> None:
    """Homes written before digest file names: give each percent-encoded file its digest name."""
    for path in layout.partition_dir(table).glob("*.parquet"):
        if is_partition_file_stem(path.stem):
            continue
        target = layout.partition_path(table, legacy_document_id(path.stem))
        if target.exists():
            path.unlink(missing_ok=True)  # the digest-named file is the newer one
        else:
            path.rename(target)


def is_parquet_intact(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        return size >= 12 and os.pread(fd, 4, 0) == _MAGIC and os.pread(fd, 4, size - 4) == _MAGIC
    finally:
        os.close(fd)


def _remove_damaged(paths: Iterable[Path]) -> list[Path]:
    damaged = [p for p in sorted(paths) if not is_parquet_intact(p)]
    for path in damaged:
        path.unlink(missing_ok=True)
    return damaged


def _remove_leftovers(layout: HomeLayout) -> list[Path]:
    """Staging files of atomic writes (`.<name>.<random>.tmp`, `*.tmp.npz`, `bm25.tmp`, `bm25.old`,
    `ann/.<table>.faiss.tmp`)."""
    found: list[Path] = []
    if layout.tables.is_dir():
        found += layout.tables.rglob(".*.tmp")
    if layout.indexes.is_dir():
        found += [p for p in layout.indexes.iterdir() if ".tmp" in p.name or p.name.endswith(".old")]
        found += layout.indexes.glob("*/.*.tmp")  # a faiss index's staging copy (ann/.<table>.faiss.tmp)
    for path in found:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return found
