"""The sharded vector steps (`defs/assets/sharded.py`): how many shards the data asks for, tables
equal to a one-shard build's (composed vectors, an update's slices), and a failing shard that
leaves the published vectors as they were. One home each, built once."""

from __future__ import annotations

import itertools
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.assets import graph_vectors
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors import shard_staging
from graphunified_assets.lib.vectors.shard_staging import MAX_SHARDS, SHARD_ROWS, split
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.publication import current
from tests.test_graph_pipeline import servers  # noqa: F401 (a fixture `built` uses)
from tests.test_vector_slices_pipeline import (  # noqa: F401 (the fixture `built`)
    ADDED,
    _computed,
    _rewritten,
    _tables,
    _versions,
    built,
)


@pytest.mark.parametrize(
    ("rows", "shards"),
    [(0, 0), (1, 1), (SHARD_ROWS, 1), (SHARD_ROWS + 1, 2), (10 * SHARD_ROWS, 10), (10**9, MAX_SHARDS)],
)
def test_the_shard_count_follows_the_rows(rows: int, shards: int) -> None:
    found = split("entity_vectors", rows)
    assert len(found) == shards
    # Contiguous, covering every row once, of nearly equal sizes.
    bounds = [0, *(s.stop for s in found)] if found else []
    assert [(s.start, s.stop) for s in found] == list(itertools.pairwise(bounds))
    assert (found[-1].stop if found else 0) == rows
    sizes = [s.stop - s.start for s in found]
    assert not sizes or max(sizes) - min(sizes) <= 1
    assert len({s.key for s in found}) == shards


def test_a_sharded_build_and_update_equal_a_one_shard_build(
    home: Path,
    input_dir: Path,
    built: GraphUnifiedResource,  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = home / "settings.yaml"
    every = "embedding:\n  composed_vectors: [entities, relationships, reports, report_points]\n"
    cap = "automation:\n  max_documents_per_run: 1\n"
    settings.write_text(settings.read_text().replace("embedding:\n", every, 1) + cap)
    monkeypatch.setattr(shard_staging, "SHARD_ROWS", 3)  # the sample's few rows: many shards a table
    report = index(built, echo=lambda _: None)
    assert len(report.plan.pending) == 3 and report.runs == 3 + 1  # a run per document, the refresh
    assert _computed()["entity_vectors_computed"] > 3  # type: ignore[operator]
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey("graph_vectors"))
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.metadata["shards"].value > 3  # type: ignore[operator]
    sharded = _tables(home)
    (input_dir / "observatory.md").write_text(ADDED)
    index(built, echo=lambda _: None)  # an update: only the changed rows, sharded
    updated = _tables(home)
    monkeypatch.setattr(shard_staging, "SHARD_ROWS", 10**6)  # one shard a table
    assert _rewritten(home, built) == updated
    assert not any(HomeLayout.at(home).shards.glob("*/*"))  # each commit removed its staging
    (input_dir / "observatory.md").unlink()
    index(built, echo=lambda _: None)
    assert _rewritten(home, built) == sharded


def test_a_failing_shard_leaves_the_published_vectors_and_the_next_run_completes(
    home: Path,
    input_dir: Path,
    built: GraphUnifiedResource,  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    layout = HomeLayout.at(home)
    monkeypatch.setattr(shard_staging, "SHARD_ROWS", 4)
    index(built, echo=lambda _: None)
    published, versions = _tables(home), _versions(home)
    generation = current(layout, rebuild_hint="").number

    calls = {"n": 0}
    prefetch = graph_vectors._prefetch

    def second_shard_fails(*args: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # the others succeed and stage their rows
            raise OSError("disk full")
        prefetch(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(graph_vectors, "_prefetch", second_shard_fails)
    (input_dir / "observatory.md").write_text(ADDED)
    with pytest.raises(RuntimeError, match="graph_vectors_shard"):
        index(built, echo=lambda _: None)
    graph_tables = ("entity_vectors", "relationship_vectors", "fact_vectors")
    after = _tables(home)
    assert {t: after[t] for t in graph_tables} == {t: published[t] for t in graph_tables}
    assert {t: _versions(home)[t] for t in graph_tables} == {t: versions[t] for t in graph_tables}
    assert current(layout, rebuild_hint="").number == generation  # nothing new was published
    assert any(layout.shards.glob("graph_vectors/*/*.arrow"))  # the shards that ran, staged

    monkeypatch.setattr(graph_vectors, "_prefetch", prefetch)
    index(built, echo=lambda _: None)  # the refresh is redone: every shard again
    assert current(layout, rebuild_hint="").number > generation
    assert any("Observatory" in str(row) for row in _tables(home)["entity_vectors"])
    assert not any(layout.shards.glob("*/*"))
