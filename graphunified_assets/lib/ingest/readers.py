"""Parsing scanned documents into text, a title and section headings with exact offsets.

Text is kept verbatim (Markdown is not stripped) so every offset points into the source.
A document that fails to parse becomes an InputProblem; the others still parse.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from graphunified_assets.lib.ingest.input_text import InputError, decode_text, humanize_stem
from graphunified_assets.lib.ingest.jsonl_records import JsonlIssue, JsonlRecord, iter_jsonl
from graphunified_assets.lib.ingest.markdown_sections import outline
from graphunified_assets.lib.ingest.sources import (
    InputProblem,
    SourceDocument,
    is_inside,
    jsonl_document_id,
    partition_safe,
)

_MAX_TXT_TITLE = 100  # a longer first line is a paragraph, not a title
_PAGE_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Section:
    path: tuple[str, ...]  # heading path, outermost first; () for text outside any heading
    start: int  # character offsets into the document text
    end: int


@dataclass(frozen=True)
class ParsedDocument:
    document_id: str
    title: str
    text: str
    format: str
    source_path: str  # relative to the input folder, posix
    content_hash: str  # the scan's hash, so the index records what the scan saw
    sections: tuple[Section, ...]
    modified_at: datetime  # the source file's modification time (UTC)
    metadata: dict[str, object] = field(default_factory=dict)  # JSONL fields besides id/title/text


def read_documents(
    sources: Iterable[SourceDocument],
    input_dir: Path,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[ParsedDocument], list[InputProblem]]:
    """Parse ``sources`` (from ``scan_input(input_dir)``); results keep the order of ``sources``.
    ``progress(done, total)`` follows each file (a JSONL file's documents count at once)."""
    root = Path(input_dir).resolve()
    by_file: dict[Path, list[SourceDocument]] = {}
    order: list[str] = []
    for source in sources:
        order.append(source.document_id)
        by_file.setdefault(source.path, []).append(source)
    parsed: dict[str, ParsedDocument] = {}
    problems: list[InputProblem] = []
    done = 0
    for path, group in by_file.items():
        if progress is not None and done:
            progress(done, len(order))
        done += len(group)
        rel = _relative(path, root)
        if not is_inside(path, root):  # re-checked: the file may have become a symlink since the scan
            problems.append(
                _problem(rel, None, "resolves outside the input folder, refused; copy the file in")
            )
            continue
        try:
            if group[0].format == "jsonl":
                found, failed = _read_jsonl(group, rel)
                parsed.update((doc.document_id, doc) for doc in found)
                problems += failed
            else:
                for source in group:
                    parsed[source.document_id] = _read_file(source, rel)
        except InputError as error:
            problems.append(_problem(rel, None, str(error)))
        except OSError as error:
            problems.append(
                _problem(rel, None, f"cannot be read ({error.strerror}); check it exists and its permissions")
            )
        except Exception as error:  # a parser bug or a malformed file must not stop the other documents
            problems.append(
                _problem(rel, None, f"could not be parsed ({type(error).__name__}: {error}); check the file")
            )
    if progress is not None and order:
        progress(len(order), len(order))
    return [parsed[key] for key in dict.fromkeys(order) if key in parsed], problems


def _read_file(source: SourceDocument, rel: str) -> ParsedDocument:
    stem = humanize_stem(source.path.stem)
    if source.format == "pdf":
        # Imported by the first PDF: pypdf is a quarter of a second of every `index` otherwise.
        from graphunified_assets.lib.ingest.pdf_text import read_pdf

        pdf = read_pdf(source.path)
        text, sections = _join_pages(pdf.pages)
        return _document(source, rel, pdf.title or stem, text, sections)
    text = decode_text(source.path.read_bytes())
    if source.format == "md":
        md = outline(text)
        return _document(source, rel, md.title or stem, text, tuple(Section(*s) for s in md.sections))
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    title = first_line if len(first_line) < _MAX_TXT_TITLE else stem
    return _document(source, rel, title, text, (Section((), 0, len(text)),))


def _read_jsonl(group: list[SourceDocument], rel: str) -> tuple[list[ParsedDocument], list[InputProblem]]:
    """The records of one file wanted by ``group``, reading the file once."""
    wanted = {source.document_id: source for source in group}
    lines = {source.line for source in group}
    found: list[ParsedDocument] = []
    problems: list[InputProblem] = []
    for item in iter_jsonl(group[0].path):
        if isinstance(item, JsonlIssue):
            # Issues on other lines belong to other documents; the scan reports those.
            if item.line is None or item.line in lines:
                problems.append(_problem(rel, item.line, item.reason))
            continue
        source = wanted.pop(jsonl_document_id(rel, item.record_id), None)
        if source is not None:  # looked up by id, so records that moved lines are still found
            found.append(_jsonl_document(source, rel, item))
    reported = {problem.source for problem in problems}
    for source in wanted.values():
        missing = _problem(rel, source.line, "record is no longer in the file; the next scan drops it")
        if missing.source not in reported:
            problems.append(missing)
    return found, problems


def _jsonl_document(source: SourceDocument, rel: str, record: JsonlRecord) -> ParsedDocument:
    title = record.title or record.record_id  # an untitled record is still named by something stable
    sections = (Section((title,), 0, len(record.text)),)
    return _document(source, rel, title, record.text, sections, record.extra)


def _join_pages(pages: tuple[str, ...]) -> tuple[str, tuple[Section, ...]]:
    """Pages joined by a blank line; each page's section runs up to the next page, so they tile."""
    text = _PAGE_SEPARATOR.join(pages)
    sections, start = [], 0
    for number, page in enumerate(pages, start=1):
        end = len(text) if number == len(pages) else start + len(page) + len(_PAGE_SEPARATOR)
        sections.append(Section((f"Page {number}",), start, end))
        start = end
    return text, tuple(sections)


def _document(
    source: SourceDocument,
    rel: str,
    title: str,
    text: str,
    sections: tuple[Section, ...],
    metadata: dict[str, object] | None = None,
) -> ParsedDocument:
    modified = datetime.fromtimestamp(source.path.stat().st_mtime, UTC)
    return ParsedDocument(
        source.document_id,
        title,
        text,
        source.format,
        rel,
        source.content_hash,
        sections,
        modified,
        metadata or {},
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _problem(rel: str, line: int | None, reason: str) -> InputProblem:
    source = partition_safe(rel)
    return InputProblem(source if line is None else f"{source}:{line}", reason)
