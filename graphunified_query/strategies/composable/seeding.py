"""Where a graph traversal starts: the entities the query is about.

By embedding similarity when the query can be embedded and the entities have vectors; otherwise
by fuzzy matching the query's words against entity titles, so the graph stays usable without an
embedding model (a Voyage outage, an index built without entity vectors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from rapidfuzz import fuzz, process

from graphunified_query.core.indexes.dense import DenseIndex
from graphunified_query.strategies.entity_linking import name_key

SeedMethod = Literal["embedding", "fuzzy", "none"]
MAX_TITLE_WORDS = 8  # longer titles are descriptions, not names a question would spell out


@dataclass(frozen=True)
class Seed:
    row: int  # entity row in the snapshot
    score: float  # cosine similarity, or fuzzy match ratio in [0, 1] (a higher scale: ~1 for a name)


def embedding_seeds(vectors: DenseIndex, query: np.ndarray, k: int, min_similarity: float) -> list[Seed]:
    return [Seed(row, score) for row, score in vectors.search(query, k) if score >= min_similarity]


class FuzzyTitles:
    """Entity titles matched against every run of the query's words of similar length.

    "Hale Mil" matches "Hale Mill" (ratio 0.94) though no embedding is involved; comparing word
    windows rather than the whole question keeps a short title from scoring low against a long
    question that does name it.
    """

    def __init__(self, entities: Sequence[Mapping[str, Any]]) -> None:
        keyed = [(i, name_key(e["title"])) for i, e in enumerate(entities)]
        kept = [(i, key) for i, key in keyed if key and len(key.split()) <= MAX_TITLE_WORDS]
        self.rows = [i for i, _ in kept]
        self.titles = [key for _, key in kept]

    def match(self, query: str, k: int, min_ratio: float) -> list[Seed]:
        words = name_key(query).split()
        windows = sorted(
            {
                " ".join(words[i : i + n])
                for n in range(1, MAX_TITLE_WORDS + 1)
                for i in range(len(words) - n + 1)
            }
        )
        if not windows or not self.titles:
            return []
        # One C-level pass over titles x windows; a title's score is its best window.
        ratios = process.cdist(self.titles, windows, scorer=fuzz.ratio).max(axis=1) / 100.0
        order = sorted(range(len(self.titles)), key=lambda t: (-ratios[t], self.rows[t]))
        return [Seed(self.rows[t], float(ratios[t])) for t in order[:k] if ratios[t] >= min_ratio]
