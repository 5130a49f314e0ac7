"""Global search's offline map reads each report's point vectors from the index (embedded once at
index time) and embeds only the query; with whole-text point vectors (`embedding.composed_vectors:
[]`) its contexts and scores equal the query-time path's, which embeds each point whole."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import lancedb
import numpy as np
import pytest

from graphunified_query.core.artifacts import REPORT_POINT_VECTORS
from graphunified_query.core.indexes.report_points import ReportPoints, report_points
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.global_map import ExtractiveMapper
from tests.fakes.recording_embedder import RecordingEmbedder
from tests.query.conftest import FIXTURE, OFFLINE_SETTINGS, index_offline

QUESTION = "Which university did the founder of Hale Mill study at?"


@pytest.fixture(scope="module")
def whole_engine(tmp_path_factory: pytest.TempPathFactory) -> QueryEngine:
    """The two-hop corpus with every point embedded whole, as the query-time path embeds it (by
    default the local model composes point vectors from their sentences' vectors)."""
    settings = OFFLINE_SETTINGS.replace("embedding:\n", "embedding:\n  composed_vectors: []\n")
    home = index_offline(FIXTURE, tmp_path_factory.mktemp("whole-points"), settings)
    return QueryEngine.open(home, environ={})


def test_the_offline_map_embeds_only_the_query_with_composed_points(engine: QueryEngine) -> None:
    snapshot = engine.snapshot
    recording = RecordingEmbedder(engine.embedder)
    mapper = ExtractiveMapper(recording, points=snapshot.report_points, min_similarity=-1.0, max_points=100)
    assert any(mapper.map(QUESTION, list(snapshot.reports)))
    assert recording.texts == [QUESTION]


def test_the_index_stores_one_vector_per_report_point(built_home: Path, engine: QueryEngine) -> None:
    table = lancedb.connect(str(built_home / "lancedb")).open_table(REPORT_POINT_VECTORS).to_arrow()
    reports = engine.snapshot.reports
    expected = [
        (r["id"], r["community"], n, text) for r in reports for n, text in enumerate(report_points(r))
    ]
    assert len(expected) > len(reports) > 0
    stored = list(
        zip(*(table.column(c).to_pylist() for c in ("id", "community", "point", "text")), strict=True)
    )
    assert stored == expected
    assert set(table.column("model").to_pylist()) == {engine.snapshot.model}
    points = engine.snapshot.report_points
    assert points is not None and points.matrix.shape == (len(expected), engine.embedder.dimension)


def test_the_offline_map_embeds_only_the_query_and_scores_as_before(whole_engine: QueryEngine) -> None:
    engine = whole_engine
    snapshot = engine.snapshot
    reports = list(snapshot.reports)
    precomputed = RecordingEmbedder(engine.embedder)
    at_query_time = RecordingEmbedder(engine.embedder)
    # Every point kept (no threshold, no cap), so every score is compared.
    stored = ExtractiveMapper(precomputed, points=snapshot.report_points, min_similarity=-1.0, max_points=100)
    embedded = ExtractiveMapper(at_query_time, min_similarity=-1.0, max_points=100)
    with_table, without = stored.map(QUESTION, reports), embedded.map(QUESTION, reports)
    assert precomputed.texts == [QUESTION]
    assert len(at_query_time.texts) > 1  # the old path embedded the points
    assert [[p.text for p in ps] for ps in with_table] == [[p.text for p in ps] for ps in without]
    assert [p.score for ps in with_table for p in ps] == pytest.approx(
        [p.score for ps in without for p in ps], abs=1e-5
    )


def test_global_search_returns_the_same_contexts_without_the_table(whole_engine: QueryEngine) -> None:
    engine = whole_engine
    older_home = dataclasses.replace(engine.snapshot, report_points=None, extras={})
    older = QueryEngine(older_home, engine.settings, engine.embedder)
    for question in (QUESTION, "Which river does the Kestrel Dam hold back?"):
        new, _ = engine.retrieve(question, "graphrag_global", scope="specific")
        old, _ = older.retrieve(question, "graphrag_global", scope="specific")
        assert new.results and [r.text for r in new.results] == [r.text for r in old.results]
        assert [r.score for r in new.results] == pytest.approx([r.score for r in old.results], abs=1e-5)


def test_a_changed_report_is_not_read_from_the_stored_points() -> None:
    matrix = np.eye(3, dtype=np.float32)
    points = ReportPoints([1, 1, 2], ["one", "two", "three"], matrix)
    assert points.vectors(1, ["one", "two"]) is not None
    assert np.array_equal(points.vectors(2, ["three"]), matrix[2:])
    assert points.vectors(1, ["one", "two (edited)"]) is None
    assert points.vectors(1, ["one"]) is None
    assert points.vectors(3, ["new"]) is None
