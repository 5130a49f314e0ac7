"""Any legal path or JSONL id indexes: per-document files are named by a digest of the id.

Percent-encoded ids made file names over the 255-byte limit (ENAMETOOLONG) for a 36-character
Chinese file name, deep folders or a 300-character JSONL id, and that failed the whole batch.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest

from graphunified_assets.cli.main import main as index_main
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_query.core.layout import HomeLayout, is_partition_file_stem
from graphunified_query.core.providers.llm_cache import LLMCache
from tests.conftest import SAMPLE_DOCS

CHINESE = "河流泛滥的历史记录" * 4 + ".txt"  # 36 characters, 108 bytes, 324 once percent-encoded
DEEP = "/".join(f"folder{i}-" + "x" * 33 for i in range(7)) + "/deep.md"
LONG_ID = "record-" + "r" * 293  # a 300-character JSONL id


def _input(root: Path) -> None:
    for rel, text in {**SAMPLE_DOCS, CHINESE: "The River Harrow flooded Eastfold in 1894.\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / DEEP).parent.mkdir(parents=True, exist_ok=True)
    (root / DEEP).write_text("# Deep\n\nMillbrook lies downstream of the Hale Mill.\n", encoding="utf-8")
    record = {"id": LONG_ID, "title": "Long record", "text": "Thomas Hale sold wool in Millbrook."}
    (root / "records.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")


def _index(root: Path, home: Path) -> None:
    assert index_main(["index", "--input", str(root), "--home", str(home)]) == 0


def test_long_chinese_names_deep_folders_and_long_jsonl_ids_all_index(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "input"
    _input(root)
    _index(root, home)

    layout = HomeLayout.at(home)
    indexed = IndexState(layout.index_state).indexed_hashes()
    long_ids = {CHINESE, DEEP, f"records.jsonl#{LONG_ID}"}
    assert long_ids <= set(indexed), sorted(indexed)
    assert not IndexState(layout.index_state).failures()
    files = list(layout.partition_dir("text_units").glob("*.parquet"))
    assert files and all(is_partition_file_stem(p.stem) for p in files)
    chunk_ids = {row["document_id"] for p in files for row in pq.read_table(p).to_pylist()}
    assert long_ids <= chunk_ids  # the id itself is kept in the table

    cached = len(LLMCache(layout.extraction_cache))
    (root / DEEP).unlink()  # removing a long-named document prunes its files, state and cached text
    _index(root, home)
    assert DEEP not in IndexState(layout.index_state).indexed_hashes()
    assert not layout.partition_path("text_units", DEEP).exists()
    assert len(LLMCache(layout.extraction_cache)) == cached - 1  # its one chunk's extraction


def test_a_home_with_percent_encoded_file_names_is_renamed_not_reindexed(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "input"
    for rel, text in SAMPLE_DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    _index(root, home)
    layout = HomeLayout.at(home)
    for table in ("documents", "text_units", "chunk_embeddings", "extractions"):
        for document_id in SAMPLE_DOCS:  # how an older version named them
            layout.partition_path(table, document_id).rename(
                layout.partition_dir(table) / f"{quote(document_id, safe='')}.parquet"
            )
    capsys.readouterr()
    _index(root, home)
    assert "0 new, 0 changed, 0 incomplete, 0 removed, 3 unchanged" in capsys.readouterr().out
    for document_id in SAMPLE_DOCS:
        assert layout.partition_path("text_units", document_id).exists()
