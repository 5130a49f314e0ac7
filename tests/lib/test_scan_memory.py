"""scan_input with the home's record of the last scan: unchanged files are not read again, and
what it finds is always what a scan reading every file finds."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.ingest import scan_memory, sources
from graphunified_assets.lib.ingest.sources import ScanResult, scan_input
from tests.lib.test_sources import good_corpus, jsonl, write


def _found(scan: ScanResult) -> tuple[object, ...]:
    return (scan.documents, scan.problems, scan.duplicates)


def _read_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the scans from here on read (``_scan_file`` calls), in order."""
    read: list[str] = []
    scan_file = sources._scan_file

    def counted(rel: str, path: Path, fmt: sources.Format) -> Iterator[object]:
        read.append(rel)
        return scan_file(rel, path, fmt)

    monkeypatch.setattr(sources, "_scan_file", counted)
    return read


def test_an_unchanged_file_is_not_read_again_and_a_changed_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan_memory, "_SETTLING_NS", 0)
    root, record = tmp_path / "input", tmp_path / "home" / "input_scan.json"
    good_corpus(root)
    write(root, "bad.jsonl", jsonl({"id": "x", "text": "ok"}, "{not json"))
    read = _read_files(monkeypatch)
    first = scan_input(root, record)
    assert len(read) == 4 and first.problems  # every file read; the bad line is a problem

    read.clear()
    again = scan_input(root, record)
    assert read == [] and _found(again) == _found(first) == _found(scan_input(root))

    # Same size, modification time set back: the change time still tells.
    path = root / "data" / "records.jsonl"
    stat = path.stat()
    path.write_text(path.read_text().replace("one", "uno"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    read.clear()
    changed = scan_input(root, record)
    assert read == ["data/records.jsonl"]
    assert (
        changed.documents["data/records.jsonl#r1"].content_hash
        != first.documents["data/records.jsonl#r1"].content_hash
    )
    (root / "a.txt").unlink()
    assert _found(scan_input(root, record)) == _found(scan_input(root))
    assert "a.txt" not in json.loads(record.read_text())["files"]


def test_a_file_changed_moments_ago_is_read_again_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second write in the same clock tick leaves size and times as they were: such a file is
    not remembered until it has settled."""
    root, record = tmp_path / "input", tmp_path / "input_scan.json"
    write(root, "a.md", "# A\n\nalpha\n")
    read = _read_files(monkeypatch)
    scan_input(root, record)
    scan_input(root, record)
    assert read == ["a.md", "a.md"]


def test_a_record_of_another_folder_or_a_torn_one_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan_memory, "_SETTLING_NS", 0)
    record = tmp_path / "input_scan.json"
    for name in ("one", "two"):
        write(tmp_path / name, "a.md", f"# {name}\n")
    read = _read_files(monkeypatch)
    scan_input(tmp_path / "one", record)
    assert scan_input(tmp_path / "two", record).documents["a.md"].path == tmp_path / "two" / "a.md"
    record.write_text(record.read_text()[:20])
    assert scan_input(tmp_path / "two", record).documents["a.md"].path == tmp_path / "two" / "a.md"
    assert read == ["a.md", "a.md", "a.md"]


_NAMES = ["a.md", "b.md", "d/c.jsonl", "e.jsonl"]
_CONTENTS = st.sampled_from(
    [
        "# Title\n\ntext\n",
        "# Title\n\ntxet\n",  # same size, other bytes
        "",
        jsonl({"id": "r1", "text": "one"}, {"id": "r2", "text": "two"}),
        jsonl({"id": "r1", "text": "uno"}, "{broken"),
        jsonl({"id": "r1", "text": "one"}, {"id": "r1", "text": "again"}),
    ]
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a.md", "b.md", "d/c.jsonl", "e.jsonl"]), st.none() | _CONTENTS),
        max_size=8,
    )
)
def test_a_scan_with_the_record_finds_what_reading_every_file_finds(
    steps: list[tuple[str, str | None]],
) -> None:
    """Files written, rewritten (the same size too) and removed between scans."""
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan_memory, "_SETTLING_NS", 0)
        root, record = Path(folder) / "input", Path(folder) / "input_scan.json"
        root.mkdir()
        for tick, (rel, content) in enumerate(steps):
            path = root / rel
            if content is None:
                path.unlink(missing_ok=True)
            else:
                write(root, rel, content)
                # A distinct modification time per write: two writes in one clock tick are what
                # `_SETTLING_NS` guards against, switched off here.
                os.utime(path, ns=(0, 10**18 + tick))
            assert _found(scan_input(root, record)) == _found(scan_input(root))


def test_a_record_that_cannot_be_written_costs_a_full_scan_not_the_scan(tmp_path: Path) -> None:
    root = tmp_path / "input"
    write(root, "a.md", "# A\n\nalpha\n")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    record = blocked / "input_scan.json"  # its folder is a file: every write fails
    assert _found(scan_input(root, record)) == _found(scan_input(root))
