"""Through `index`: adding a document resolves only its names, the entities equal a full build's,
and the communities no new row touches keep their rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.graph.communities import communities_table
from graphunified_assets.lib.graph.leiden import Community
from graphunified_assets.ops import partition_reads
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from tests.conftest import SAMPLE_DOCS
from tests.fakes.voyage_server import FakeVoyageServer

ADDED = {
    "harrow.md": "# Harrow Valley\n\nThomas Hale sold the Hale Mill to Ada Whitlock in 1890. "
    "The River Harrow flooded Millbrook again in 1901.\n"
}


@pytest.fixture
def voyage() -> Iterator[FakeVoyageServer]:
    with FakeVoyageServer() as server:
        yield server


def _index(
    home: Path, folder: Path, documents: dict[str, str], voyage: FakeVoyageServer
) -> GraphUnifiedResource:
    for name, text in documents.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    home.mkdir(exist_ok=True)
    (home / "settings.yaml").write_text(
        f"embedding:\n  provider: voyage\n  voyage_base_url: {voyage.base_url}\n"
    )
    resource = GraphUnifiedResource(home=str(home), input_dir=str(folder), voyage_api_key="test-key")
    index(resource, echo=lambda _: None)
    return resource


def _entities(home: Path, table: str = "entities") -> list[dict[str, object]]:
    rows = pq.read_table(HomeLayout.at(home).table_path(table))
    return rows.drop_columns(["indexed_at"]).to_pylist()  # when each build wrote it, not what


def _keyword_phrases(home: Path) -> set[str]:
    """The keys of the relationship keywords cache (a relationship sentence's theme phrases)."""
    with sqlite3.connect(HomeLayout.at(home).relationship_keywords_cache) as db:
        return {key for (key,) in db.execute("select key from responses")}


def _metadata(asset: str) -> dict[str, object]:
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None and event.asset_materialization is not None
    return {key: value.value for key, value in event.asset_materialization.metadata.items()}


def _communities_made_whole(home: Path) -> tuple[pa.Table, pa.Table]:
    """The communities table `index` wrote, and the same communities' rows made from nothing out
    of the graph tables (no row taken from a previous table); `indexed_at` aside."""
    layout = HomeLayout.at(home)
    stored = pq.read_table(layout.table_path("communities")).drop_columns(["indexed_at"])
    found = [
        Community((row["level"], i), row["level"], None, tuple(row["entity_ids"]))
        for i, row in enumerate(stored.select(["level", "entity_ids"]).to_pylist())
    ]
    whole = communities_table(
        found,
        relationships=pq.read_table(layout.table_path("relationships")),
        entities=pq.read_table(layout.table_path("entities")),
    )
    columns = ["id", "entity_ids", "relationship_ids", "text_unit_ids", "size", "content_hash"]
    return stored.select(columns), whole.table.select(columns)


def _resolution_work() -> dict[str, int]:
    metadata = _metadata("entities")
    return {key: int(metadata[key]) for key in ("fuzzy_comparisons", "embedding_rows")}  # type: ignore[call-overload]


# The sample's few documents are read file by file; from 2 on, through the consolidated copy and
# the files changed since (`CopyRows`), as a large corpus's are.
@pytest.mark.parametrize("consolidate_from", [partition_reads.CONSOLIDATE_FROM, 2])
def test_an_added_document_is_resolved_incrementally_with_a_full_builds_result(
    tmp_path: Path, voyage: FakeVoyageServer, monkeypatch: pytest.MonkeyPatch, consolidate_from: int
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused"))  # `index` points it at each home
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", consolidate_from)
    full = tmp_path / "full"
    _index(full, tmp_path / "all", {**SAMPLE_DOCS, **ADDED}, voyage)
    expected = _entities(full)
    first_build = _resolution_work()

    updated = tmp_path / "updated"
    _index(updated, tmp_path / "some", SAMPLE_DOCS, voyage)
    before = _entities(updated)
    phrases_before = _keyword_phrases(updated)
    assert (HomeLayout.at(updated).cache / "resolution_pairs.pickle").exists()
    _index(updated, tmp_path / "some", ADDED, voyage)
    assert _keyword_phrases(updated) > phrases_before  # the added sentences' phrases, kept
    assert _entities(updated) == expected
    assert _metadata("entities")["build"] == "patched"  # the last build's tables, patched
    for table in ("relationships", "facts"):
        assert _entities(updated, table) == _entities(full, table), table
    # The synonym step looked up only names the last run had not seen.
    assert 0 < int(_metadata("graph")["names_looked_up"]) < len(before)  # type: ignore[call-overload]
    added = _resolution_work()
    # The communities no new row touches kept their rows, equal to rows made again.
    assert 0 < int(_metadata("communities")["reused"]) < int(_metadata("communities")["rows"])  # type: ignore[call-overload]
    stored, whole = _communities_made_whole(updated)
    assert stored == whole
    assert added["embedding_rows"] < first_build["embedding_rows"]
    assert added["fuzzy_comparisons"] < first_build["fuzzy_comparisons"]

    (tmp_path / "some" / "harrow.md").unlink()
    _index(updated, tmp_path / "some", {}, voyage)
    assert _entities(updated) == before
    assert _keyword_phrases(updated) == phrases_before  # the removed document's are gone
    # No name compared again (the sample's types hold at most neighbours + 1 names, whose few
    # neighbour rows are recomputed whole when their count changes).
    assert _resolution_work()["fuzzy_comparisons"] == 0
    assert int(_metadata("communities")["reused"]) > 0  # type: ignore[call-overload]
    stored, whole = _communities_made_whole(updated)
    assert stored == whole
