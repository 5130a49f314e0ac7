"""Finding the documents of an input folder: their ids, formats and content hashes.

The scan is cheap enough to run on every sensor tick; it reads each file once to hash it and
catches the input problems that can be seen without parsing (encoding, empty, malformed JSONL).
Problems are returned, never raised, so one bad file never stops the others.

Files of one format with identical bytes are one document: the shallowest name (then the first
in path order) is indexed, the others are kept as its ``also`` names, so retrieval cites them all
without a second parse, embedding or extraction. The primary's content hash covers those names,
so adding, editing or deleting a copy re-runs it (from the caches) and every name stays or
becomes indexed. JSONL records are never merged: each line's id is its own passage.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from graphunified_assets.lib.ingest.input_text import InputError, decode_text
from graphunified_assets.lib.ingest.jsonl_records import JsonlIssue, iter_jsonl
from graphunified_assets.lib.ingest.scan_memory import ScanMemory, stat_key

Format = Literal["txt", "md", "jsonl", "pdf"]

# Dagster rejects partition keys with control characters or "..." (its range syntax).
_UNSAFE_IN_KEY = re.compile(r"[\x00-\x1f\x7f-\x9f]|\.{3,}")
_PDF_HEADER_WINDOW = 1024  # the spec lets "%PDF-" appear anywhere in the first 1 KB


@dataclass(frozen=True)
class SourceDocument:
    document_id: str
    path: Path  # absolute
    format: Format
    content_hash: str
    line: int | None = None  # 1-based line of a JSONL record
    also: tuple[str, ...] = ()  # ids of other files with the same bytes, indexed as this one


@dataclass(frozen=True)
class InputProblem:
    source: str  # "relative/path" or "relative/path:LINE"
    reason: str  # what is wrong and what to do about it


@dataclass(frozen=True)
class ScanResult:
    documents: dict[str, SourceDocument]
    problems: list[InputProblem]
    duplicates: dict[str, str] = field(default_factory=dict)  # copy's id -> the indexed id

    def aliases(self) -> dict[str, list[str]]:
        """Indexed id -> the other names of the same file, for citations."""
        return {key: list(doc.also) for key, doc in self.documents.items() if doc.also}


def scan_input(input_dir: Path, remembered: Path | None = None) -> ScanResult:
    """Every supported document under ``input_dir`` (recursive, sorted), plus the problems found.
    ``remembered``: the home's record of the last scan (`ScanMemory`): files unchanged since are
    not read again.

    Raises only when the folder itself is missing: reporting an empty corpus instead would make
    the caller delete everything that is indexed.
    """
    root = Path(input_dir)
    if not root.is_dir():
        raise FileNotFoundError(
            f"input folder {root} does not exist or is not a folder; create it or fix the path"
        )
    root = root.resolve()
    documents: dict[str, SourceDocument] = {}
    problems: list[InputProblem] = []
    memory = ScanMemory.load(remembered, root) if remembered is not None else ScanMemory(str(root))
    scanned = set()
    for rel, path, fmt in _walk(root, root, (root,), problems):
        scanned.add(rel)
        for found in _scanned(rel, path, fmt, memory):
            if isinstance(found, InputProblem):
                problems.append(found)
            elif found.document_id in documents:
                problems.append(
                    _problem(
                        rel,
                        found.line,
                        f'same document id as another input ("{found.document_id}"); rename one of them',
                    )
                )
            else:
                documents[found.document_id] = found
    if remembered is not None:
        memory.keep_only(scanned)
        memory.save(remembered)
    documents, duplicates = _merge_copies(documents)
    return ScanResult(documents, problems, duplicates)


def document_format(name: str) -> Format | None:
    """The format a file name stands for, None for files that are not documents."""
    lower = name.lower()
    if lower.endswith((".jsonl", ".jsonl.gz")):
        return "jsonl"
    if lower.endswith((".md", ".markdown")):
        return "md"
    if lower.endswith(".txt"):
        return "txt"
    if lower.endswith(".pdf"):
        return "pdf"
    return None


def partition_safe(key: str) -> str:
    """``key`` with control characters and "..." percent-escaped, as Dagster partition keys require."""
    return _UNSAFE_IN_KEY.sub(lambda m: "".join(f"%{ord(c):02X}" for c in m.group()), key)


def jsonl_document_id(rel: str, record_id: str) -> str:
    return partition_safe(f"{rel}#{record_id}")


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path``, with every symlink followed, lies under the (resolved) ``root``."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # symlink loops raise RuntimeError on 3.11
        return False


def _symlink_problem(path: Path, root: Path) -> str | None:
    """Why a symlink is refused: it loops, or it leads outside the input folder; None if fine."""
    try:
        inside = path.resolve().is_relative_to(root)
    except RuntimeError:  # Python 3.11 reports a loop this way
        return "symlink loop (the link leads back to itself); remove the link"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "symlink loop (the link leads back to itself); remove the link"
        return f"symlink cannot be followed ({error.strerror}); fix or remove the link"
    return None if inside else "symlink to outside the input folder, refused; copy the file in instead"


def _walk(
    folder: Path, root: Path, ancestors: tuple[Path, ...], problems: list[InputProblem]
) -> Iterator[tuple[str, Path, Format]]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as error:
        problems.append(
            _problem(_rel(folder, root), None, f"cannot list folder ({error.strerror}); fix its permissions")
        )
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        rel = _rel(path, root)
        is_dir = _is_dir(entry)
        fmt = None if is_dir else document_format(entry.name)
        if not is_dir and fmt is None:
            continue  # not a document: skipped silently
        if entry.is_symlink() and (link_problem := _symlink_problem(path, root)):
            problems.append(_problem(rel, None, link_problem))
        elif not _valid_name(rel):
            problems.append(
                _problem(
                    rel.encode("utf-8", "replace").decode(), None, "file name is not valid UTF-8; rename it"
                )
            )
        elif is_dir:
            real = path.resolve()
            if real in ancestors:
                problems.append(
                    _problem(rel, None, "symlink loop (links to a folder containing it); remove the link")
                )
            else:
                yield from _walk(path, root, (*ancestors, real), problems)
        elif fmt is not None:
            yield rel, path, fmt


def _scanned(rel: str, path: Path, fmt: Format, memory: ScanMemory) -> list[SourceDocument | InputProblem]:
    """What ``_scan_file`` finds in the file, from ``memory`` while the file is unchanged."""
    key = stat_key(path)
    if (findings := memory.recall(rel, key)) is not None:
        return [
            SourceDocument(item[1], path, item[2], item[3], item[4])
            if item[0] == "d"
            else InputProblem(*item[1:])
            for item in findings
        ]
    found = list(_scan_file(rel, path, fmt))
    memory.remember(
        rel,
        key,
        path,
        [
            ["d", f.document_id, f.format, f.content_hash, f.line]
            if isinstance(f, SourceDocument)
            else ["p", f.source, f.reason]
            for f in found
        ],
    )
    return found


def _scan_file(rel: str, path: Path, fmt: Format) -> Iterator[SourceDocument | InputProblem]:
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            yield _problem(rel, None, "not a regular file; replace it with a file or remove it")
            return
        if fmt == "jsonl":
            yield from _scan_jsonl(rel, path)
            return
        data = path.read_bytes()
    except OSError as error:
        yield _problem(rel, None, f"cannot be read ({error.strerror}); check it exists and its permissions")
        return
    try:
        if fmt == "pdf":
            _check_pdf(data)
        else:
            decode_text(data)
    except InputError as error:
        yield _problem(rel, None, str(error))
        return
    yield SourceDocument(partition_safe(rel), path, fmt, hashlib.sha256(data).hexdigest())


def _scan_jsonl(rel: str, path: Path) -> Iterator[SourceDocument | InputProblem]:
    for item in iter_jsonl(path):
        if isinstance(item, JsonlIssue):
            yield _problem(rel, item.line, item.reason)
        else:
            yield SourceDocument(
                jsonl_document_id(rel, item.record_id), path, "jsonl", item.content_hash, item.line
            )


def _merge_copies(
    documents: dict[str, SourceDocument],
) -> tuple[dict[str, SourceDocument], dict[str, str]]:
    """Whole files with the same bytes folded into the first of them (see the module docstring)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for key, doc in documents.items():
        # The same bytes as .md and as .txt parse differently: not copies. A name reached through
        # a symlink inside the folder is the user's own second name for the file: indexed as such.
        if doc.line is None and not _through_symlink(doc.path):
            groups.setdefault((doc.format, doc.content_hash), []).append(key)
    duplicates: dict[str, str] = {}
    for keys in groups.values():
        if len(keys) < 2:
            continue
        # The shallowest name (then the first in path order) is indexed: stable, and the "original"
        # rather than a nested backup copy.
        primary, *copies = sorted(keys, key=lambda key: (key.count("/"), key))
        names = "\x00".join(copies)
        folded = hashlib.sha256(f"{documents[primary].content_hash}\x00also\x00{names}".encode()).hexdigest()
        documents[primary] = replace(documents[primary], content_hash=folded, also=tuple(copies))
        for key in copies:
            duplicates[key] = primary
            del documents[key]
    return documents, duplicates


def _through_symlink(path: Path) -> bool:
    try:
        return path.resolve() != path
    except (OSError, RuntimeError):
        return True


def _check_pdf(data: bytes) -> None:
    if not data:
        raise InputError("empty file; add content to it or remove it")
    if b"%PDF-" not in data[:_PDF_HEADER_WINDOW]:
        raise InputError("not a PDF (no %PDF- header); re-export it as PDF or fix its extension")


def _problem(rel: str, line: int | None, reason: str) -> InputProblem:
    source = partition_safe(rel)
    return InputProblem(source if line is None else f"{source}:{line}", reason)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else "."


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks; broken links count as files
    except OSError:
        return False


def _valid_name(rel: str) -> bool:
    try:
        rel.encode("utf-8")  # undecodable bytes in a name arrive as lone surrogates
    except UnicodeEncodeError:
        return False
    return True
