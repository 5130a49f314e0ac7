"""Through `index`: adding, rewriting and removing a document changes only its rows of
chunk_vectors (reading only its files), and leaves the table equal, row by row and column by
column, to a full rewrite of the same files; without a record, or after a model change, the
step rewrites the table whole."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import lancedb
import pytest

from graphunified_assets.defs.assets.vector_index import chunk_vectors
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors import lance_slices
from graphunified_assets.lib.vectors.chunk_sources import SOURCES_FILE
from graphunified_assets.ops.indexing import index
from graphunified_query.core.artifacts import CHUNK_VECTORS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.snapshot.loader import load_snapshot
from tests.conftest import voyage_resource
from tests.fakes.voyage_server import FakeVoyageServer

ADDED = "# Whitlock Observatory\n\nAda Whitlock founded the Whitlock Observatory on Castle Hill in 1871.\n"


def _rows(home: Path) -> list[dict[str, object]]:
    """Every row of the home's chunk_vectors, all columns (vectors as lists), by id."""
    rows = lancedb.connect(str(HomeLayout.at(home).lancedb)).open_table(CHUNK_VECTORS).to_arrow()
    return rows.sort_by("id").to_pylist()


def _full_rewrite(home: Path, tmp_path: Path) -> list[dict[str, object]]:
    """The rows the step writes from nothing from the same files: run on a copy of the home's
    tables alone (no table, no record), for the same live documents."""
    copy = tmp_path / "full"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(HomeLayout.at(home).tables, HomeLayout.at(copy).tables)
    context = dg.build_asset_context(instance=dg.DagsterInstance.get())
    result = chunk_vectors(context=context, graphunified=GraphUnifiedResource(home=str(copy)))
    assert result.metadata["build"] == "rewrite"
    return _rows(copy)


def _metadata() -> dict[str, object]:
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey(CHUNK_VECTORS))
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _index(resource: GraphUnifiedResource) -> dict[str, object]:
    index(resource, echo=lambda _: None)
    return _metadata()


@pytest.fixture
def resource(home: Path, input_dir: Path, voyage: FakeVoyageServer) -> GraphUnifiedResource:
    built = voyage_resource(home, voyage, input_dir)
    assert _index(built)["build"] == "rewrite"  # the first build: nothing recorded
    return built


def test_adding_rewriting_and_removing_a_document_patch_the_rows_of_a_full_rewrite(
    home: Path, input_dir: Path, resource: GraphUnifiedResource, tmp_path: Path
) -> None:
    before = _rows(home)
    (input_dir / "observatory.md").write_text(ADDED, encoding="utf-8")
    added = _index(resource)
    assert (added["build"], added["documents_read"], added["documents"]) == ("update", 1, 4)
    rows = _rows(home)
    assert len(rows) > len(before) and rows == _full_rewrite(home, tmp_path)
    (input_dir / "flood.txt").write_text("The Great Flood\nIn 1894 the River Harrow rose over Eastfold.\n")
    rewritten = _index(resource)
    assert (rewritten["build"], rewritten["documents_read"]) == ("update", 1)
    full = _full_rewrite(home, tmp_path)
    assert _rows(home) != rows and _rows(home) == full
    # Its rows appended last, where a full rewrite keeps them first: readers sort them alike.
    stored = lancedb.connect(str(HomeLayout.at(home).lancedb)).open_table(CHUNK_VECTORS).to_arrow()
    documents = stored.column("document_id").to_pylist()
    assert documents[-1] == "flood.txt" != documents[0]
    ordered = [r["id"] for r in sorted(full, key=lambda r: (r["document_id"], r["chunk_index"], r["id"]))]
    snapshot = load_snapshot(home)
    assert list(snapshot.chunks.ids) == ordered == list(snapshot.bm25.ids)
    assert list(snapshot.graph.node_ids[snapshot.graph.n_entities :]) == ordered  # PageRank's passages
    (input_dir / "observatory.md").unlink()
    removed = _index(resource)
    assert (removed["build"], removed["documents_read"], removed["pruned_documents"]) == ("update", 0, 1)
    assert _rows(home) == _full_rewrite(home, tmp_path)
    assert not any("Observatory" in str(row["text"]) for row in _rows(home))


def test_without_a_record_or_after_a_model_change_the_table_is_rewritten(
    home: Path,
    input_dir: Path,
    resource: GraphUnifiedResource,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (HomeLayout.at(home).cache / SOURCES_FILE).unlink()
    (input_dir / "observatory.md").write_text(ADDED, encoding="utf-8")
    assert _index(resource)["build"] == "rewrite"
    assert _rows(home) == _full_rewrite(home, tmp_path)
    # Every document re-embedded: by their share alone, an update would write them as slices.
    monkeypatch.setattr(lance_slices, "REWRITE_SHARE", 1.0)
    settings = home / "settings.yaml"
    settings.write_text(
        settings.read_text().replace("embedding:\n", "embedding:\n  voyage_model: voyage-3-lite\n")
    )
    # A new resource: one reads its settings once.
    changed = _index(
        GraphUnifiedResource(home=str(home), input_dir=str(input_dir), voyage_api_key="test-key")
    )
    assert (changed["build"], changed["model"]) == ("rewrite", "voyage-3-lite")
    assert {row["model"] for row in _rows(home)} == {"voyage-3-lite"}
    assert _rows(home) == _full_rewrite(home, tmp_path)
