"""A text's theme phrases, offline: the nouns and adjectives of its noun phrases, outside any name.

Shared by both sides so they speak alike: the query side's LightRAG keywords (a question's
high-level keywords, `strategies/query_keywords.py`) and the pipeline's offline relationship
keywords (`lib/graph/relationship_keywords.py`), which `global` mode matches against each other.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span

_THEME_POS = {"NOUN", "ADJ"}


def theme_phrases(text: Doc | Span, excluded: Collection[str] = ()) -> list[str]:
    """The theme words of each noun phrase, in order: its nouns and adjectives outside any named
    entity, stop word or ``excluded`` word (lowercase). The same rule makes a relationship's
    offline keywords from its sentence, so the two sides of `global` mode speak alike."""
    phrases: list[str] = []
    for chunk in text.noun_chunks:
        words = [
            t.text.lower()
            for t in chunk
            if t.pos_ in _THEME_POS
            and t.ent_iob_ == "O"
            and not t.is_stop
            and t.is_alpha
            and t.text.lower() not in excluded
        ]
        if words:
            phrases.append(" ".join(words))
    return list(dict.fromkeys(phrases))


def name_words(names: Collection[str]) -> set[str]:
    """The lowercase words of names, which a theme phrase must not repeat."""
    return {word.lower() for name in names for word in name.split()}
