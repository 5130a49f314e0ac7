"""Hostile .jsonl(.gz) files cost bounded time and memory and fail with one issue saying why.

Before: a 204 KB .jsonl.gz of 100 M bad lines stalled `index` for over 600 s (the whole batch
waited) and a 1 MB .gz inflating to one 1 GB line peaked at 3.1 GB. The limits are lowered
here so each case runs in a moment; the checks are the same at full size.
"""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from graphunified_assets.lib.ingest import jsonl_records
from graphunified_assets.lib.ingest.jsonl_records import JsonlIssue, JsonlRecord, iter_jsonl


def _gz(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data, compresslevel=9))
    return path


def _read(path: Path) -> tuple[list[JsonlRecord], list[JsonlIssue], float]:
    started = time.perf_counter()
    items = list(iter_jsonl(path))
    seconds = time.perf_counter() - started
    return (
        [i for i in items if isinstance(i, JsonlRecord)],
        [i for i in items if isinstance(i, JsonlIssue)],
        seconds,
    )


def test_a_gz_of_a_million_bad_lines_stops_at_the_bad_line_cap(tmp_path: Path) -> None:
    path = _gz(tmp_path / "bad.jsonl.gz", b"x\n" * 1_000_000)
    records, issues, seconds = _read(path)
    assert not records and seconds < 3.0  # every line parsed took tens of seconds
    stopped = [i for i in issues if "stopped reading" in i.reason]
    assert stopped and "more than 10000 bad or blank lines by line 10002" in stopped[0].reason
    assert stopped[0].line is None


def test_good_records_before_many_bad_lines_are_kept(tmp_path: Path) -> None:
    good = b"".join(b'{"id": %d, "text": "doc"}\n' % i for i in range(20_000))
    records, issues, _ = _read(_gz(tmp_path / "mixed.jsonl.gz", good + b"x\n" * 15_000))
    assert len(records) == 20_000 and not any("stopped" in i.reason for i in issues)


def test_one_huge_line_is_refused_without_reading_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl_records, "MAX_LINE_BYTES", 2**20)
    monkeypatch.setattr(jsonl_records, "RATIO_CHECK_AFTER", 2**40)  # the line cap alone
    path = _gz(tmp_path / "one-line.jsonl.gz", b'{"text": "' + b"a" * 50_000_000 + b'"}\n')
    records, issues, seconds = _read(path)
    assert not records and [i.reason for i in issues] == [
        "line 1 is longer than 1 MB (split the record or remove it); stopped reading the file there"
    ]
    assert seconds < 2.0


def test_a_gz_of_blank_lines_stops_at_the_same_cap(tmp_path: Path) -> None:
    head = b'{"id": "kept", "text": "a real document"}\n'
    records, issues, seconds = _read(_gz(tmp_path / "blank.jsonl.gz", head + b"\n" * 5_000_000))
    assert [r.record_id for r in records] == ["kept"] and seconds < 3.0
    assert "bad or blank lines by line 10003" in issues[-1].reason


def test_a_decompression_bomb_of_records_stops_at_the_ratio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl_records, "RATIO_CHECK_AFTER", 2**20)
    line = b'{"text": "' + b"a" * 1000 + b'"}\n'
    path = _gz(tmp_path / "bomb.jsonl.gz", line * 40_000)  # 40 MB from ~40 KB
    records, issues, seconds = _read(path)
    assert len(records) < 10_000 and seconds < 3.0
    assert "a decompression bomb, not documents; stopped reading" in issues[-1].reason


def test_ordinary_compressed_files_are_read_whole(tmp_path: Path) -> None:
    lines = b"".join(
        b'{"id": %d, "text": "document %d about rivers and towns"}\n' % (i, i) for i in range(50_000)
    )
    records, issues, _ = _read(_gz(tmp_path / "docs.jsonl.gz", lines))
    assert len(records) == 50_000 and not issues


def test_a_line_nested_100000_deep_is_one_issue_and_the_others_read(tmp_path: Path) -> None:
    """json.loads raised RecursionError on it, out of the scan: `index` failed as a whole."""
    deep = b'{"text": "x", "meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"id": "a", "text": "fine"}\n' + deep + b'\n{"id": "b", "text": "also fine"}\n')
    records, issues, _ = _read(path)
    assert [r.record_id for r in records] == ["a", "b"]
    assert [(i.line, i.reason) for i in issues] == [
        (2, "JSON nested too deeply to parse; flatten the record or remove the line")
    ]
