"""Content-addressed results of the offline extractor: unchanged text is never extracted twice.

The LLM extractors get this from their response cache (same request, same answer). The offline
extractor makes no request, so its results are cached here under the SHA-256 of what decides
them: the chunk's text and title, the extraction settings, and a digest of the extractor's own
source. A chunk that reappears under another document id, in an edited document, or in a
re-partitioned run is then free, and an upgrade that changes the extractor's code re-extracts.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from graphunified_assets.lib.extraction.records import (
    ChunkExtraction,
    ChunkText,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
    Extractor,
)
from graphunified_query.core.providers.llm_cache import LLMCache, request_key


def source_digest(*modules: ModuleType) -> str:
    """SHA-256 of the modules' source: changes exactly when the code that decides results does."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode("utf-8"))
    return digest.hexdigest()


class CachedExtractor:
    """Implements ``Extractor``: looks each chunk up by content, extracts only the misses (in one
    batch, so the inner extractor keeps its batching), and stores what it extracted."""

    def __init__(self, inner: Extractor, cache: LLMCache, *, fingerprint: Mapping[str, Any]) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.fingerprint = dict(fingerprint)
        self.hits = 0
        self.misses = 0

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        keys = [self.key(chunk) for chunk in chunks]
        cached = self.cache.get_many(keys)  # one query, one transaction: a commit per chunk cost more
        found = {i: cached[key] for i, key in enumerate(keys) if key in cached}
        missing = [i for i in range(len(chunks)) if i not in found]
        extracted = dict(zip(missing, self.inner.extract([chunks[i] for i in missing]), strict=True))
        if extracted:
            self.cache.put_many({keys[i]: _to_entry(result) for i, result in extracted.items()})
        self.hits += len(found)
        self.misses += len(missing)
        return [
            extracted[i] if i in extracted else _from_entry(chunk.chunk_id, found[i])
            for i, chunk in enumerate(chunks)
        ]

    def key(self, chunk: ChunkText) -> str:
        content = {"text": chunk.text, "title": chunk.title}
        return request_key({"extractor": self.name, **self.fingerprint, **content})


def _to_entry(result: ChunkExtraction) -> dict[str, Any]:
    return {
        "entities": [e.model_dump() for e in result.entities],
        "relationships": [r.model_dump() for r in result.relationships],
        "facts": [f.model_dump() for f in result.facts],
        "dropped_records": result.dropped_records,
    }


def _from_entry(chunk_id: str, entry: dict[str, Any]) -> ChunkExtraction:
    """The cached records under the asking chunk's id (the same text may have had another)."""
    return ChunkExtraction(
        chunk_id=chunk_id,
        entities=tuple(ExtractedEntity.model_validate(e) for e in entry["entities"]),
        relationships=tuple(ExtractedRelationship.model_validate(r) for r in entry["relationships"]),
        facts=tuple(ExtractedFact.model_validate(f) for f in entry["facts"]),
        dropped_records=int(entry.get("dropped_records", 0)),
    )
