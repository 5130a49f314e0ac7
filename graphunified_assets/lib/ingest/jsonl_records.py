"""Reading JSONL(.gz) files line by line: one document per line, a bad line never hides the others.

Each line is either a record (a JSON object with a non-empty string ``text``) or an issue that
names the line and the fix. Both the scan and the reader go through here, so they agree on
which records exist.

A scan costs bounded time and memory whatever the file holds: a line over `MAX_LINE_BYTES`, a
compressed file inflating more than `MAX_RATIO` times (a 204 KB .gz of 100 M lines stalled the
whole batch for 10 minutes; a 1 MB one inflating to a 1 GB line peaked at 3.1 GB), more than
`MAX_INFLATED_BYTES` in all, or more than `MAX_BAD_LINES` bad or blank lines (and more of them
than records) stop
the file's reading with one issue saying why; records before that point are kept, as for a
file damaged part-way.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

# A file of garbage would otherwise report every line; past this many, one summary issue.
MAX_ISSUES_PER_FILE = 50
MAX_LINE_BYTES = 64 * 2**20  # one document; a longer line is not read into memory at all
MAX_INFLATED_BYTES = 16 * 2**30
MAX_RATIO = 100  # gzip of text is 3-10x, of repetitive JSON tens; a bomb is ~1000x
RATIO_CHECK_AFTER = 8 * 2**20  # small files may be any ratio
MAX_BAD_LINES = 10_000
_BOM = b"\xef\xbb\xbf"
_KNOWN_FIELDS = ("id", "title", "text")


@dataclass(frozen=True)
class JsonlRecord:
    line: int  # 1-based
    record_id: str  # the "id" field as a string, or "line-<N>" when it has none
    title: str
    text: str
    extra: dict[str, object]  # every field besides id/title/text
    content_hash: str


@dataclass(frozen=True)
class JsonlIssue:
    line: int | None  # None: the problem is with the whole file
    reason: str


def iter_jsonl(path: Path) -> Iterator[JsonlRecord | JsonlIssue]:
    """Records and issues of a .jsonl or .jsonl.gz file, in line order."""
    issues = records = blank = inflated = 0
    seen: dict[str, int] = {}
    empty = True
    try:
        with path.open("rb") as compressed:
            lines: IO[bytes] = _inflating(path, compressed)
            for number in itertools.count(1):
                raw = lines.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                inflated += len(raw)
                stop = _over_limits(
                    raw, number, inflated, compressed.tell() if lines is not compressed else 0
                )
                if stop is None and issues + blank > MAX_BAD_LINES and issues + blank > records:
                    stop = f"more than {MAX_BAD_LINES} bad or blank lines by line {number}, more than records"
                if stop is not None:
                    yield JsonlIssue(None, f"{stop}; stopped reading the file there")
                    empty = False  # said why already
                    break
                if number == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if not raw.strip():
                    blank += 1
                    continue  # blank lines (a trailing newline, spacing) are not records
                empty = False
                item = _parse_line(raw, number, seen)
                if isinstance(item, JsonlIssue):
                    issues += 1
                    if issues > MAX_ISSUES_PER_FILE:
                        continue
                else:
                    records += 1
                yield item
    except (OSError, EOFError, zlib.error) as error:
        # gzip.BadGzipFile is an OSError; records read before the damage are kept.
        yield JsonlIssue(None, f"cannot be read ({error}); check the file, re-create or re-compress it")
        return
    if empty:
        yield JsonlIssue(None, "no records (empty file); add one JSON object per line or remove the file")
    if issues > MAX_ISSUES_PER_FILE:
        hidden = issues - MAX_ISSUES_PER_FILE
        yield JsonlIssue(None, f"{hidden} more bad lines not listed; fix the ones listed and check the file")


def _inflating(path: Path, file: IO[bytes]) -> IO[bytes]:
    if path.name.lower().endswith(".gz"):
        return cast(IO[bytes], gzip.GzipFile(fileobj=file, mode="rb"))
    return file


def _over_limits(raw: bytes, number: int, inflated: int, compressed: int) -> str | None:
    """Why reading must stop at this line, or None. ``compressed``: bytes read from a .gz (else 0)."""
    if len(raw) > MAX_LINE_BYTES:
        return f"line {number} is longer than {MAX_LINE_BYTES >> 20} MB (split the record or remove it)"
    if inflated > MAX_INFLATED_BYTES:
        return f"more than {MAX_INFLATED_BYTES >> 30} GB of text by line {number} (split the file)"
    if compressed and inflated > RATIO_CHECK_AFTER and inflated > MAX_RATIO * compressed:
        return (
            f"{compressed} compressed bytes inflate to {inflated} by line {number}, over {MAX_RATIO} "
            "times: a decompression bomb, not documents"
        )
    return None


def _parse_line(raw: bytes, number: int, seen: dict[str, int]) -> JsonlRecord | JsonlIssue:
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        return JsonlIssue(
            number, f"not valid UTF-8 (byte {error.start} of the line); re-save the file as UTF-8"
        )
    except json.JSONDecodeError as error:
        return JsonlIssue(
            number, f"not valid JSON ({error.msg} at column {error.colno}); fix or remove the line"
        )
    except RecursionError:  # arrays or objects nested thousands deep: it failed the whole batch
        return JsonlIssue(number, "JSON nested too deeply to parse; flatten the record or remove the line")
    if not isinstance(value, dict):
        return JsonlIssue(number, f'a JSON {_kind(value)}, not an object; write each line as {{"text": ...}}')
    problem = _field_problem(value)
    if problem:
        return JsonlIssue(number, problem)
    record_id = _record_id(value.get("id"), number)
    if record_id in seen:
        return JsonlIssue(
            number,
            f'duplicate id "{record_id}" (first on line {seen[record_id]}); give each record a unique id',
        )
    seen[record_id] = number
    content = {k: v for k, v in value.items() if k != "id"}  # the id is already part of the document id
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    try:
        encoded = canonical.encode("utf-8")
        record_id.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate "\ud800" would break every table write downstream
        return JsonlIssue(number, "contains an invalid \\u escape (a lone surrogate); fix or remove it")
    return JsonlRecord(
        line=number,
        record_id=record_id,
        title=value.get("title") or "",
        text=value["text"],
        extra={k: v for k, v in value.items() if k not in _KNOWN_FIELDS},
        content_hash=hashlib.sha256(encoded).hexdigest(),
    )


def _field_problem(value: dict[str, object]) -> str | None:
    text = value.get("text")
    if text is None:
        return 'field "text" is missing; every record needs {"text": "..."}'
    if not isinstance(text, str):
        return f'field "text" is a JSON {_kind(text)}, not a string; put the document text in it as a string'
    if not text.strip():
        return 'field "text" is empty; add text or remove the line'
    title = value.get("title")
    if title is not None and not isinstance(title, str):
        return f'field "title" is a JSON {_kind(title)}, not a string; make it a string or drop it'
    record_id = value.get("id")
    if record_id is not None and (isinstance(record_id, bool) or not isinstance(record_id, str | int)):
        return f'field "id" is a JSON {_kind(record_id)}; make it a string or an integer, or drop it'
    return None


def _record_id(value: object, line: int) -> str:
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return f"line-{line}"


def _kind(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
