"""A folder's chunks exactly as the `extractions` asset sees them (parsed, chunked, markup-free).

Tuning samples from these and the extraction report scores them, so both judge the text the
pipeline really extracts from, not the raw files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graphunified_assets.lib.extraction.plain_text import plain_text
from graphunified_assets.lib.extraction.records import ChunkText
from graphunified_assets.lib.ingest.chunking import chunk_text
from graphunified_assets.lib.ingest.readers import read_documents
from graphunified_assets.lib.ingest.sources import scan_input
from graphunified_query.core.providers import load_tokenizer
from graphunified_query.core.settings.model import ChunkingSettings
from graphunified_query.core.tables import contextual_text


@dataclass(frozen=True)
class CorpusChunk:
    document_id: str
    chunk: ChunkText


def corpus_chunks(input_dir: Path, chunking: ChunkingSettings) -> list[CorpusChunk]:
    """Every chunk of every readable document under ``input_dir``; unreadable files are skipped
    (``index`` reports them)."""
    scan = scan_input(input_dir)
    parsed, _ = read_documents(scan.documents.values(), input_dir)
    tokenizer = load_tokenizer()
    found: list[CorpusChunk] = []
    for document in parsed:
        sections = [(s.path, s.start, s.end) for s in document.sections]
        pieces = chunk_text(
            document.text,
            tokenizer=tokenizer,
            size=chunking.size,
            overlap=chunking.overlap,
            min_size=chunking.min_size,
            sections=sections,
        )
        for piece in pieces:
            text = plain_text(contextual_text(piece.section, piece.text))
            chunk_id = f"{document.document_id}#{piece.index}"
            title = piece.section.split(" > ")[-1]
            found.append(CorpusChunk(document.document_id, ChunkText(chunk_id, text, title=title)))
    return found
