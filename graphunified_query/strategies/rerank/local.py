"""`LocalReranker`: the default reranker, with nothing to download and nothing to pay.

score = ``semantic_weight`` x cosine(query, passage) under the configured embedding model (used as
a bi-encoder, clipped to [0, 1]) + (1 - ``semantic_weight``) x the share of the query's terms the
passage contains (the lower-cased, stop-worded, stemmed tokens the BM25 index uses).

The default ``semantic_weight = 0.7`` lets meaning lead, since paraphrased questions share few
words with their answer, while the lexical part still separates passages the embedding finds
equally close in favour of the one that names the query's exact entities, numbers and rare words,
which small embedding models blur. BM25 itself needs corpus statistics that a handful of
candidates cannot give (its IDF over ten passages is noise); term coverage is its bounded,
corpus-free core. ``semantic_weight = 1`` makes it a plain cosine reranker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from graphunified_query.core.indexes.bm25 import tokenize
from graphunified_query.strategies.base import RetrieverContext
from graphunified_query.strategies.rerank.stored import passage_vectors


class LocalReranker:
    name = "local"

    def __init__(self, context: RetrieverContext, *, semantic_weight: float = 0.7) -> None:
        if not 0.0 <= semantic_weight <= 1.0:
            raise ValueError(f"semantic_weight must be within [0, 1], not {semantic_weight}")
        self.context = context
        self.semantic_weight = semantic_weight

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        semantic = np.zeros(len(texts), np.float32)
        if self.semantic_weight > 0:
            semantic = np.clip(self._vectors(texts) @ self.context.embed_query(query), 0.0, 1.0)
        lexical = np.zeros(len(texts), np.float32)
        if self.semantic_weight < 1:
            lexical = np.asarray(term_coverage(query, texts), np.float32)
        blended = self.semantic_weight * semantic + (1 - self.semantic_weight) * lexical
        return [float(s) for s in blended]

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors: the index's own for chunk, entity and relationship texts, fresh ones
        for the rest (`stored`)."""
        return passage_vectors(self.context.snapshot, self.context.embedder, texts)


def term_coverage(query: str, texts: Sequence[str]) -> list[float]:
    """Share of the query's distinct terms each text contains, in [0, 1] (0 for a query of stopwords)."""
    tokens = tokenize([query, *texts])
    wanted = set(tokens[0])
    if not wanted:
        return [0.0] * len(texts)
    return [len(wanted & set(t)) / len(wanted) for t in tokens[1:]]


def build(context: RetrieverContext, *, environ: Mapping[str, str]) -> LocalReranker:
    """The registry's factory (`rerank/registry.py`): free and offline, from the index's embedder."""
    return LocalReranker(context)
