"""Text of a PDF, page by page, via pypdf. Scanned or locked PDFs become clear input errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pypdf import PdfReader
from pypdf.errors import DependencyError, PyPdfError

from graphunified_assets.lib.ingest.input_text import InputError


@dataclass(frozen=True)
class PdfText:
    title: str | None  # from the document metadata
    pages: tuple[str, ...]


class _NameTheFile(logging.Filter):
    """pypdf logs its own warnings ("Ignoring wrong pointing object") without saying which file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = f"{self.path}: {record.msg}"
        return True


@contextmanager
def _pypdf_logs_name(path: Path) -> Iterator[None]:
    # A parent's filters do not see its children's records: every pypdf module logger gets one.
    names = [n for n in list(logging.root.manager.loggerDict) if n == "pypdf" or n.startswith("pypdf.")]
    loggers, named = [logging.getLogger(n) for n in names], _NameTheFile(path)
    for logger in loggers:
        logger.addFilter(named)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(named)


def read_pdf(path: Path) -> PdfText:
    with _pypdf_logs_name(path):
        return _read_pdf(path)


def _read_pdf(path: Path) -> PdfText:
    try:
        with path.open("rb") as file:
            reader = PdfReader(file)
            _unlock(reader)
            pages = tuple(_page_text(reader, number) for number in range(len(reader.pages)))
            title = _metadata_title(reader)
    except PyPdfError as error:
        raise InputError(f"not a readable PDF ({error}); re-export or repair it") from None
    except DependencyError as error:
        raise InputError(
            f"cannot be decoded without an extra package ({error}); re-export it plainly"
        ) from None
    if not any(page.strip() for page in pages):
        raise InputError("no extractable text (scanned images?); OCR it first")
    return PdfText(title, pages)


def _unlock(reader: PdfReader) -> None:
    if not reader.is_encrypted:
        return
    try:
        # Many PDFs are encrypted with an owner password only and open with an empty user password.
        unlocked = bool(reader.decrypt(""))
    except (PyPdfError, DependencyError, NotImplementedError):  # AES needs the optional `cryptography`
        unlocked = False
    if not unlocked:
        raise InputError("encrypted PDF; save an unencrypted copy (or remove the password) and index that")


def _page_text(reader: PdfReader, number: int) -> str:
    try:
        return reader.pages[number].extract_text()
    except PyPdfError as error:
        raise InputError(f"page {number + 1} cannot be read ({error}); re-export or repair the PDF") from None


def _metadata_title(reader: PdfReader) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except PyPdfError:
        return None
    return title.strip() or None if isinstance(title, str) else None
