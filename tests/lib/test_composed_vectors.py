"""Composed entity and report vectors: only names, headlines and sentences reach the model, and
each vector is the length-weighted mean the rule says, close to its full text's embedding."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from graphunified_assets.defs.assets.graph_vectors import _slices, _Vectorizer
from graphunified_assets.defs.assets.strategy_indexes import report_text
from graphunified_assets.lib.vectors.composed_vectors import (
    entity_vectors,
    point_pieces,
    report_and_point_vectors,
    report_pieces,
)
from graphunified_query.core.artifacts import ENTITIES
from graphunified_query.core.indexes.report_points import report_points
from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder
from tests.fakes.recording_embedder import RecordingEmbedder

CURTIZ = "Michael Curtiz was a Hungarian-American film director. He directed Casablanca in 1942."
ENTITY_ROWS = [
    {"id": "e1", "title": "Michael Curtiz", "description": CURTIZ},
    {"id": "e2", "title": "Casablanca", "description": "Casablanca is a 1942 American romantic drama film."},
    {"id": "e3", "title": "Jane Wyman", "description": ""},
]
REPORT = {
    "title": "Michael Curtiz and Casablanca",
    "summary": CURTIZ,
    "findings": [
        {"summary": "Michael Curtiz — Casablanca", "explanation": "He directed Casablanca in 1942."},
        {
            "summary": "Casablanca (PRODUCT)",
            "explanation": "Casablanca is a 1942 American romantic drama film.",
        },
    ],
}


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def test_graph_vectors_embeds_entities_as_their_names_and_sentences_only() -> None:
    recording = RecordingEmbedder(LocalMiniLMEmbedder())
    table = pa.Table.from_pylist(ENTITY_ROWS)
    vectorizer = _Vectorizer(recording, keyword_weight=0.0, composed_entities=True)  # type: ignore[arg-type]
    [(batch, vectors)] = list(_slices(table, ENTITIES, vectorizer))
    sentences = {"Michael Curtiz was a Hungarian-American film director.", "He directed Casablanca in 1942."}
    sentences.add(ENTITY_ROWS[1]["description"])
    assert set(recording.texts) == {"Michael Curtiz", "Casablanca", "Jane Wyman"} | sentences
    # The stored text is the full text, as before: what a reader shows.
    assert batch.column("text").to_pylist()[0] == f"Michael Curtiz: {CURTIZ}"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_entities_are_embedded_whole_unless_composition_is_chosen() -> None:
    recording = RecordingEmbedder(LocalMiniLMEmbedder())
    table = pa.Table.from_pylist(ENTITY_ROWS)
    list(_slices(table, ENTITIES, _Vectorizer(recording, keyword_weight=0.0, composed_entities=False)))  # type: ignore[arg-type]
    assert set(recording.texts) == {f"{row['title']}: {row['description']}" for row in ENTITY_ROWS}


def test_a_one_sentence_description_is_the_weighted_mean_of_name_and_sentence() -> None:
    model = LocalMiniLMEmbedder()
    row = ENTITY_ROWS[1]
    composed = entity_vectors([row], model.embed)[0]
    name, sentence = model.embed([row["title"], row["description"]])
    # Each piece weighs the square root of its length (ENTITY_EXPONENT).
    expected = _unit(
        len(row["title"]) ** 0.5 * _unit(name) + len(row["description"]) ** 0.5 * _unit(sentence)
    )
    assert np.allclose(composed, expected, atol=1e-5)


def test_an_entity_without_a_description_is_its_name() -> None:
    model = LocalMiniLMEmbedder()
    composed = entity_vectors([ENTITY_ROWS[2]], model.embed)[0]
    assert np.allclose(composed, _unit(model.embed(["Jane Wyman"])[0]), atol=1e-5)


def test_composed_vectors_are_nearest_their_own_full_text() -> None:
    model = LocalMiniLMEmbedder()
    composed = entity_vectors(ENTITY_ROWS, model.embed)
    full = model.embed([f"{r['title']}: {r['description']}" for r in ENTITY_ROWS])
    assert (composed @ full.T).argmax(axis=1).tolist() == [0, 1, 2]
    assert float(np.min(np.sum(composed * full, axis=1))) > 0.85


def test_report_points_and_text_are_composed_from_headlines_and_sentences() -> None:
    points = point_pieces(REPORT)
    assert len(points) == len(report_points(REPORT)) == 3  # aligned with the stored point rows
    assert [t for t, _ in points[1]] == ["Michael Curtiz — Casablanca", "He directed Casablanca in 1942."]
    pieces = [t for t, _ in report_pieces(REPORT)]
    assert pieces[0] == REPORT["title"] and "Casablanca (PRODUCT)" in pieces
    model = LocalMiniLMEmbedder()
    texts, composed = report_and_point_vectors([REPORT], model.embed)
    full = model.embed(report_points(REPORT))
    assert (composed @ full.T).argmax(axis=1).tolist() == [0, 1, 2]
    assert float(texts[0] @ model.embed([report_text(REPORT)])[0]) > 0.85
    # The report text's vector is the length-weighted mean of its pieces (REPORT_EXPONENT 1).
    pieces = [t for t, _ in report_pieces(REPORT)]
    vectors = model.embed(pieces)
    expected = _unit(sum(len(t) * v / np.linalg.norm(v) for t, v in zip(pieces, vectors, strict=True)))
    assert np.allclose(texts[0], expected, atol=1e-5)


def test_an_empty_finding_is_embedded_as_its_stored_text() -> None:
    report = {"summary": "", "findings": [{"summary": "", "explanation": ""}]}
    assert point_pieces(report) == [[(report_points(report)[0], 1.0)]]
