"""Run an extractor over the gold fixture's documents and score it (see quality.py for the rules)."""

from __future__ import annotations

from pathlib import Path

from graphunified_assets.lib.extraction.gold import DEFAULT_GOLD, DOCS_DIR, load_gold
from graphunified_assets.lib.extraction.quality import QualityReport, score_all
from graphunified_assets.lib.extraction.records import ExtractedEntity, ExtractedRelationship, Extractor
from graphunified_assets.lib.tuning.corpus import corpus_chunks
from graphunified_query.core.settings.model import ChunkingSettings


def evaluate_extractor(
    extractor: Extractor, gold_folder: Path = DEFAULT_GOLD, chunking: ChunkingSettings | None = None
) -> QualityReport:
    """Every chunk of every gold document extracted as the pipeline would; a document's records are
    the union over its chunks."""
    gold = load_gold(gold_folder)
    chunks = corpus_chunks(gold_folder / DOCS_DIR, chunking or ChunkingSettings())
    results = extractor.extract([c.chunk for c in chunks])
    found: dict[str, tuple[list[ExtractedEntity], list[ExtractedRelationship]]] = {}
    for chunk, result in zip(chunks, results, strict=True):
        entities, relationships = found.setdefault(chunk.document_id, ([], []))
        entities.extend(result.entities)
        relationships.extend(result.relationships)
    return score_all(gold, found, extractor=extractor.name)
