"""Through `index`: adding or removing a document writes only the changed rows of the graph and
report vector tables, and leaves tables equal (ids, texts, vectors) to a full rewrite."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import lancedb
import pytest

from graphunified_assets.defs.assets import graph_vectors, report_vectors
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors import lance_slices
from graphunified_assets.lib.vectors.composed_vectors import ReportEmbedding
from graphunified_assets.lib.vectors.piece_memory import REPORT_PIECES, PieceMemory
from graphunified_assets.ops.indexing import index
from graphunified_query.core.artifacts import REPORT_POINT_VECTORS
from graphunified_query.core.indexes.manifest import read_manifest
from graphunified_query.core.indexes.report_points import report_points
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import read_table
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.voyage_server import FakeVoyageServer
from tests.test_graph_pipeline import _resource, servers  # noqa: F401 (the fixture)

SLICED = ("entity_vectors", "relationship_vectors", "fact_vectors", "report_vectors", REPORT_POINT_VECTORS)
ADDED = "# Whitlock Observatory\n\nAda Whitlock founded the Whitlock Observatory on Castle Hill.\n"


def _tables(home: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every sliced table's rows (vectors as float lists), in a canonical order."""
    db = lancedb.connect(str(HomeLayout.at(home).lancedb))
    tables = {}
    for name in SLICED:
        rows = db.open_table(name).to_arrow().to_pylist()
        tables[name] = sorted(tuple((k, str(v)) for k, v in sorted(row.items())) for row in rows)
    return tables


def _versions(home: Path) -> dict[str, int]:
    db = lancedb.connect(str(HomeLayout.at(home).lancedb))
    return {name: db.open_table(name).version for name in SLICED}


def _rewritten(home: Path, resource: object) -> dict[str, list[tuple[object, ...]]]:
    """The tables a full rewrite gives: drop them (and their manifests) and `index` again."""
    layout = HomeLayout.at(home)
    for name in SLICED:
        shutil.rmtree(layout.lancedb / f"{name}.lance")
    for manifest in layout.index_path("x").parent.glob("*vectors.manifest.json"):
        manifest.unlink()
    assert index(resource, echo=lambda _: None).runs == 1
    return _tables(home)


@pytest.fixture
def built(
    home: Path,
    input_dir: Path,
    servers: tuple[FakeAnthropicServer, FakeVoyageServer],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> GraphUnifiedResource:
    """The sample home's resource, against the fake servers, for a tiny corpus's slices."""
    monkeypatch.setattr(lance_slices, "REWRITE_SHARE", 1.0)  # a tiny corpus: most rows change
    return _resource(home, input_dir)


def _computed() -> dict[str, object]:
    """Rows each sliced table computed in the last run (its step's metadata)."""
    found: dict[str, object] = {}
    for asset in ("graph_vectors", "report_vectors"):
        found.update({k: v for k, v in _metadata(asset).items() if k.endswith("_computed")})
    return found


def test_adding_and_removing_a_document_writes_slices_equal_to_a_full_rewrite(
    home: Path, input_dir: Path, built: GraphUnifiedResource
) -> None:
    resource = built
    index(resource, echo=lambda _: None)
    built = _tables(home)
    before = _versions(home)

    (input_dir / "observatory.md").write_text(ADDED)
    index(resource, echo=lambda _: None)
    added = _tables(home)
    computed = _computed()
    rows = {name: len(rows) for name, rows in added.items()}
    assert 0 < computed["relationship_vectors_computed"] < rows["relationship_vectors"]  # type: ignore[operator]
    assert 0 < computed["entity_vectors_computed"] < rows["entity_vectors"]  # type: ignore[operator]
    assert 0 < computed["reports_computed"] <= rows["report_vectors"]  # type: ignore[operator]
    # Only the graph rows made since the build were composed and compared with the stored texts.
    compared = _metadata("graph_vectors")
    assert compared["relationship_vectors_compared"] < rows["relationship_vectors"]  # type: ignore[operator]
    assert compared["entity_vectors_compared"] < rows["entity_vectors"]  # type: ignore[operator]
    # Slices appended to the stored tables (optimize at publish may add a compaction version).
    after = _versions(home)
    assert all(after[name] > before[name] for name in ("relationship_vectors", "entity_vectors"))
    assert added == _rewritten(home, resource)

    (input_dir / "observatory.md").unlink()
    index(resource, echo=lambda _: None)
    removed = _tables(home)
    assert {name: len(rows) for name, rows in removed.items()} == {n: len(r) for n, r in built.items()}
    assert not any("Observatory" in str(row) for rows in removed.values() for row in rows)
    assert removed == _rewritten(home, resource)


def test_a_commit_that_stops_part_way_makes_the_next_update_compare_every_row(
    home: Path, input_dir: Path, built: GraphUnifiedResource
) -> None:
    resource = built
    index(resource, echo=lambda _: None)
    (input_dir / "observatory.md").write_text(ADDED)

    def crash(*_: object) -> None:
        raise RuntimeError("killed between the tables")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(graph_vectors, "apply_change", crash)
        with pytest.raises(Exception, match="graph_vectors"):
            index(resource, echo=lambda _: None)
    index(resource, echo=lambda _: None)
    compared = _metadata("graph_vectors")
    rows = {name: len(found) for name, found in _tables(home).items()}
    # The manifest no longer vouched for the stored rows: every row's text was compared.
    assert compared["relationship_vectors_compared"] == rows["relationship_vectors"]
    assert compared["entity_vectors_compared"] == rows["entity_vectors"]
    assert _tables(home) == _rewritten(home, resource)


def test_choosing_composed_vectors_recomputes_those_tables_and_updates_compose_the_same_way(
    home: Path, input_dir: Path, built: GraphUnifiedResource
) -> None:
    resource = built
    index(resource, echo=lambda _: None)  # a provider: every table embedded whole
    whole = _tables(home)
    settings = home / "settings.yaml"
    chosen = "embedding:\n  composed_vectors: [relationships, reports, report_points]\n"
    settings.write_text(settings.read_text().replace("embedding:\n", chosen, 1))

    def unread(*_: object) -> None:
        raise AssertionError("vectors made another way were read to be reused")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_vectors, "StoredVectors", unread)
        index(resource, echo=lambda _: None, refresh=True)
    composed = _tables(home)
    computed = _computed()
    rows = {name: len(found) for name, found in composed.items()}
    # The reports' texts did not change, their vectors did: every one recomputed, none reused.
    assert computed["reports_computed"] == rows["report_vectors"] > 0
    assert computed["relationship_vectors_computed"] == rows["relationship_vectors"] > 0
    # (A one-sentence relationship description composes to its own vector: those may not move.)
    for name in ("report_vectors", REPORT_POINT_VECTORS):
        assert composed[name] != whole[name]
    assert composed["entity_vectors"] == whole["entity_vectors"]
    assert _remembered_pieces(home) == _report_pieces(home)
    # An update composes as a full rewrite does, its reports' pieces read from the piece memory.
    (input_dir / "observatory.md").write_text(ADDED)
    index(resource, echo=lambda _: None)
    assert _metadata("report_vectors")["pieces_remembered"] > 0  # type: ignore[operator]
    assert _remembered_pieces(home) == _report_pieces(home)
    assert _tables(home) == _rewritten(home, resource)


def _metadata(asset: str) -> dict[str, object]:
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _remembered_pieces(home: Path) -> set[str]:
    layout = HomeLayout.at(home)
    model = read_manifest(layout.index_path("report_vectors"))["model"]  # type: ignore[index]
    memory = PieceMemory.load(layout.cache / REPORT_PIECES, model)
    assert len(memory.texts) == len(set(memory.texts))
    return memory.referenced()


def _report_pieces(home: Path) -> set[str]:
    """Every piece the current reports' texts and points are composed from."""
    rows = read_table(HomeLayout.at(home).table_path("community_reports")).to_pylist()
    texts = ReportEmbedding(rows, [report_vectors.report_text(r) for r in rows], [], frozenset({"reports"}))
    points = ReportEmbedding(rows, [], [report_points(r) for r in rows], frozenset({"report_points"}))
    return {piece for found in (*texts.row_pieces(), *points.row_pieces()) for piece in found}
