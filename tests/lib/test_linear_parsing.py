"""Readers take linear time: a 2 MB single line, heading or not, parses in well under a second.

A 600 KB Markdown heading line took 242 s (backtracking in the heading expressions) while every
other document of the batch waited.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from graphunified_assets.lib.ingest.markdown_sections import MAX_NAME, outline
from graphunified_assets.lib.ingest.readers import read_documents
from graphunified_assets.lib.ingest.sources import scan_input

TWO_MB = 2_000_000
LINES = {
    "spaced words": "# " + "word " * (TWO_MB // 5),
    "spaces then text": "# " + " " * TWO_MB + "x",
    "hashes": "# " + "# " * (TWO_MB // 2) + "x",
    "tabs and hashes": "## " + "\t#" * (TWO_MB // 2),
    "front matter title": "---\ntitle: " + " " * TWO_MB + "x\n---\n",
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_2mb_heading_line_parses_in_under_a_second(name: str) -> None:
    started = time.perf_counter()
    outline(LINES[name])
    assert time.perf_counter() - started < 1.0


def test_a_2mb_heading_line_is_read_as_a_document(tmp_path: Path) -> None:
    (tmp_path / "long.md").write_text(LINES["spaced words"], encoding="utf-8")
    started = time.perf_counter()
    parsed, problems = read_documents(scan_input(tmp_path).documents.values(), tmp_path)
    assert time.perf_counter() - started < 2.0
    assert not problems and parsed[0].title.startswith("word word")


@pytest.mark.parametrize("name", sorted(LINES))
def test_titles_and_heading_paths_are_bounded(name: str) -> None:
    """Each chunk carries its section's heading path: a 2 MB heading made every chunk 2 MB."""
    parsed = outline(LINES[name])
    assert parsed.title is None or len(parsed.title) <= MAX_NAME
    assert all(len(heading) <= MAX_NAME for path, _, _ in parsed.sections for heading in path)
