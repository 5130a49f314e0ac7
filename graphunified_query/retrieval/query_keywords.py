"""LightRAG's dual-level query keywords, offline: the names a question mentions and its themes.

LightRAG asks its LLM for low-level keywords (the specific entities a question names) and
high-level keywords (the concepts or themes it is about); `local` mode matches entities against the
first and `global` mode matches relationships against the second. Offline, the low-level keywords
are the named entities the router finds (spaCy NER plus capitalized runs) and the high-level ones
the common nouns and adjectives of the question's noun phrases, outside any name: "Who is the
director of film Jump for Glory?" → low ["Jump for Glory"], high ["director", "film"].
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span

_THEME_POS = {"NOUN", "ADJ"}


@dataclass(frozen=True)
class QueryKeywords:
    low_level: tuple[str, ...]  # entities: what `local` mode looks up
    high_level: tuple[str, ...]  # themes: what `global` mode looks up

    def as_dict(self) -> dict[str, list[str]]:
        return {"low_level": list(self.low_level), "high_level": list(self.high_level)}


def query_keywords(question: str) -> QueryKeywords:
    """The question's keywords, parsed with the shared spaCy pipeline (loaded once per process)."""
    from graphunified_query.spacy_text import load_pipeline

    return split_keywords(load_pipeline()(question))


def split_keywords(doc: Doc) -> QueryKeywords:
    from graphunified_query.router import question_entities

    low = tuple(name for name, _ in question_entities(doc))
    return QueryKeywords(low, tuple(theme_phrases(doc, name_words(low))))


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
