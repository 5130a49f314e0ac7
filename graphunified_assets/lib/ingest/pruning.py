"""Removing documents: their partition files in every per-document table and their state."""

from __future__ import annotations

from collections.abc import Iterable

from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_query.core.layout import HomeLayout, partition_file_stem


def prune_partition_files(layout: HomeLayout, tables: Iterable[str], live_ids: set[str]) -> list[str]:
    """Delete per-document files of documents that are no longer partitions; return their ids.

    File names are digests of the ids, so the ids of removed files come from the index state
    (a file whose id the state never recorded is removed all the same, reported by its name).
    """
    live_stems = {partition_file_stem(d) for d in live_ids}
    removed_stems: set[str] = set()
    for table in tables:
        folder = layout.partition_dir(table)
        if not folder.is_dir():
            continue
        for path in folder.glob("*.parquet"):
            if path.stem not in live_stems:
                path.unlink(missing_ok=True)
                removed_stems.add(path.stem)
    if not removed_stems:
        return []
    state = IndexState(layout.index_state)
    by_stem = {partition_file_stem(d): d for d in state.indexed_hashes() if d not in live_ids}
    known = [by_stem[stem] for stem in removed_stems if stem in by_stem]
    state.forget(known)
    return sorted(known + [stem for stem in removed_stems if stem not in by_stem])
