"""read_documents: titles, verbatim text, section offsets per format, and per-document failures."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from graphunified_assets.lib.ingest import readers
from graphunified_assets.lib.ingest.readers import ParsedDocument, Section, read_documents
from graphunified_assets.lib.ingest.sources import InputProblem, scan_input


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def parse(root: Path) -> tuple[dict[str, ParsedDocument], list[InputProblem]]:
    scan = scan_input(root)
    parsed, problems = read_documents(scan.documents.values(), root)
    return {d.document_id: d for d in parsed}, problems


def minimal_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A hand-written PDF: one Helvetica text line per page, byte offsets of the xref computed here."""
    font = 3 + 2 * len(pages)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    for i, text in enumerate(pages):
        stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode() if text else b""
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    if title:
        objects.append(f"<< /Title ({title}) >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info = b" /Info %d 0 R" % len(objects) if title else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref)
    return bytes(out)


def encrypted(pdf: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password, "owner-secret", algorithm="RC4-128")  # RC4 needs no optional package
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


MARKDOWN = """\
Intro before any heading.

# User Guide

Welcome.

```bash
# not a heading: a shell comment
echo hi
```

## Install ##

Steps.

   ### Linux
apt install
    # indented code, not a heading
## Usage
~~~~
## still code
~~~~
Use it.
# Appendix
"""


def test_markdown_sections_follow_the_heading_path(tmp_path: Path) -> None:
    write(tmp_path, "guide.md", MARKDOWN)
    doc = parse(tmp_path)[0]["guide.md"]
    assert doc.text == MARKDOWN  # verbatim, so offsets point into the file
    assert doc.title == "User Guide"
    assert [s.path for s in doc.sections] == [
        (),
        ("User Guide",),
        ("User Guide", "Install"),
        ("User Guide", "Install", "Linux"),
        ("User Guide", "Usage"),
        ("Appendix",),
    ]
    starts = [doc.text[s.start : s.end].splitlines()[0] for s in doc.sections]
    assert starts == [
        "Intro before any heading.",
        "# User Guide",
        "## Install ##",
        "   ### Linux",
        "## Usage",
        "# Appendix",
    ]
    _assert_tiles(doc)


def test_markdown_front_matter_title_and_stem_fallback(tmp_path: Path) -> None:
    write(tmp_path, "a.md", '---\ntitle: "From Front Matter"\ntags: [x]\n---\n## Heading\ntext\n')
    write(tmp_path, "h1_wins.md", "---\ntitle: Front\n---\n# First H1\n")
    write(tmp_path, "getting-started_guide.md", "no headings\n---\nat all\n")
    docs, problems = parse(tmp_path)
    assert problems == []
    assert docs["a.md"].title == "From Front Matter"
    assert docs["h1_wins.md"].title == "First H1"  # a first H1 comes before the front matter title
    assert [s.path for s in docs["a.md"].sections] == [(), ("Heading",)]
    assert docs["a.md"].sections[0] == Section((), 0, docs["a.md"].text.index("## Heading"))
    stem = docs["getting-started_guide.md"]
    assert stem.title == "Getting started guide"
    assert stem.sections == (Section((), 0, len(stem.text)),)


def test_markdown_offsets_count_characters_not_bytes(tmp_path: Path) -> None:
    text = "\ufeffé intro ünïcode\r\n# Café ☕\r\nbody\r\n"
    write(tmp_path, "u.md", text.encode("utf-8"))  # with a BOM and CRLF line ends
    doc = parse(tmp_path)[0]["u.md"]
    assert doc.text == text[1:]
    second = doc.sections[1]
    assert second.path == ("Café ☕",)
    assert doc.text[second.start :].startswith("# Café ☕\r\n")


def test_txt_title_is_a_short_first_line_else_the_stem(tmp_path: Path) -> None:
    write(tmp_path, "short.txt", "\n\n  Release notes  \nbody\n")
    write(tmp_path, "long_notes.txt", "x" * 150 + "\nbody\n")
    os.utime(tmp_path / "short.txt", (1_600_000_000, 1_600_000_000))
    docs, _ = parse(tmp_path)
    assert docs["short.txt"].title == "Release notes"
    assert docs["long_notes.txt"].title == "Long notes"
    short = docs["short.txt"]
    assert (short.format, short.source_path, short.metadata) == ("txt", "short.txt", {})
    assert short.modified_at == datetime.fromtimestamp(1_600_000_000, UTC)  # the file's, not the parse's
    assert short.sections == (Section((), 0, len(short.text)),)


def test_jsonl_records_keep_title_text_and_extra_fields(tmp_path: Path) -> None:
    lines = [
        {"id": "a", "title": "Alpha", "text": "first", "url": "https://x", "year": 2020},
        {"id": "b", "text": "no title"},
        {"title": "", "text": "empty title, no id"},
    ]
    write(tmp_path, "sub/set.jsonl", "".join(json.dumps(r) + "\n" for r in lines))
    docs, problems = parse(tmp_path)
    assert problems == []
    alpha, beta = docs["sub/set.jsonl#a"], docs["sub/set.jsonl#b"]
    assert (alpha.title, alpha.text, alpha.format, alpha.source_path) == (
        "Alpha",
        "first",
        "jsonl",
        "sub/set.jsonl",
    )
    assert alpha.metadata == {"url": "https://x", "year": 2020}
    assert alpha.sections == (Section(("Alpha",), 0, 5),)
    assert (beta.title, beta.metadata, beta.sections) == ("b", {}, (Section(("b",), 0, 8),))
    assert docs["sub/set.jsonl#line-3"].title == "line-3"


def test_jsonl_file_is_read_once_per_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "set.jsonl", "".join(json.dumps({"id": i, "text": f"t{i}"}) + "\n" for i in range(50)))
    calls: list[Path] = []
    real = readers.iter_jsonl

    def counting(path: Path) -> Iterator[object]:
        calls.append(path)
        return real(path)

    scan = scan_input(tmp_path)
    monkeypatch.setattr(readers, "iter_jsonl", counting)
    parsed, problems = read_documents(scan.documents.values(), tmp_path)
    assert len(parsed) == 50
    assert calls == [tmp_path / "set.jsonl"]
    assert problems == []


def test_content_hash_and_order_come_from_the_scan(tmp_path: Path) -> None:
    write(tmp_path, "b.txt", "bee\n")
    write(tmp_path, "a.md", "# A\n")
    write(tmp_path, "c.jsonl", '{"id": 1, "text": "x"}\n{"id": 2, "text": "y"}\n')
    scan = scan_input(tmp_path)
    sources = [scan.documents[k] for k in ["c.jsonl#2", "b.txt", "c.jsonl#1", "a.md"]]
    parsed, _ = read_documents(sources, tmp_path)
    assert [d.document_id for d in parsed] == ["c.jsonl#2", "b.txt", "c.jsonl#1", "a.md"]
    assert [d.content_hash for d in parsed] == [s.content_hash for s in sources]


def test_a_document_that_fails_to_parse_does_not_stop_the_others(tmp_path: Path) -> None:
    write(tmp_path, "good.md", "# Good\n")
    bad = write(tmp_path, "bad.txt", "fine at scan time\n")
    write(tmp_path, "broken.pdf", b"%PDF-1.4\nthis is not really a pdf\n")
    records = write(tmp_path, "set.jsonl", '{"id": "keep", "text": "k"}\n{"id": "gone", "text": "g"}\n')
    scan = scan_input(tmp_path)
    bad.write_bytes("caf\xe9".encode("latin-1"))  # changed between scan and read
    records.write_text('{"id": "new", "text": "n"}\n{"id": "keep", "text": "k"}\n', encoding="utf-8")
    parsed, problems = read_documents(scan.documents.values(), tmp_path)
    assert [d.document_id for d in parsed] == ["good.md", "set.jsonl#keep"]  # "keep" moved to line 2
    reasons = {p.source: p.reason for p in problems}
    assert set(reasons) == {"bad.txt", "broken.pdf", "set.jsonl:2"}
    assert "not valid UTF-8" in reasons["bad.txt"]
    assert "no longer in the file" in reasons["set.jsonl:2"]


def test_pdf_text_is_extracted_page_by_page(tmp_path: Path) -> None:
    write(tmp_path, "papers/two_pages.pdf", minimal_pdf(["Hello PDF world", "Second page here"], "A Paper"))
    write(tmp_path, "untitled-report.pdf", minimal_pdf(["Only page"]))
    docs, problems = parse(tmp_path)
    assert problems == []
    paper = docs["papers/two_pages.pdf"]
    assert (paper.title, paper.format) == ("A Paper", "pdf")
    assert "Hello PDF world" in paper.text and "Second page here" in paper.text
    assert [s.path for s in paper.sections] == [("Page 1",), ("Page 2",)]
    assert paper.text[paper.sections[1].start :].startswith("Second page here")
    assert paper.text[paper.sections[0].start : paper.sections[0].end].strip() == "Hello PDF world"
    _assert_tiles(paper)
    assert docs["untitled-report.pdf"].title == "Untitled report"


def test_textless_and_locked_pdfs_are_problems(tmp_path: Path) -> None:
    write(tmp_path, "scan.pdf", minimal_pdf(["", ""]))
    write(tmp_path, "locked.pdf", encrypted(minimal_pdf(["Top secret"]), user_password="pw"))
    write(tmp_path, "owner_only.pdf", encrypted(minimal_pdf(["Opens without a password"]), user_password=""))
    docs, problems = parse(tmp_path)
    reasons = {p.source: p.reason for p in problems}
    assert "OCR it first" in reasons["scan.pdf"]
    assert "encrypted PDF" in reasons["locked.pdf"]
    assert "Opens without a password" in docs["owner_only.pdf"].text


def test_files_that_became_symlinks_outside_are_refused_at_read_time(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    doc = write(corpus, "doc.txt", "inside\n")
    secret = write(tmp_path, "secret.txt", "outside\n")
    scan = scan_input(corpus)
    doc.unlink()
    doc.symlink_to(secret)
    parsed, problems = read_documents(scan.documents.values(), corpus)
    assert parsed == []
    assert [p.source for p in problems] == ["doc.txt"]
    assert "outside the input folder" in problems[0].reason


def _assert_tiles(doc: ParsedDocument) -> None:
    """Sections cover the text end to end without gaps or overlaps."""
    assert doc.sections[0].start == 0
    assert doc.sections[-1].end == len(doc.text)
    assert all(a.end == b.start for a, b in zip(doc.sections, doc.sections[1:], strict=False))


def test_a_symlink_loop_is_reported_as_a_loop_not_as_outside(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# Fine\n", encoding="utf-8")
    (tmp_path / "loop.md").symlink_to(tmp_path / "loop.md")
    (problem,) = scan_input(tmp_path).problems
    assert problem.source == "loop.md" and "symlink loop" in problem.reason


def test_pypdf_warnings_name_the_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from graphunified_assets.lib.ingest.pdf_text import _pypdf_logs_name

    path = tmp_path / "odd.pdf"
    with caplog.at_level(logging.WARNING), _pypdf_logs_name(path):
        logging.getLogger("pypdf._reader").warning("Ignoring wrong pointing object 6 0 (offset 0)")
    assert f"{path}: Ignoring wrong pointing object" in caplog.text
