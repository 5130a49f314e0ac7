"""What the context filters and ordering know about one retrieved context: risk, document, section, code."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphunified_query.core.risk import LOW, RiskLevel, highest
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.results import RetrievalResult

SECTION_SEPARATOR = " > "
# A fenced block (or one of its fences, when a chunk cuts the block) or HTML pre/code markup.
_CODE = re.compile(r"^ {0,3}(?:```|~~~)|<pre[\s>]|<code[\s>]", re.MULTILINE | re.IGNORECASE)
_JSONL_ID = re.compile(r"\.jsonl(?:\.gz)?#", re.IGNORECASE)
_EXTENSION = re.compile(r"\.([A-Za-z0-9]+)$")
_TYPE_ALIASES = {"markdown": "md"}


@dataclass(frozen=True)
class ContextFacts:
    risk_level: RiskLevel
    risk_flags: tuple[str, ...]
    document_id: str | None  # None: a context no chunk backs (e.g. a global-search map point)
    source_type: str  # "md", "txt", "pdf", "jsonl", … "" when unknown
    section: str
    has_code: bool


def facts_of(snapshot: Snapshot, result: RetrievalResult) -> ContextFacts:
    """A context's facts. Its risk is that of every chunk behind it: an entity or relationship
    description was extracted from all of its supporting chunks, so one injected chunk taints it."""
    chunks = snapshot.chunks
    rows = snapshot.chunk_rows(_backing_chunks(result))
    anchor = snapshot.chunk_row.get(result.chunk_id) if result.chunk_id else None
    flags = tuple(dict.fromkeys(flag for row in rows for flag in chunks.flags(row)))
    document_id = result.document_id or (chunks.document_ids[anchor] if anchor is not None else None)
    return ContextFacts(
        risk_level=highest(chunks.risk_level(row) for row in rows) if rows else LOW,
        risk_flags=flags,
        document_id=document_id,
        source_type=source_type(document_id) if document_id else "",
        section=chunks.sections[anchor] if anchor is not None else "",
        has_code=contains_code(result.text),
    )


def _backing_chunks(result: RetrievalResult) -> tuple[str, ...]:
    if result.kind == "chunk" and result.chunk_id:
        return (result.chunk_id,)
    return tuple(dict.fromkeys((*result.chunk_ids, *((result.chunk_id,) if result.chunk_id else ()))))


def source_type(document_id: str) -> str:
    """The input format a document id stands for: its file extension, "jsonl" for JSONL records."""
    if _JSONL_ID.search(document_id):
        return "jsonl"
    match = _EXTENSION.search(document_id)
    if not match:
        return ""
    extension = match.group(1).lower()
    return _TYPE_ALIASES.get(extension, extension)


def contains_code(text: str) -> bool:
    return bool(_CODE.search(text))


def section_matches(section: str, prefix: str) -> bool:
    """Whether a heading path starts with ``prefix``, whole headings only, ignoring case."""
    wanted = _headings(prefix)
    return _headings(section)[: len(wanted)] == wanted


def _headings(path: str) -> list[str]:
    return [h.strip().casefold() for h in path.split(SECTION_SEPARATOR.strip()) if h.strip()]
