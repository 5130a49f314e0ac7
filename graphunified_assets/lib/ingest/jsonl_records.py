"""Reading JSONL(.gz) files line by line: one document per line, a bad line never hides the others.

Each line is either a record (a JSON object with a non-empty string ``text``) or an issue that
names the line and the fix. Both the scan and the reader go through here, so they agree on
which records exist.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# A file of garbage would otherwise report every line; past this many, one summary issue.
MAX_ISSUES_PER_FILE = 50
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
    issues = 0
    seen: dict[str, int] = {}
    empty = True
    try:
        with _open(path) as lines:
            for number, raw in enumerate(lines, start=1):
                if number == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if not raw.strip():
                    continue  # blank lines (a trailing newline, spacing) are not records
                empty = False
                item = _parse_line(raw, number, seen)
                if isinstance(item, JsonlIssue):
                    issues += 1
                    if issues > MAX_ISSUES_PER_FILE:
                        continue
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


def _open(path: Path) -> io.BufferedIOBase:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return path.open("rb")


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
