"""Bad input through the real entry points: one clear error naming the input, or a correct result.

One folder holds every kind of bad document beside good ones and is indexed once through
`python -m graphunified_assets index` (in process); the queries then go through the `ask` CLI,
`QueryEngine` and the HTTP server against that index.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from graphunified_assets.cli.main import main as index_main
from graphunified_assets.lib.ingest import chunking
from graphunified_assets.lib.ingest.sources import scan_input
from graphunified_query.cli import main as ask_main
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers import load_tokenizer
from graphunified_query.engine.query_engine import QueryEngine, RequestError
from graphunified_query.server.app import create_app
from tests.conftest import SAMPLE_DOCS
from tests.serving import serving

LONG_LINE = " ".join(f"word{i % 97}" for i in range(14_000))[:100_000]  # one 100K-character line
BLOB_LINE = "QUJD" * 5_000  # 20K characters without a space: one "word" to the tokenizer
GOOD = {
    **SAMPLE_DOCS,
    "numbers.txt": "3 14 15 92 65\n2.718 28 18\n1 1 2 3 5 8 13 21\n",
    "code.md": "```python\ndef double(x: int) -> int:\n    return x * 2\n```\n",
    "fremd.txt": "Der Harrow trat 1894 über die Ufer. 河流在一八九四年泛滥。 Река разлилась весной.\n",
    "long-line.txt": LONG_LINE,
    "blob.txt": BLOB_LINE,
}
COPY = "copies/mill-copy.md"  # the same bytes as mill.md
# file -> words its failure reason must contain
BAD = {
    "empty.txt": "empty file",
    "blank.md": "only whitespace",
    "binary.txt": "binary content",
    "latin1.txt": "not valid UTF-8",
    "mixed.md": "not valid UTF-8 (byte 19, line 2)",
    "corpus.jsonl:2": "not valid JSON",
    "escape.txt": "symlink to outside the input folder",
    "outside-dir": "symlink to outside the input folder",
}


def _write(root: Path, rel: str, content: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def _bad_folder(root: Path, outside: Path) -> None:
    for rel, text in GOOD.items():
        _write(root, rel, text)
    _write(root, COPY, SAMPLE_DOCS["mill.md"])
    _write(root, "empty.txt", b"")
    _write(root, "blank.md", b"  \n\t\n")
    _write(root, "binary.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    _write(root, "latin1.txt", "Caf\xe9 au lait\n".encode("latin-1"))
    _write(root, "mixed.md", "# Caf\u00e9 ok\n".encode() + "then caf\xe9\n".encode("latin-1"))
    records = [{"id": "r1", "title": "Good", "text": "The first record."}, {"id": "r3", "text": "The third."}]
    _write(root, "corpus.jsonl", f"{json.dumps(records[0])}\n{{oops\n{json.dumps(records[1])}\n")
    _write(outside, "secret.txt", "outside the input folder\n")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "outside-dir").symlink_to(outside, target_is_directory=True)
    (root / "inside-link.md").symlink_to(root / "people" / "thomas-hale.md")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    base = tmp_path_factory.mktemp("bad-input")
    root, home = base / "input", base / "home"
    _bad_folder(root, base / "outside")
    home.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        capture = _Capture()
        with capture:
            code = index_main(["index", "--input", str(root), "--home", str(home)])
            code_status = index_main(["status", "--home", str(home)])
        assert code == 0 and code_status == 0
        yield root, home, capture.text


class _Capture:
    """stdout and stderr of the CLI (Dagster's log handlers hold sys.stderr: swap the objects)."""

    def __enter__(self) -> _Capture:
        import io
        import sys

        self._saved = sys.stdout, sys.stderr
        self._buffer = io.StringIO()
        sys.stdout = sys.stderr = self._buffer
        return self

    def __exit__(self, *_: object) -> None:
        import sys

        sys.stdout, sys.stderr = self._saved
        self.text = self._buffer.getvalue()


def _documents(home: Path) -> dict[str, dict[str, Any]]:
    folder = HomeLayout.at(home).partition_dir("documents")
    rows = [row for path in folder.glob("*.parquet") for row in pq.read_table(path).to_pylist()]
    return {row["id"]: row for row in rows}


def _chunks(home: Path, document_id: str) -> list[dict[str, Any]]:
    path = HomeLayout.at(home).partition_path("text_units", document_id)
    return sorted(pq.read_table(path).to_pylist(), key=lambda r: r["chunk_index"])


def test_every_bad_file_is_reported_by_name_and_the_good_ones_index_intact(
    built: tuple[Path, Path, str],
) -> None:
    _, home, output = built
    assert "Traceback" not in output
    status = output[output.rindex("documents searchable") :]
    for source, words in BAD.items():
        line = next((ln for ln in status.splitlines() if f"] {source}:" in ln), None)
        assert line is not None, f"{source} missing from status:\n{status}"
        assert words in line and ";" in line  # what is wrong; what to do
    documents = _documents(home)
    expected = {*GOOD, "inside-link.md", "corpus.jsonl#r1", "corpus.jsonl#r3"}
    assert set(documents) == expected  # the copy is not a document of its own; nothing outside
    for rel, text in GOOD.items():
        assert documents[rel]["text"] == text, rel
    assert documents["corpus.jsonl#r3"]["text"] == "The third."
    for rel in GOOD:
        chunks = _chunks(home, rel)
        assert "".join(c["text"][_overlap(chunks, i) :] for i, c in enumerate(chunks)) == GOOD[rel]


def _overlap(chunks: list[dict[str, Any]], i: int) -> int:
    return 0 if i == 0 else chunks[i - 1]["end_char"] - chunks[i]["start_char"]


def test_long_lines_split_into_bounded_chunks(built: tuple[Path, Path, str]) -> None:
    _, home, _ = built
    for rel in ("long-line.txt", "blob.txt"):
        chunks = _chunks(home, rel)
        assert len(chunks) > 4, rel
        assert max(c["end_char"] - c["start_char"] for c in chunks) < 6_000, rel
        assert any("oversized_paragraph:medium" in c["risk_flags"] for c in chunks)


def test_duplicate_files_are_indexed_once_and_cited_under_both_names(
    built: tuple[Path, Path, str],
) -> None:
    _, home, _ = built
    assert not HomeLayout.at(home).partition_path("text_units", COPY).exists()
    engine = QueryEngine.open(home)
    response = engine.ask("Who founded the Hale Mill?", "naive", 3, retrieve_only=True)
    top = response.contexts[0]
    assert top.document_id == "mill.md"
    assert top.source == f"mill.md (also: {COPY}) > Hale Mill"
    assert top.metadata["also_sources"] == [COPY]
    assert sum(c.document_id == "mill.md" for c in response.contexts) == 1  # not two slots for one text


def test_editing_or_deleting_one_copy_keeps_every_name_indexed(tmp_path: Path) -> None:
    text = "# Same\n\nIdentical text.\n"
    _write(tmp_path, "a.md", text)
    _write(tmp_path, "b.md", text)
    _write(tmp_path, "c.txt", text)  # another format parses differently: its own document
    scan = scan_input(tmp_path)
    assert set(scan.documents) == {"a.md", "c.txt"} and scan.duplicates == {"b.md": "a.md"}
    assert scan.aliases() == {"a.md": ["b.md"]}
    merged_hash = scan.documents["a.md"].content_hash
    _write(tmp_path, "b.md", text + "Edited.\n")
    edited = scan_input(tmp_path)
    assert set(edited.documents) == {"a.md", "b.md", "c.txt"} and not edited.duplicates
    assert edited.documents["a.md"].content_hash != merged_hash  # its citations change: redone
    _write(tmp_path, "b.md", text)
    (tmp_path / "a.md").unlink()
    deleted = scan_input(tmp_path)
    assert set(deleted.documents) == {"b.md", "c.txt"} and not deleted.duplicates


def test_segmented_tokenization_gives_the_same_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    tokenizer = load_tokenizer()
    text = ("Hale Mill, 1862.\nRiver  Harrow\t河流泛滥。 " * 40) + "x" * 250 + " tail é\n"
    whole = tokenizer.encode(text, add_special_tokens=False).offsets
    expected = []
    for start, end in whole:  # a word over 100 characters (one [UNK]) counts in 8-character pieces
        long = end - start > 100
        expected += [(p, min(p + 8, end)) for p in range(start, end, 8)] if long else [(start, end)]
    monkeypatch.setattr(chunking, "_SEGMENT_CHARS", 37)
    segmented = chunking.Offsets.of(text, tokenizer)
    assert len(chunking.segment_bounds(text, 37)) > 20
    assert [segmented[i] for i in range(len(segmented))] == expected


def _ask(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = ask_main(["ask", *args])
    except SystemExit as exit_:  # argparse's own errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("",), "the question is empty"),
        (("   \n",), "the question is empty"),
        (("x" * 10_001,), "more than 10,000"),
        (("Who?", "--top-k", "0"), "top_k is 0; use a number from 1 to 1000"),
        (("Who?", "--top-k", "-3"), "top_k is -3"),
        (("Who?", "--top-k", "1000000000"), "top_k is 1000000000"),
        (("Who?", "--top-k", "1e9"), "invalid int value: '1e9'"),
        (("Who?", "--strategy", "bm42"), "unknown strategy 'bm42'"),
    ],
)
def test_bad_queries_are_exit_2_with_the_input_named(
    built: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str], args: tuple[str, ...], words: str
) -> None:
    code, out, err = _ask(capsys, *args, "--home", str(built[1]), "--retrieve-only")
    assert code == 2 and words in err and not out


@pytest.mark.parametrize("question", ["?!... ;;", "Q" * 10_000, "Wer gründete die Hale Mill? 谁创立了磨坊？"])
def test_odd_but_valid_questions_get_results(
    built: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str], question: str
) -> None:
    code, out, err = _ask(capsys, question, "--home", str(built[1]), "--json", "--strategy", "hybrid")
    assert code == 0, err
    response = json.loads(out)
    assert response["answer"] and response["contexts"]


def test_engine_refuses_bad_queries_with_the_field_named(built: tuple[Path, Path, str]) -> None:
    engine = QueryEngine.open(built[1])
    for question, top_k, field in [("", None, "question"), ("Who?", 0, "top_k"), ("Who?", 10**9, "top_k")]:
        with pytest.raises(RequestError) as error:
            engine.ask(question, "naive", top_k)
        assert error.value.field == (field,)
    with pytest.raises(RequestError, match="unknown strategy 'bm42'; choose one of: naive"):
        engine.retrieve("Who?", "bm42")
    assert len(engine.ask("Who founded the mill?", "naive", 1000, retrieve_only=True).contexts) > 0


@pytest.fixture(scope="module")
def base_url(built: tuple[Path, Path, str]) -> Iterator[str]:
    with serving(create_app(QueryEngine.open(built[1]))) as (host, port):
        yield f"http://{host}:{port}"


def _post(base_url: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        base_url + "/retrieve", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        assert "Traceback" not in text
        return error.code, json.loads(text)


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        # The engine's own words, as the CLI prints them: one check for every entry point.
        ({"question": ""}, "question", "the question is empty"),
        ({"question": "  "}, "question", "the question is empty"),
        ({"question": "x" * 10_001}, "question", "more than 10,000"),
        ({"question": "Who?", "top_k": 0}, "top_k", "use a number from 1 to 1000"),
        ({"question": "Who?", "top_k": -1}, "top_k", "use a number from 1 to 1000"),
        ({"question": "Who?", "top_k": 10**9}, "top_k", "use a number from 1 to 1000"),
        ({"question": "Who?", "strategy": "bm42"}, "strategy", "unknown strategy 'bm42'"),
    ],
)
def test_http_bad_queries_are_422_naming_the_field(
    base_url: str, body: dict[str, Any], field: str, words: str
) -> None:
    status, reply = _post(base_url, body)
    assert status == 422
    assert reply["detail"][0]["loc"][:2] == ["body", field] and words in reply["detail"][0]["msg"]


def test_http_serves_odd_but_valid_questions(base_url: str) -> None:
    status, reply = _post(base_url, {"question": "?!...", "strategy": "naive", "top_k": 1000})
    assert status == 200 and reply["contexts"]
    status, reply = _post(base_url, {"question": "Who founded the Hale Mill?", "strategy": "naive"})
    assert status == 200 and reply["contexts"][0]["source"].startswith(f"mill.md (also: {COPY})")


def test_invalid_settings_name_the_setting_and_file(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "settings.yaml").write_text("chunking:\n  size: -5\nquery: {top_k: many}\n")
    assert index_main(["index", "--input", str(input_dir), "--home", str(home)]) == 2
    index_err = capsys.readouterr().err
    code, _, ask_err = _ask(capsys, "Who?", "--home", str(home))
    assert code == 2
    for err in (index_err, ask_err):
        assert "chunking.size" in err and "query.top_k" in err and "settings.yaml" in err
    (home / "settings.yaml").write_text("chunking: [1\n")
    code, _, err = _ask(capsys, "Who?", "--home", str(home))
    assert code == 2 and "settings.yaml is not valid YAML" in err
