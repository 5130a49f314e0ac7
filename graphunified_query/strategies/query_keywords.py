"""LightRAG's dual-level query keywords, offline: the names a question mentions and its themes.

LightRAG asks its LLM for low-level keywords (the specific entities a question names) and
high-level keywords (the concepts or themes it is about); `local` mode matches entities against the
first and `global` mode matches relationships against the second. Offline, the low-level keywords
are the question's named entities (spaCy NER plus capitalized runs) and the high-level ones
the common nouns and adjectives of the question's noun phrases, outside any name: "Who is the
director of film Jump for Glory?" → low ["Jump for Glory"], high ["director", "film"].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphunified_query.core.text.entity_names import LABEL_TO_TYPE, clean_name
from graphunified_query.core.text.themes import name_words, theme_phrases
from graphunified_query.strategies.mentions import NOT_BRIDGES

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token


@dataclass(frozen=True)
class QueryKeywords:
    low_level: tuple[str, ...]  # entities: what `local` mode looks up
    high_level: tuple[str, ...]  # themes: what `global` mode looks up

    def as_dict(self) -> dict[str, list[str]]:
        return {"low_level": list(self.low_level), "high_level": list(self.high_level)}


def query_keywords(question: str) -> QueryKeywords:
    """The question's keywords, parsed with the shared spaCy pipeline (loaded once per process)."""
    from graphunified_query.core.text.spacy_text import load_pipeline

    return split_keywords(load_pipeline()(question))


def split_keywords(doc: Doc) -> QueryKeywords:
    low = tuple(name for name, _ in question_entities(doc))
    return QueryKeywords(low, tuple(theme_phrases(doc, name_words(low))))


def question_entities(doc: Doc) -> tuple[tuple[str, str], ...]:
    """spaCy's named entities, plus capitalized proper-noun runs its small model misses, in order:
    (name, type). The noun chunks are parsed anyway, so the names come from the same parse."""
    spans = [(ent.start, ent.text, LABEL_TO_TYPE.get(ent.label_)) for ent in doc.ents]
    found = [(start, text, type_) for start, text, type_ in spans if type_ and type_ not in NOT_BRIDGES]
    run: list[Token] = []
    for token in [*doc, None]:
        if token is not None and _is_unlabelled_name(token):
            run.append(token)
        elif run:
            found.append((run[0].i, " ".join(t.text for t in run), "UNKNOWN"))
            run = []
    names: dict[str, str] = {}
    for _, text, type_ in sorted(found):
        if name := clean_name(text):
            names.setdefault(name, type_ or "UNKNOWN")
    return tuple(names.items())


def _is_unlabelled_name(token: Token) -> bool:
    # A capital is a name's mark except on the first word, which needs spaCy's PROPN tag as well.
    return (
        token.is_title and token.is_alpha and token.ent_iob_ == "O" and (token.i > 0 or token.pos_ == "PROPN")
    )
