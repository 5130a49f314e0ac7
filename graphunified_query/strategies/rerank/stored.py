"""The vectors the index already holds for context texts, so scoring a candidate needs no embedding.

A chunk's text maps to its chunk vector, an entity's or a relationship's context text
(`contexts.entity_text` / `relationship_text`) to its entity or relationship vector. The map is
built once per snapshot, on first use. Only texts the index does not hold (a report, a fact, a
text a caller made up) are embedded, in one batch; with another embedding model than the index's,
the stored vectors are not comparable to the query's and every text is embedded.

Before this, the local reranker embedded every entity and relationship text per query: a
`rerank`-mode combination of a vector and a graph retriever took 12.5 s a query.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphunified_query.core.indexes.dense import DenseIndex
from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.contexts import entity_text, relationship_text

_EXTRAS_KEY = "rerank.stored_text_rows"  # snapshot.extras: (chunks, {text: (index name, row)})


def _text_rows(snapshot: Snapshot) -> dict[str, tuple[str, int]]:
    cached = snapshot.extras.get(_EXTRAS_KEY)
    if cached is None or cached[0] is not snapshot.chunks:  # a `replace` copy may share extras
        rows: dict[str, tuple[str, int]] = {}
        # The first of equal texts wins; chunks first, as the most common candidates.
        for row, text in enumerate(snapshot.chunks.texts):
            rows.setdefault(text, ("chunk_vectors", row))
        if len(snapshot.entity_vectors):
            for row, entity in enumerate(snapshot.entities):
                rows.setdefault(entity_text(entity), ("entity_vectors", row))
        if len(snapshot.relationship_vectors):
            for row, rel in enumerate(snapshot.relationships):
                rows.setdefault(relationship_text(rel), ("relationship_vectors", row))
        cached = (snapshot.chunks, rows)
        snapshot.extras[_EXTRAS_KEY] = cached
    return cached[1]


def passage_vectors(snapshot: Snapshot, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors of ``texts``: the index's own where it holds them, fresh ones for the rest."""
    if snapshot.model != embedder.model_name:
        return embedder.embed(list(texts), kind="document")
    rows = _text_rows(snapshot)
    vectors = np.empty((len(texts), snapshot.chunk_vectors.dimension), np.float32)
    missing: list[int] = []
    by_index: dict[str, list[tuple[int, int]]] = {}
    for i, text in enumerate(texts):
        found = rows.get(text)
        if found is None:
            missing.append(i)
        else:
            by_index.setdefault(found[0], []).append((i, found[1]))
    for name, pairs in by_index.items():
        index: DenseIndex = getattr(snapshot, name)
        vectors[[i for i, _ in pairs]] = index.vectors([row for _, row in pairs])
    if missing:
        vectors[missing] = embedder.embed([texts[i] for i in missing], kind="document")
    return vectors
