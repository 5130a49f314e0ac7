"""LightRAG's dual-level query keywords, offline: the names a question mentions and its themes.

LightRAG asks its LLM for low-level keywords (the specific entities a question names) and
high-level keywords (the concepts or themes it is about); `local` mode matches entities against the
first and `global` mode matches relationships against the second. Offline, the low-level keywords
are the named entities the router finds (spaCy NER plus capitalized runs) and the high-level ones
the common nouns and adjectives of the question's noun phrases, outside any name: "Who is the
director of film Jump for Glory?" → low ["Jump for Glory"], high ["director", "film"].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc

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
    name_words = {word.lower() for name in low for word in name.split()}
    high: list[str] = []
    for chunk in doc.noun_chunks:
        words = [
            t.text.lower()
            for t in chunk
            if t.pos_ in _THEME_POS and t.ent_iob_ == "O" and t.text.lower() not in name_words
        ]
        if words:
            high.append(" ".join(words))
    return QueryKeywords(low, tuple(dict.fromkeys(high)))
