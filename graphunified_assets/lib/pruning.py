"""Removing documents: their partition files in every per-document table and their state."""

from __future__ import annotations

from collections.abc import Iterable

from graphunified_assets.lib.index_state import IndexState
from graphunified_query.layout import HomeLayout, document_id_from_stem


def prune_partition_files(layout: HomeLayout, tables: Iterable[str], live_ids: set[str]) -> list[str]:
    """Delete per-document files of documents that are no longer partitions; return their ids."""
    removed: set[str] = set()
    for table in tables:
        folder = layout.partition_dir(table)
        if not folder.is_dir():
            continue
        for path in folder.glob("*.parquet"):
            document_id = document_id_from_stem(path.stem)
            if document_id not in live_ids:
                path.unlink(missing_ok=True)
                removed.add(document_id)
    if removed:
        IndexState(layout.index_state).forget(removed)
    return sorted(removed)
