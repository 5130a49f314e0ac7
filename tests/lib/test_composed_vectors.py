"""Composed entity and report vectors: only names, headlines and sentences reach the model, and
each vector is the length-weighted mean the rule says, close to its full text's embedding."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.defs.assets.graph_vectors import _slices, _Vectorizer
from graphunified_assets.defs.assets.report_vectors import report_text
from graphunified_assets.lib.graph.description_summary import sentences
from graphunified_assets.lib.vectors.composed_vectors import (
    NAME_WEIGHT,
    ReportEmbedding,
    composed_vectors,
    entity_vectors,
    point_pieces,
    report_pieces,
)
from graphunified_assets.lib.vectors.relationship_vectors import PAIR_WEIGHT
from graphunified_query.core.artifacts import ENTITIES, RELATIONSHIPS
from graphunified_query.core.indexes.report_points import report_points
from graphunified_query.core.providers import CachedEmbedder, EmbeddingCache
from graphunified_query.core.providers.embedding import resolved_provider
from graphunified_query.core.providers.embedding_usage import METER
from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder
from graphunified_query.core.settings.embedding import LOCAL_COMPOSED, EmbeddingSettings
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
    vectorizer = _Vectorizer(recording, keyword_weight=0.0, composed=frozenset({ENTITIES}))  # type: ignore[arg-type]
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
    list(_slices(table, ENTITIES, _Vectorizer(recording, keyword_weight=0.0, composed=frozenset())))  # type: ignore[arg-type]
    assert set(recording.texts) == {f"{row['title']}: {row['description']}" for row in ENTITY_ROWS}


def test_a_one_sentence_description_is_the_weighted_mean_of_name_and_sentence() -> None:
    model = LocalMiniLMEmbedder()
    row = ENTITY_ROWS[1]
    composed = entity_vectors([row], model.embed)[0]
    name, sentence = model.embed([row["title"], row["description"]])
    # Each piece weighs the square root of its length (ENTITY_EXPONENT), the name twice that.
    expected = _unit(
        NAME_WEIGHT * len(row["title"]) ** 0.5 * _unit(name)
        + len(row["description"]) ** 0.5 * _unit(sentence)
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
    stored_points = report_points(REPORT)
    composition = ReportEmbedding(
        [REPORT], [report_text(REPORT)], [stored_points], frozenset({"reports", "report_points"})
    )
    texts = composition.reports(model.embed)([report_text(REPORT)])
    composed = composition.report_points(model.embed)(stored_points)
    full = model.embed(stored_points)
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


# A second report sharing CURTIZ's sentences: the composition embeds each distinct sentence once.
REPORT_B = {
    "title": "Casablanca",
    "summary": "Casablanca is a 1942 American romantic drama film. " + CURTIZ,
    "findings": [{"summary": "Casablanca (PRODUCT)", "explanation": "He directed Casablanca in 1942."}],
}


@pytest.fixture
def meter() -> Iterator[str]:
    """The model's usage counted under a scope of this test's own."""
    scope = "test_composed_vectors"
    previous = METER.set_scope(lambda: scope)
    METER.take(scope)
    yield scope
    METER.set_scope(previous)
    METER.take(scope)


def _report_embedding(composed: frozenset[str]) -> ReportEmbedding:
    reports = [REPORT, REPORT_B]
    return ReportEmbedding(
        reports, [report_text(r) for r in reports], [report_points(r) for r in reports], composed
    )


def test_every_distinct_sentence_passes_through_the_model_once(tmp_path: Path, meter: str) -> None:
    embedder = CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(tmp_path / "cache.sqlite"))
    composition = _report_embedding(frozenset({"reports", "report_points"}))
    wanted = composition.wanted()
    rows = [piece for r in (REPORT, REPORT_B) for piece in [report_pieces(r), *point_pieces(r)]]
    pieces = {text for row in rows for text, _ in row}
    assert sorted(wanted) == sorted(pieces) and len(wanted) == len(set(wanted))
    embedder.embed(wanted)
    for report in (REPORT, REPORT_B):
        composition.reports(embedder.embed)([report_text(report)])
        composition.report_points(embedder.embed)(report_points(report))
    usage = METER.take(meter)
    # Counted once: the composition asks the cache for pieces it holds, the model sees none again.
    assert usage.texts == len(pieces)
    # An update that adds a report of one new sentence computes that sentence alone.
    new = {**REPORT_B, "summary": "Ingrid Bergman starred in it. " + CURTIZ}
    update = ReportEmbedding([new], [report_text(new)], [report_points(new)], frozenset({"reports"}))
    update.reports(embedder.embed)([report_text(new)])
    assert METER.take(meter).texts == 1


def test_reports_are_embedded_whole_when_composition_is_off() -> None:
    whole = _report_embedding(frozenset())
    texts = [report_text(r) for r in (REPORT, REPORT_B)]
    assert whole.wanted() == [*texts, *dict.fromkeys(p for r in (REPORT, REPORT_B) for p in report_points(r))]
    recording = RecordingEmbedder(LocalMiniLMEmbedder())
    whole.reports(recording.embed)(texts)
    assert recording.batches == [texts]


def test_a_relationship_description_is_the_length_weighted_mean_of_its_sentences() -> None:
    model = RecordingEmbedder(LocalMiniLMEmbedder())
    row = {"source": "Michael Curtiz", "type": "DIRECTED", "target": "Casablanca", "description": CURTIZ}
    vectorizer = _Vectorizer(model, keyword_weight=0.0, composed=frozenset({RELATIONSHIPS}))  # type: ignore[arg-type]
    _, [composed] = vectorizer.vectors([row], RELATIONSHIPS)
    assert CURTIZ not in model.texts  # only its sentences and the names reached the model
    first, second = sentences([CURTIZ])
    a, b, source, target = model.inner.embed([first, second, row["source"], row["target"]])
    description = _unit(len(first) * _unit(a) + len(second) * _unit(b))
    expected = _unit(description + PAIR_WEIGHT * _unit(_unit(source) + _unit(target)))
    assert np.allclose(composed, expected, atol=1e-5)
    whole = RecordingEmbedder(LocalMiniLMEmbedder())
    _Vectorizer(whole, keyword_weight=0.0, composed=frozenset()).vectors([row], RELATIONSHIPS)  # type: ignore[arg-type]
    assert CURTIZ in whole.texts


def test_the_local_model_composes_by_default_and_a_provider_embeds_whole_texts() -> None:
    assert EmbeddingSettings().composed(local=True) == frozenset(LOCAL_COMPOSED)
    assert EmbeddingSettings().composed(local=False) == frozenset()
    assert EmbeddingSettings(composed_vectors=()).composed(local=True) == frozenset()
    chosen = EmbeddingSettings(composed_vectors=("reports",))
    assert chosen.composed(local=False) == frozenset({"reports"})
    assert resolved_provider(EmbeddingSettings(), {"VOYAGE_API_KEY": "k"}) == "voyage"
    assert resolved_provider(EmbeddingSettings(), {}) == "local"
    with pytest.raises(ValueError, match="composed_vectors"):
        EmbeddingSettings(composed_vectors=("chunks",))


def _piece_vector(text: str) -> np.ndarray:
    return np.random.default_rng(sum(map(ord, text))).standard_normal(8).astype(np.float32)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from([f"piece {i}." for i in range(9)]), st.sampled_from([0.5, 1.0])),
            max_size=5,
        ),
        min_size=1,
        max_size=6,
    ),
    st.randoms(use_true_random=False),
)
def test_a_rows_vector_is_the_same_bits_whatever_rows_it_is_composed_with(
    rows: list[list[tuple[str, float]]], rng: random.Random
) -> None:
    """An update composes a few rows, a rewrite all of them: each row's vector must not depend on
    the others (the order their pieces first appear in), or an update would not equal a rewrite."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.stack([_piece_vector(t) for t in texts])

    together = composed_vectors(rows, embed, exponent=1.0)
    shuffled = list(range(len(rows)))
    rng.shuffle(shuffled)
    apart = composed_vectors([rows[i] for i in shuffled], embed, exponent=1.0)
    for position, row in enumerate(shuffled):
        assert together[row].tobytes() == apart[position].tobytes()
        if rows[row]:
            alone = composed_vectors([rows[row]], embed, exponent=1.0)[0]
            assert together[row].tobytes() == alone.tobytes()
        else:  # no pieces: a zero vector
            assert not together[row].any()
