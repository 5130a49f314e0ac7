"""scan_input: ids, formats, content hashes, path safety and input problems."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest

from graphunified_assets.lib.ingest.sources import InputProblem, ScanResult, partition_safe, scan_input

# Dagster's forbidden partition-key substrings (dagster/_core/definitions/partitions/utils/base.py).
DAGSTER_FORBIDDEN = ["...", "\a", "\b", "\f", "\n", "\r", "\t", "\v", "\0"]


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def jsonl(*records: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def good_corpus(root: Path) -> set[str]:
    """A few valid documents; every bad-input test checks these all survive."""
    write(root, "a.txt", "Alpha\n\nsome text\n")
    write(root, "guides/install.md", "# Install\n\nRun it.\n")
    write(root, "data/records.jsonl", jsonl({"id": "r1", "text": "one"}, {"id": "r2", "text": "two"}))
    return {"a.txt", "guides/install.md", "data/records.jsonl#r1", "data/records.jsonl#r2"}


def test_ids_for_nested_files_and_jsonl_lines(tmp_path: Path) -> None:
    write(tmp_path, "guides/linux/install.md", "# Install\n")
    write(tmp_path, "notes.markdown", "hello\n")
    write(tmp_path, "readme.TXT", "hello\n")
    write(tmp_path, "data/set.jsonl", jsonl({"id": "x", "text": "a"}, {"id": 7, "text": "b"}, {"text": "c"}))
    scan = scan_input(tmp_path)
    assert scan.problems == []
    assert list(scan.documents) == [
        "data/set.jsonl#x",
        "data/set.jsonl#7",
        "data/set.jsonl#line-3",
        "guides/linux/install.md",
        "notes.markdown",
        "readme.TXT",
    ]
    record = scan.documents["data/set.jsonl#line-3"]
    assert (record.line, record.format, record.path) == (3, "jsonl", tmp_path.resolve() / "data/set.jsonl")
    nested = scan.documents["guides/linux/install.md"]
    assert (nested.format, nested.line, nested.path.is_absolute()) == ("md", None, True)
    assert scan.documents["notes.markdown"].format == "md"
    assert scan.documents["readme.TXT"].format == "txt"


def test_hidden_and_unknown_files_are_skipped_silently(tmp_path: Path) -> None:
    expected = good_corpus(tmp_path)
    write(tmp_path, ".hidden.md", "# secret\n")
    write(tmp_path, ".git/HEAD.txt", "ref\n")
    write(tmp_path, "guides/.draft/wip.md", "# wip\n")
    write(tmp_path, "image.png", b"\x89PNG\0\0")
    write(tmp_path, "report.docx", b"PK\0\0")
    write(tmp_path, "Makefile", "all:\n")
    scan = scan_input(tmp_path)
    assert set(scan.documents) == expected
    assert scan.problems == []


BAD_INPUTS = [  # file name, content, expected problem source, words of its reason, records kept from the file
    ("empty.txt", b"", "empty.txt", "empty file", 0),
    ("blank.md", b"  \n\t\n  ", "blank.md", "only whitespace", 0),
    ("binary.txt", b"abc\0\x01\x02def", "binary.txt", "binary content", 0),
    (
        "latin1.txt",
        "line one\ncafé\n".encode("latin-1"),
        "latin1.txt",
        "not valid UTF-8 (byte 12, line 2)",
        0,
    ),
    ("utf16.md", "# hi\n".encode("utf-16"), "utf16.md", "UTF-16", 0),
    ("empty.jsonl", b"\n\n", "empty.jsonl", "no records", 0),
    ("empty.jsonl.gz", gzip.compress(b""), "empty.jsonl.gz", "no records", 0),
    ("fake.pdf", b"hello, not a pdf", "fake.pdf", "no %PDF- header", 0),
    (
        "bad.jsonl",
        jsonl({"text": "ok"}, '{"text": "broken",', {"text": "ok"}),
        "bad.jsonl:2",
        "not valid JSON",
        2,
    ),
    (
        "notext.jsonl",
        jsonl({"title": "t", "body": "x"}, {"text": "ok"}),
        "notext.jsonl:1",
        'field "text" is missing',
        1,
    ),
    (
        "numtext.jsonl",
        jsonl({"text": 5}, {"text": "ok"}),
        "numtext.jsonl:1",
        'field "text" is a JSON number',
        1,
    ),
    (
        "emptytext.jsonl",
        jsonl({"text": " "}, {"text": "ok"}),
        "emptytext.jsonl:1",
        'field "text" is empty',
        1,
    ),
    ("array.jsonl", jsonl([1, 2], {"text": "ok"}), "array.jsonl:1", "a JSON array, not an object", 1),
    (
        "dup.jsonl",
        jsonl({"id": "a", "text": "1"}, {"id": "a", "text": "2"}),
        "dup.jsonl:2",
        'duplicate id "a"',
        1,
    ),
    ("surrogate.jsonl", '{"text": "x\\ud800"}\n{"text": "ok"}\n', "surrogate.jsonl:1", "lone surrogate", 1),
]


@pytest.mark.parametrize(
    ("name", "content", "source", "reason", "kept"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS]
)
def test_each_bad_input_is_one_problem_and_the_rest_still_index(
    tmp_path: Path, name: str, content: str | bytes, source: str, reason: str, kept: int
) -> None:
    expected = good_corpus(tmp_path)
    write(tmp_path, f"sub/{name}", content)
    scan = scan_input(tmp_path)
    assert len(scan.problems) == 1, scan.problems
    problem = scan.problems[0]
    assert problem.source == f"sub/{source}"
    assert reason in problem.reason
    assert ";" in problem.reason  # every reason goes on to say what to do
    assert set(scan.documents) - expected == {k for k in scan.documents if k.startswith(f"sub/{name}#")}
    assert len(scan.documents) == len(expected) + kept


def test_a_bad_jsonl_line_keeps_the_other_lines(tmp_path: Path) -> None:
    write(
        tmp_path,
        "mixed.jsonl",
        jsonl({"id": 1, "text": "a"}, "not json", {"id": 1, "text": "dup"}, {"text": "c"}),
    )
    scan = scan_input(tmp_path)
    assert list(scan.documents) == ["mixed.jsonl#1", "mixed.jsonl#line-4"]
    assert [p.source for p in scan.problems] == ["mixed.jsonl:2", "mixed.jsonl:3"]
    assert "first on line 1" in scan.problems[1].reason


def test_utf8_bom_and_blank_jsonl_lines_are_accepted(tmp_path: Path) -> None:
    write(tmp_path, "bom.md", b"\xef\xbb\xbf# Title\n")
    write(tmp_path, "bom.jsonl", b'\xef\xbb\xbf{"id": "a", "text": "x"}\n\n  \n{"id": "b", "text": "y"}\r\n')
    scan = scan_input(tmp_path)
    assert scan.problems == []
    assert set(scan.documents) == {"bom.md", "bom.jsonl#a", "bom.jsonl#b"}
    assert scan.documents["bom.jsonl#b"].line == 4


def test_symlinks_escaping_the_folder_are_refused(tmp_path: Path) -> None:
    corpus, outside = tmp_path / "corpus", tmp_path / "outside"
    expected = good_corpus(corpus)
    write(outside, "secret.txt", "do not index\n")
    write(outside, "folder/more.md", "# more\n")
    (corpus / "link.txt").symlink_to(outside / "secret.txt")
    (corpus / "linked_dir").symlink_to(outside / "folder", target_is_directory=True)
    scan = scan_input(corpus)
    assert set(scan.documents) == expected
    assert {p.source for p in scan.problems} == {"link.txt", "linked_dir"}
    assert all("outside the input folder" in p.reason for p in scan.problems)


def test_symlinks_inside_the_folder_are_followed(tmp_path: Path) -> None:
    expected = good_corpus(tmp_path)
    (tmp_path / "alias.txt").symlink_to(tmp_path / "a.txt")
    (tmp_path / "handbook").symlink_to(tmp_path / "guides", target_is_directory=True)
    (tmp_path / "guides" / "loop").symlink_to(tmp_path / "guides", target_is_directory=True)
    scan = scan_input(tmp_path)
    assert set(scan.documents) == expected | {"alias.txt", "handbook/install.md"}
    assert scan.documents["alias.txt"].content_hash == scan.documents["a.txt"].content_hash
    # The loop is reported once per way into it, and the scan ends.
    assert {p.source for p in scan.problems} == {"guides/loop", "handbook/loop"}
    assert all("symlink loop" in p.reason for p in scan.problems)


def test_special_files_and_broken_links_are_problems_not_hangs(tmp_path: Path) -> None:
    expected = good_corpus(tmp_path)
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "gone.md").symlink_to(tmp_path / "missing.md")
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    scan = scan_input(tmp_path)
    assert set(scan.documents) == expected
    reasons = {p.source: p.reason for p in scan.problems}
    assert "file name is not valid UTF-8" in reasons["caf?.txt"]
    assert "not a regular file" in reasons["pipe.txt"]
    assert "cannot be read" in reasons["gone.md"]


def test_missing_input_folder_raises_instead_of_reporting_an_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        scan_input(tmp_path / "nope")


def test_content_hash_follows_the_content(tmp_path: Path) -> None:
    path = write(tmp_path, "doc.md", "# One\n")
    first = scan_input(tmp_path).documents["doc.md"].content_hash
    assert first == hashlib.sha256(b"# One\n").hexdigest()
    assert scan_input(tmp_path).documents["doc.md"].content_hash == first
    path.write_text("# Two\n", encoding="utf-8")
    assert scan_input(tmp_path).documents["doc.md"].content_hash != first


def test_changing_one_jsonl_line_changes_only_that_records_hash(tmp_path: Path) -> None:
    records = [{"id": f"r{i}", "title": f"T{i}", "text": f"text {i}", "lang": "en"} for i in range(3)]
    path = write(tmp_path, "set.jsonl", jsonl(*records))
    before = _hashes(scan_input(tmp_path))
    assert _hashes(scan_input(tmp_path)) == before
    records[1]["text"] = "edited"
    path.write_text(jsonl(*records), encoding="utf-8")
    after = _hashes(scan_input(tmp_path))
    assert [k for k in before if before[k] != after[k]] == ["set.jsonl#r1"]
    # Other fields count too: they are the record's raw_data.
    records[2]["lang"] = "de"
    path.write_text(jsonl(*records), encoding="utf-8")
    assert _hashes(scan_input(tmp_path))["set.jsonl#r2"] != after["set.jsonl#r2"]


def test_jsonl_hash_ignores_key_order_and_spacing(tmp_path: Path) -> None:
    path = write(tmp_path, "set.jsonl", '{"id": "a", "text": "x", "title": "t"}\n')
    before = _hashes(scan_input(tmp_path))
    path.write_text('{"title":"t","text":"x","id":"a"}\n', encoding="utf-8")
    assert _hashes(scan_input(tmp_path)) == before


def test_jsonl_gz_is_read_and_a_truncated_one_keeps_its_first_records(tmp_path: Path) -> None:
    texts = (hashlib.sha256(str(i).encode()).hexdigest() * 4 for i in range(200))  # compresses poorly
    body = gzip.compress(jsonl(*({"id": i, "text": t} for i, t in enumerate(texts))).encode())
    write(tmp_path, "full.jsonl.gz", body)
    write(tmp_path, "cut.jsonl.gz", body[: len(body) // 2])
    scan = scan_input(tmp_path)
    assert sum(k.startswith("full.jsonl.gz#") for k in scan.documents) == 200
    assert scan.documents["full.jsonl.gz#199"].format == "jsonl"
    kept = sum(k.startswith("cut.jsonl.gz#") for k in scan.documents)
    assert 0 < kept < 200
    assert [p.source for p in scan.problems] == ["cut.jsonl.gz"]
    assert "re-compress" in scan.problems[0].reason


def test_ids_are_valid_dagster_partition_keys(tmp_path: Path) -> None:
    write(tmp_path, "wait... what.md", "# x\n")
    write(tmp_path, "tab\there.txt", "x\n")
    write(tmp_path, "set.jsonl", jsonl({"id": "a...b\nc", "text": "x"}, {"id": "a..b", "text": "y"}))
    scan = scan_input(tmp_path)
    assert scan.problems == []
    assert set(scan.documents) == {
        "wait%2E%2E%2E what.md",
        "tab%09here.txt",
        "set.jsonl#a%2E%2E%2Eb%0Ac",
        "set.jsonl#a..b",
    }
    for key in scan.documents:
        assert not any(bad in key for bad in DAGSTER_FORBIDDEN)
    assert partition_safe("....") == "%2E%2E%2E%2E"


def test_escaped_id_colliding_with_a_real_one_is_a_problem(tmp_path: Path) -> None:
    write(tmp_path, "set.jsonl", jsonl({"id": "a...", "text": "x"}, {"id": "a%2E%2E%2E", "text": "y"}))
    scan = scan_input(tmp_path)
    assert list(scan.documents) == ["set.jsonl#a%2E%2E%2E"]
    assert scan.problems == [InputProblem("set.jsonl:2", scan.problems[0].reason)]
    assert "same document id" in scan.problems[0].reason


def test_garbage_jsonl_reports_a_bounded_number_of_problems(tmp_path: Path) -> None:
    write(tmp_path, "junk.jsonl", "nope\n" * 500 + '{"text": "last"}\n')
    scan = scan_input(tmp_path)
    assert list(scan.documents) == ["junk.jsonl#line-501"]
    assert len(scan.problems) == 51
    assert "450 more bad lines" in scan.problems[-1].reason


def test_scanning_a_large_gzipped_jsonl_yields_every_record(tmp_path: Path) -> None:
    records = ({"id": f"p-{i}", "title": f"Passage {i}", "text": "word " * 90} for i in range(12_600))
    write(tmp_path, "corpus.jsonl.gz", gzip.compress(jsonl(*records).encode()))
    scan = scan_input(tmp_path)  # its speed is measured in bench/ingest.py, not asserted here
    assert len(scan.documents) == 12_600
    assert len(set(scan.documents)) == 12_600


def _hashes(scan: ScanResult) -> dict[str, str]:
    return {k: d.content_hash for k, d in scan.documents.items()}
