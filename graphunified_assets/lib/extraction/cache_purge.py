"""Forgetting the cached extractions of removed documents (cache/extractions.sqlite).

The offline extractor's cache is keyed by content, so nothing ever dropped a removed document's
entries: its text stayed on disk indefinitely. When `index` removes documents, the entries of
their chunks are deleted while their chunk files still exist. A chunk whose text another
document shares loses its entry too; that costs one local re-extraction, never a wrong result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from graphunified_assets.lib.extraction.extraction_cache import CachedExtractor
from graphunified_assets.lib.extraction.plain_text import plain_text
from graphunified_assets.lib.extraction.records import ChunkText, Extractor
from graphunified_query.core.artifacts import CHUNKS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.tables import contextual_text


def extraction_inputs(ids: Sequence[str], sections: Sequence[str], texts: Sequence[str]) -> list[ChunkText]:
    """What the extractor sees of each chunk: markup-free text under its heading (link targets
    never become entities)."""
    return [
        ChunkText(chunk_id, plain_text(contextual_text(section, text)), title=section.split(" > ")[-1])
        for chunk_id, section, text in zip(ids, sections, texts, strict=True)
    ]


def purge_removed(extractor: Extractor, layout: HomeLayout, removed: Iterable[str]) -> int:
    """Delete the cached extractions of ``removed`` documents' chunks; the number deleted."""
    if not isinstance(extractor, CachedExtractor):
        return 0  # LLM extractors keep responses in the LLM cache, keyed by whole requests
    keys = []
    for document_id in removed:
        path = layout.partition_path(CHUNKS, document_id)
        try:
            table = pq.read_table(path, columns=["id", "section", "text"])
        except (OSError, pa.ArrowException):
            continue  # no chunks (a failed or damaged document): nothing was cached for it
        chunks = extraction_inputs(*(table.column(c).to_pylist() for c in ("id", "section", "text")))
        keys += [extractor.key(chunk) for chunk in chunks]
    return extractor.cache.forget(keys)
