"""Microsoft GraphRAG compatibility: export as v3, import v3/v2/v1 back with working query indexes."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphunified_assets.cli.main import main
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.graphrag_io import GraphRAGFormatError, export_graphrag, import_graphrag
from graphunified_assets.ops.graphrag_io.communities import communities_table
from graphunified_assets.ops.graphrag_io.convert import documents_table
from graphunified_assets.ops.graphrag_io.import_ import convert_tables
from graphunified_assets.ops.graphrag_io.read import read_graphrag
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import StoreError
from tests.conftest import SAMPLE_DOCS, voyage_resource
from tests.fakes.voyage_server import FakeVoyageServer
from tests.interop.home_checks import assert_query_indexes, our_rows

_s, _i, _f = pa.string(), pa.int64(), pa.float64()
_strings, _ints = pa.list_(_s), pa.list_(_i)
_finding = pa.struct([("explanation", _s), ("summary", _s)])

# GraphRAG v3's output tables, column by column (research anchors §8: `schemas.py`), written by hand
# so that a change to our own schemas cannot silently change what we claim to export.
GRAPHRAG_V3: dict[str, list[tuple[str, pa.DataType]]] = {
    "documents": [
        ("id", _s), ("human_readable_id", _i), ("title", _s), ("text", _s), ("text_unit_ids", _strings),
        ("creation_date", _s), ("raw_data", pa.null()),  # plain text files carry no record fields
    ],
    "text_units": [
        ("id", _s), ("human_readable_id", _i), ("text", _s), ("n_tokens", _i), ("document_id", _s),
        ("entity_ids", _strings), ("relationship_ids", _strings), ("covariate_ids", _strings),
    ],
    "entities": [
        ("id", _s), ("human_readable_id", _i), ("title", _s), ("type", _s), ("description", _s),
        ("text_unit_ids", _strings), ("frequency", _i), ("degree", _i),
    ],
    "relationships": [
        ("id", _s), ("human_readable_id", _i), ("source", _s), ("target", _s), ("description", _s),
        ("weight", _f), ("combined_degree", _i), ("text_unit_ids", _strings),
    ],
    "communities": [
        ("id", _s), ("human_readable_id", _i), ("community", _i), ("level", _i), ("parent", _i),
        ("children", _ints), ("title", _s), ("entity_ids", _strings), ("relationship_ids", _strings),
        ("text_unit_ids", _strings), ("period", _s), ("size", _i),
    ],
    "community_reports": [
        ("id", _s), ("human_readable_id", _i), ("community", _i), ("level", _i), ("parent", _i),
        ("children", _ints), ("title", _s), ("summary", _s), ("full_content", _s), ("rank", _f),
        ("rating_explanation", _s), ("findings", pa.list_(_finding)), ("full_content_json", _s),
        ("period", _s), ("size", _i),
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def indexed(exported_home: Path) -> Path:
    """The session's indexed sample home (indexing is the slow part)."""
    return exported_home


@pytest.fixture(scope="module")
def exported(indexed: Path) -> Path:
    out = indexed.parent / "graphrag_output"
    export_graphrag(indexed, out)
    return out


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "imported" / "dagster"))
    return tmp_path / "imported"


def _rows(folder: Path, table: str) -> list[dict[str, Any]]:
    return sorted(pq.read_table(folder / f"{table}.parquet").to_pylist(), key=lambda r: r["id"])


def test_export_writes_graphrag_v3_tables(indexed: Path, exported: Path) -> None:
    for table, columns in GRAPHRAG_V3.items():
        schema = pq.read_schema(exported / f"{table}.parquet")
        assert [(f.name, f.type) for f in schema] == columns, table
        assert pq.read_metadata(exported / f"{table}.parquet").num_rows == our_rows(indexed, table) > 0
    chunks = _rows(exported, "text_units")
    documents = _rows(exported, "documents")
    assert sorted(u for d in documents for u in d["text_unit_ids"]) == sorted(c["id"] for c in chunks)
    entities = _rows(exported, "entities")
    for chunk in chunks:  # GraphRAG's back-references, which our own tables leave empty
        cited = [e["id"] for e in entities if chunk["id"] in e["text_unit_ids"]]
        assert sorted(chunk["entity_ids"]) == cited and cited
    titles = {e["title"] for e in entities}
    assert all({r["source"], r["target"]} <= titles for r in _rows(exported, "relationships"))
    assert json.loads((exported / "stats.json").read_text())["num_documents"] == len(SAMPLE_DOCS)
    assert json.loads((exported / "context.json").read_text()) == {}


# graphrag 3.3's LanceDB tables (graphrag/config/embeddings.py, graphrag_vectors/lancedb.py): the
# embedding name, the Parquet table whose row ids it holds, and the columns GraphRAG writes.
GRAPHRAG_EMBEDDINGS = {
    "text_unit_text": ("text_units", "chunk_vectors"),
    "entity_description": ("entities", "entity_vectors"),
    "community_full_content": ("community_reports", "report_vectors"),
}
GRAPHRAG_VECTOR_COLUMNS = ["id", "vector", "create_date", "update_date"]


def test_export_carries_embeddings_in_graphrag_lancedb_layout(indexed: Path, exported: Path) -> None:
    theirs = lancedb.connect(str(exported / "lancedb"))
    ours = lancedb.connect(str(HomeLayout.at(indexed).lancedb))
    assert sorted(theirs.list_tables().tables) == sorted(GRAPHRAG_EMBEDDINGS)
    for name, (table, vector_table) in GRAPHRAG_EMBEDDINGS.items():
        written = theirs.open_table(name).to_arrow()
        assert written.schema.names == GRAPHRAG_VECTOR_COLUMNS, name
        assert sorted(written.column("id").to_pylist()) == sorted(r["id"] for r in _rows(exported, table)), (
            name
        )
        home = {r["id"]: r["vector"] for r in ours.open_table(vector_table).to_arrow().to_pylist()}
        for row in written.to_pylist():
            assert row["vector"] == pytest.approx(home[row["id"]], rel=1e-6), (name, row["id"])
        # GraphRAG's LanceDBVectorStore.similarity_search_by_vector: a row's own vector finds it first.
        first = written.to_pylist()[0]
        found = (
            theirs.open_table(name).search(first["vector"], vector_column_name="vector").limit(1).to_list()
        )
        assert found[0]["id"] == first["id"], name


def test_exported_files_are_readable_by_everyone(exported: Path) -> None:
    modes = {p.relative_to(exported): stat.S_IMODE(p.stat().st_mode) for p in exported.rglob("*")}
    assert {p: m for p, m in modes.items() if m != (0o755 if (exported / p).is_dir() else 0o644)} == {}
    assert any(p.suffix == ".parquet" for p in modes) and any(p.parts[0] == "lancedb" for p in modes)


def test_documents_graphrag_named_by_hash_are_cited_by_title(exported: Path, tmp_path: Path) -> None:
    """GraphRAG ids a document by the SHA-512 of its text; answers should cite its title (file name)."""
    folder = tmp_path / "hashed"
    shutil.copytree(exported, folder)
    documents = pq.read_table(folder / "documents.parquet")
    hashed = {d["id"]: hashlib.sha512(d["text"].encode()).hexdigest() for d in documents.to_pylist()}
    _rewrite(
        folder / "documents.parquet",
        lambda t: t.set_column(0, "id", pa.array([hashed[i] for i in t["id"].to_pylist()])),
    )
    _rewrite(
        folder / "text_units.parquet",
        lambda t: t.set_column(
            t.schema.get_field_index("document_id"),
            "document_id",
            pa.array([hashed[i] for i in t["document_id"].to_pylist()]),
        ),
    )
    tables, skipped, _ = convert_tables(read_graphrag(folder))
    titles = {d["title"] for d in documents.to_pylist()}
    assert set(tables["documents"].column("id").to_pylist()) == titles and skipped == 0
    assert set(tables["text_units"].column("document_id").to_pylist()) <= titles


def test_export_without_index_names_file_and_command(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"tables/documents.*python -m graphunified_assets index --home"):
        export_graphrag(tmp_path / "empty", tmp_path / "out")


def test_import_round_trips_and_builds_query_indexes(
    indexed: Path, exported: Path, fresh_home: Path, voyage: FakeVoyageServer
) -> None:
    report = import_graphrag(exported, voyage_resource(fresh_home, voyage), echo=lambda _: None)
    assert report.version == "v3" and report.skipped_text_units == report.dropped_relationships == 0
    again = export_graphrag(fresh_home, fresh_home.parent / "again")
    for table in GRAPHRAG_V3:  # every GraphRAG column of every row survives the trip
        assert _rows(again.folder, table) == _rows(exported, table), table
    for table in ("relationships", "communities"):  # and so do our derived columns
        columns = ["id", "source_id", "target_id"] if table == "relationships" else ["id", "content_hash"]
        mine = pq.read_table(HomeLayout.at(indexed).table_path(table), columns=columns).sort_by("id")
        theirs = pq.read_table(HomeLayout.at(fresh_home).table_path(table), columns=columns).sort_by("id")
        assert theirs.equals(mine), table
    assert_query_indexes(fresh_home)
    assert len(IndexState(HomeLayout.at(fresh_home).index_state).indexed_hashes()) == len(SAMPLE_DOCS)


def _as_v2(folder: Path) -> None:
    """GraphRAG 2.x: a chunk's documents as a list, document fields as `metadata`, UMAP x/y."""
    _rewrite(folder / "text_units.parquet", lambda t: _rename(t, "document_id", "document_ids", listed=True))
    _rewrite(folder / "documents.parquet", lambda t: _rename(t, "raw_data", "metadata"))
    _rewrite(
        folder / "entities.parquet",
        lambda t: t.append_column("x", pa.array([0.5] * len(t))).append_column("y", pa.array([1.5] * len(t))),
    )


def _as_v1(folder: Path) -> None:
    """GraphRAG 1.x: `create_final_*` files, `relationships_ids`, no hierarchy or degree columns."""
    _as_v2(folder)
    _rewrite(folder / "text_units.parquet", lambda t: _rename(t, "relationship_ids", "relationships_ids"))
    _rewrite(folder / "entities.parquet", lambda t: t.drop_columns(["frequency", "degree"]))
    _rewrite(folder / "communities.parquet", lambda t: t.drop_columns(["parent", "children"]))
    _rewrite(
        folder / "community_reports.parquet",
        lambda t: _rename(t.drop_columns(["parent", "children"]), "rating_explanation", "rank_explanation"),
    )
    for path in folder.glob("*.parquet"):
        path.rename(path.with_name(f"create_final_{path.name}"))


@pytest.mark.parametrize(("version", "downgrade"), [("v2", _as_v2), ("v1", _as_v1)])
def test_older_graphrag_folders_import(
    exported: Path,
    fresh_home: Path,
    voyage: FakeVoyageServer,
    version: str,
    downgrade: Callable[[Path], None],
) -> None:
    folder = fresh_home.parent / f"graphrag_{version}"
    shutil.copytree(exported, folder)
    downgrade(folder)
    report = import_graphrag(folder, voyage_resource(fresh_home, voyage), echo=lambda _: None)
    assert report.version == version
    again = export_graphrag(fresh_home, fresh_home.parent / "again")
    for table in GRAPHRAG_V3:  # what older versions lack is derived as v3 computes it
        assert _rows(again.folder, table) == _rows(exported, table), table
    assert_query_indexes(fresh_home)


def test_missing_required_column_names_file_and_column(exported: Path, tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(exported, folder)
    _rewrite(folder / "entities.parquet", lambda t: t.drop_columns(["title"]))
    with pytest.raises(GraphRAGFormatError, match=r"entities\.parquet: missing required column 'title'"):
        import_graphrag(folder, GraphUnifiedResource(home=str(tmp_path / "home")), echo=lambda _: None)
    assert not (tmp_path / "home" / "tables").exists()  # nothing written before validation passes


def test_a_column_of_the_wrong_type_is_one_error_naming_the_folder(exported: Path, tmp_path: Path) -> None:
    folder = tmp_path / "wrong-type"
    shutil.copytree(exported, folder)
    words = lambda t: t.set_column(  # noqa: E731
        t.schema.get_field_index("weight"), "weight", pa.array(["heavy"] * t.num_rows)
    )
    _rewrite(folder / "relationships.parquet", words)
    with pytest.raises(GraphRAGFormatError, match=r"wrong-type: a column does not have GraphRAG's type"):
        import_graphrag(folder, GraphUnifiedResource(home=str(tmp_path / "home")), echo=lambda _: None)


def test_import_refuses_a_home_that_has_an_index(indexed: Path, exported: Path) -> None:
    with pytest.raises(FileExistsError, match="already holds an index"):
        import_graphrag(exported, GraphUnifiedResource(home=str(indexed)), echo=lambda _: None)


def test_cli_export_prints_rows_per_table(
    indexed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export-graphrag", str(tmp_path / "out"), "--home", str(indexed)]) == 0
    line = capsys.readouterr().out.strip()
    assert f"{len(SAMPLE_DOCS)} documents" in line and "community_reports" in line
    assert "embeddings: " in line and "text_unit_text" in line
    assert main(["export-graphrag", str(tmp_path / "out"), "--home", str(tmp_path / "none")]) == 1


def test_v1_hierarchy_is_recovered_from_members() -> None:
    given = pa.table(
        {
            "id": ["c0", "c1", "c2"],
            "community": [0, 1, 2],
            "level": [0, 1, 1],
            "entity_ids": [["a", "b", "c"], ["a", "b"], ["c"]],
        }
    )
    entities = pa.table(
        {"id": ["a", "b", "c"], "description": ["A", "B", "C"], "text_unit_ids": [["t1"], ["t2"], []]}
    )
    edges = pa.table({"id": ["r1"], "description": ["a-b"], "source_id": ["a"], "target_id": ["b"]})
    rows = communities_table(given, entities, edges).to_pylist()
    assert [(r["parent"], r["children"]) for r in rows] == [(-1, [1, 2]), (0, []), (0, [])]
    assert [r["relationship_ids"] for r in rows] == [["r1"], ["r1"], []]
    assert [r["text_unit_ids"] for r in rows] == [["t1", "t2"], ["t1", "t2"], []]
    assert [r["size"] for r in rows] == [3, 2, 1]


def test_record_fields_become_our_metadata_and_creation_date_a_timestamp() -> None:
    given = pa.table(
        {
            "id": ["d1", "d2"],
            "title": ["a.csv", "b.csv"],
            "text": ["one", "two"],
            "creation_date": ["2024-03-01 10:20:30 +0100", "not a date"],
            "raw_data": pa.array([{"author": "Ada", "year": 1843}, None]),
        }
    )
    rows = documents_table(given, {"d1": ["t1"]}).to_pylist()
    assert [dict(r["metadata"]) for r in rows] == [{"author": "Ada", "year": "1843"}, {}]
    assert rows[0]["created_at"] == datetime(2024, 3, 1, 9, 20, 30, tzinfo=UTC)
    assert rows[1]["created_at"] is None  # unreadable: absent rather than invented
    assert [r["filename"] for r in rows] == ["a.csv", "b.csv"]
    assert [r["text_unit_ids"] for r in rows] == [["t1"], []]
    assert {r["format"] for r in rows} == {"graphrag"}


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    pq.write_table(change(pq.read_table(path)), path)


def _rename(table: pa.Table, old: str, new: str, *, listed: bool = False) -> pa.Table:
    values = table.column(old)
    if listed:
        values = pa.array([[v] for v in values.to_pylist()], pa.list_(pa.string()))
    return table.drop_columns([old]).append_column(new, values)
