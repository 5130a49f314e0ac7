"""Lexical match of a question's high-level keywords against the relationships' keywords column.

LightRAG's `global` mode looks relationships up by their high-level keywords. The embedding of
the joined query keywords does that by meaning (`lightrag._keyed`); this does it by the words
themselves, so a relationship indexed under "flood" is found by a question about floods even when
its description is mostly names and dates. Words are weighted by rarity (IDF over the
relationships), so "history" counts less than "flood" on a corpus of histories. A relationship's
score is the share of the question's keyword weight its keywords cover, in [0, 1]. It re-ranks
the relationships the embedding found rather than adding its own: on the dev sets a common theme
word ("film") matched thousands of relationships equally, and adding them as candidates drowned
the relevant ones.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphunified_query.snapshot.model import Snapshot

_EXTRAS_KEY = "relationship_keywords"


@dataclass(frozen=True)
class KeywordIndex:
    rows_by_word: dict[str, tuple[int, ...]]
    idf: dict[str, float]

    @classmethod
    def of(cls, relationships: Sequence[Mapping[str, Any]]) -> KeywordIndex:
        rows: dict[str, set[int]] = defaultdict(set)
        for i, rel in enumerate(relationships):
            for word in _words(rel.get("keywords") or ()):  # homes built before keywords: none
                rows[word].add(i)
        n = max(len(relationships), 1)
        idf = {word: math.log(1 + n / len(found)) for word, found in rows.items()}
        return cls({w: tuple(sorted(found)) for w, found in rows.items()}, idf)

    def shares(self, keywords: Sequence[str]) -> dict[int, float]:
        """relationship row → share of the keywords' weight its keywords match (rows with any)."""
        words = list(dict.fromkeys(_words(keywords)))
        # A word no relationship has still counts in the whole: it was asked and is not there.
        weights = {w: self.idf.get(w, math.log(2 + len(self.idf))) for w in words}
        total = sum(weights.values())
        if not total:
            return {}
        scores: dict[int, float] = defaultdict(float)
        for word in words:
            for row in self.rows_by_word.get(word, ()):
                scores[row] += weights[word] / total
        return dict(scores)


def keyword_index(snapshot: Snapshot) -> KeywordIndex:
    """The snapshot's keyword index, built on first use and kept with the snapshot."""
    index = snapshot.extras.get(_EXTRAS_KEY)
    if index is None:
        index = snapshot.extras[_EXTRAS_KEY] = KeywordIndex.of(snapshot.relationships)
    return index


def _words(phrases: Iterable[str]) -> Iterable[str]:
    for phrase in phrases:
        for word in phrase.lower().split():
            if word.isalpha() and len(word) > 2:
                yield _singular(word)


def _singular(word: str) -> str:
    """Plural and singular match ("floods" ~ "flood"); no lemmatizer is loaded at query time."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
