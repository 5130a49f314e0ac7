"""Other names of a document: input files with the same bytes, indexed once under the first name.

The `documents` asset writes the whole input folder's map (indexed id -> its copies' ids) on every
run, atomically; the query engine reads it once and adds the copies to each context's citation,
``a.md (also: b.md) > Section``, and to ``metadata["also_sources"]`` (`context/aliases.py`). An
entry whose document is no longer indexed is ignored, so a stale map never invents a source.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from graphunified_query.core.artifacts import ALIASES_FILE
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import write_text_atomic


def aliases_path(layout: HomeLayout) -> Path:
    return layout.tables / ALIASES_FILE


def write_aliases(layout: HomeLayout, aliases: Mapping[str, Sequence[str]]) -> None:
    payload = json.dumps({key: list(names) for key, names in sorted(aliases.items())}, ensure_ascii=False)
    write_text_atomic(aliases_path(layout), payload)


def read_aliases(layout: HomeLayout, indexed: Collection[str]) -> dict[str, tuple[str, ...]]:
    """The map for the documents in ``indexed``; {} when there is none or it is unreadable (the
    names are a courtesy in citations, never a reason to refuse a query)."""
    try:
        raw = json.loads(aliases_path(layout).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        key: tuple(str(name) for name in names)
        for key, names in raw.items()
        if key in indexed and isinstance(names, list) and names
    }
