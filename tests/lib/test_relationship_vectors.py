"""Composed relationship vectors: one sentence, several pairs, still told apart by their names."""

from __future__ import annotations

import numpy as np

from graphunified_assets.lib.vectors.relationship_vectors import relationship_vectors
from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder
from tests.fakes.recording_embedder import RecordingEmbedder

SENTENCE = "The Lady Takes a Sailor is a 1949 comedy film directed by Michael Curtiz, starring Jane Wyman."


def _row(source: str, target: str) -> dict[str, str]:
    return {"source": source, "target": target, "type": "RELATED_TO", "description": SENTENCE}


def test_pairs_from_one_sentence_get_distinct_vectors_that_match_their_full_text() -> None:
    embedder = LocalMiniLMEmbedder()
    rows = [
        _row("The Lady Takes a Sailor", "Michael Curtiz"),
        _row("The Lady Takes a Sailor", "Jane Wyman"),
        _row("Michael Curtiz", "Jane Wyman"),
    ]
    composed = relationship_vectors(rows, embedder.embed)
    assert composed.shape == (3, embedder.dimension)
    assert np.allclose(np.linalg.norm(composed, axis=1), 1.0, atol=1e-5)
    full = embedder.embed([f"{r['source']} RELATED_TO {r['target']}: {SENTENCE}" for r in rows])
    # Each composed vector is nearest to its own relationship's full-text embedding.
    assert (full @ composed.T).argmax(axis=1).tolist() == [0, 1, 2]
    query = embedder.embed(["Who directed The Lady Takes a Sailor? Michael Curtiz"])[0]
    assert int(np.argmax(composed @ query)) == 0


def test_each_distinct_description_and_name_is_embedded_once() -> None:
    counting = RecordingEmbedder(LocalMiniLMEmbedder())
    # One sentence relating three entities pairwise, and a second sentence: 4 rows, 2 descriptions.
    rows = [
        _row("The Lady Takes a Sailor", "Michael Curtiz"),
        _row("The Lady Takes a Sailor", "Jane Wyman"),
        _row("Michael Curtiz", "Jane Wyman"),
        {**_row("Jane Wyman", "Ronald Reagan"), "description": "Jane Wyman married Ronald Reagan in 1940."},
    ]
    composed = relationship_vectors(rows, counting.embed)
    assert sorted(counting.texts) == sorted(
        {SENTENCE, "Jane Wyman married Ronald Reagan in 1940.", "The Lady Takes a Sailor"}
        | {"Michael Curtiz", "Jane Wyman", "Ronald Reagan"}
    )
    # The same vectors as embedding every row's texts.
    model = counting.inner
    descriptions = model.embed([r["description"] for r in rows])
    ends = model.embed([r["source"] for r in rows]) + model.embed([r["target"] for r in rows])
    ends /= np.linalg.norm(ends, axis=1, keepdims=True)
    expected = descriptions + 0.25 * ends
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(composed, expected, atol=1e-5)
