"""LightRAG compatibility: a home out as a working folder that lightrag-hku's own storages load,
and back in as a home every strategy can query."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from graphunified.cli import main
from graphunified_assets.ops.lightrag_io import export_lightrag, import_lightrag
from graphunified_query.core.layout import HomeLayout
from tests.conftest import SAMPLE_DOCS, voyage_resource
from tests.fakes.voyage_server import FakeVoyageServer
from tests.interop.home_checks import assert_query_indexes, our_rows

# lightrag-hku 1.5.7 in its own environment (its pins differ from ours):
#   python -m venv /tmp/lightrag-venv && /tmp/lightrag-venv/bin/pip install lightrag-hku==1.5.7
LIGHTRAG_PYTHON = Path(os.environ.get("LIGHTRAG_PYTHON", "/tmp/lightrag-venv/bin/python"))
LOADER = Path(__file__).parent / "interop" / "lightrag_load.py"


@pytest.fixture(scope="module")
def exported(exported_home: Path) -> Path:
    out = exported_home.parent / "lightrag"
    export_lightrag(exported_home, out)
    return out


def test_export_writes_every_store_readable(exported: Path) -> None:
    names = sorted(p.name for p in exported.iterdir())
    assert names == sorted(
        [f"kv_store_{n}.json" for n in ("full_docs", "text_chunks", "doc_status", "full_entities",
                                        "full_relations", "entity_chunks", "relation_chunks",
                                        "llm_response_cache")]
        + [f"vdb_{n}.json" for n in ("chunks", "entities", "relationships")]
        + ["graph_chunk_entity_relation.graphml"]
    )  # fmt: skip
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in exported.iterdir())
    docs = json.loads((exported / "kv_store_full_docs.json").read_text())
    assert sorted(d["file_path"] for d in docs.values()) == sorted(SAMPLE_DOCS)
    chunks = json.loads((exported / "kv_store_text_chunks.json").read_text())
    assert {c["full_doc_id"] for c in chunks.values()} == set(docs)
    vdb = json.loads((exported / "vdb_chunks.json").read_text())
    assert sorted(r["__id__"] for r in vdb["data"]) == sorted(chunks) and vdb["embedding_dim"] > 0


def _graph_counts(home: Path) -> tuple[int, int]:
    """Our graph as LightRAG keys it: nodes by entity title, undirected edges by title pair."""
    entities = pq.read_table(HomeLayout.at(home).table_path("entities"), columns=["title"])
    relationships = pq.read_table(
        HomeLayout.at(home).table_path("relationships"), columns=["source", "target"]
    )
    pairs = {frozenset(p.values()) for p in relationships.to_pylist()}
    return len(set(entities.column("title").to_pylist())), len(pairs)


@pytest.mark.skipif(
    not LIGHTRAG_PYTHON.exists(),
    reason=f"lightrag-hku is not installed at {LIGHTRAG_PYTHON} (python -m venv /tmp/lightrag-venv && "
    "/tmp/lightrag-venv/bin/pip install lightrag-hku==1.5.7; or set LIGHTRAG_PYTHON)",
)
def test_lightrag_loads_the_export_with_its_own_storages(exported_home: Path, exported: Path) -> None:
    run = subprocess.run(
        [str(LIGHTRAG_PYTHON), str(LOADER), str(exported)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    loaded = json.loads(run.stdout)
    nodes, edges = _graph_counts(exported_home)
    chunks = our_rows(exported_home, "text_units")
    assert loaded["documents"] == len(SAMPLE_DOCS) and loaded["chunks"] == chunks
    assert (loaded["nodes"], loaded["edges"]) == (nodes, edges) and nodes > 0 and edges > 0
    assert loaded["vectors"] == {"chunks": chunks, "entities": nodes, "relationships": edges}
    assert loaded["doc_status"]["processed"] == len(SAMPLE_DOCS)
    assert loaded["nearest_to_first_chunk_is_it"] and loaded["entity_vector_record"]
    assert loaded["naive_context_cites_first_chunk"]


def test_import_round_trips_counts_and_cites_file_paths(
    exported_home: Path,
    exported: Path,
    voyage: FakeVoyageServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "imported" / "dagster"))
    report = import_lightrag(exported, voyage_resource(tmp_path / "imported", voyage), echo=lambda _: None)
    assert report.tool == "LightRAG" and report.skipped_text_units == report.dropped_relationships == 0
    home = tmp_path / "imported"
    assert our_rows(home, "documents") == len(SAMPLE_DOCS)
    assert our_rows(home, "text_units") == our_rows(exported_home, "text_units")
    assert (our_rows(home, "entities"), our_rows(home, "relationships")) == _graph_counts(exported_home)
    assert_query_indexes(home)
    documents = pq.read_table(HomeLayout.at(home).partition_dir("documents")).column("id").to_pylist()
    assert sorted(documents) == sorted(SAMPLE_DOCS)  # file paths, not LightRAG's doc-<md5> keys
    again = tmp_path / "again"
    export_lightrag(home, again)  # and out again: the same documents and chunks under the same keys
    for store in ("full_docs", "text_chunks"):
        assert (
            json.loads((again / f"kv_store_{store}.json").read_text()).keys()
            == json.loads((exported / f"kv_store_{store}.json").read_text()).keys()
        )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "kv_store_text_chunks.json").unlink(), r"kv_store_text_chunks.json is missing"),
        (
            lambda f: (f / "kv_store_full_docs.json").write_text("{"),
            r"kv_store_full_docs.json is not readable JSON",
        ),
        (
            lambda f: (f / "kv_store_full_docs.json").write_text("[]"),
            r"kv_store_full_docs.json: expected an object",
        ),
        (
            lambda f: (f / "graph_chunk_entity_relation.graphml").write_text("<g"),
            r"graphml is not readable GraphML",
        ),
    ],
)
def test_a_damaged_folder_is_one_line_naming_the_file(
    exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, message: str
) -> None:
    folder = tmp_path / "damaged"
    shutil.copytree(exported, folder)
    damage(folder)
    code = main(["import-lightrag", str(folder), "--home", str(tmp_path / "home")])
    err = capsys.readouterr().err
    assert code == 2 and re.search(message, err) and err.count("\n") == 1, err


def test_cli_exports_and_refuses_an_unindexed_home(
    exported_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export-lightrag", str(tmp_path / "out"), "--home", str(exported_home)]) == 0
    out, err = capsys.readouterr()
    assert "exported a LightRAG working folder to" in out
    assert re.search(r"export-lightrag: 12/12 files \([0-9ms]+ elapsed\)\n$", err), err
    assert err.count("\n") == 10  # off a terminal a line per tenth reached: 12 files reach 10
    assert main(["export-lightrag", str(tmp_path / "out2"), "--home", str(tmp_path / "empty")]) == 1
    assert "graphunified_assets index --home" in capsys.readouterr().err
