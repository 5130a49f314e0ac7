"""The named entities a question mentions, and its possessives, found without a language model.

The router reads them on every routed question. Parsing the question with spaCy made the first
routed question pay a second (importing spaCy, loading its pipeline) for what the index already
knows: the names the corpus holds and their types (`NameIndex`). A question's entities are the
quoted titles it gives, the spans naming indexed entities (typed by the index), and capitalized
runs the index does not hold (UNKNOWN), in order. A name must show a capital past the question's
first word, as spaCy's entities and the router's unlabelled names did; dates narrow a question
and are no entity to hop through (`NOT_BRIDGES`). Without an index (a bare `Router`), the
capitalized runs and quoted titles alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphunified_query.core.text.entity_names import clean_name
from graphunified_query.strategies.entity_linking import WORD, NameIndex

NOT_BRIDGES = {"DATE"}  # a year in a question narrows it; it is not an entity to hop through
UNKNOWN = "UNKNOWN"

# Capitalized words that are dates (spaCy's DATE, a NOT_BRIDGES type), not names.
_DATE_WORD = re.compile(
    r"january|february|march|april|may|june|july|august|september|october|november|december"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
)
# Lowercase words a name may hold between capitals: "Jump for Glory", "Ludwig van Beethoven"; not
# "and", which mostly joins two names ("Thomas Hale and Ada Lovelace").
_CONNECTORS = re.compile(r"of|for|the|de|von|van|du|la|der|del|da|di|le")
# What may stand between two words of one name: a space, or "-", "'", ".", "&" ("Saint-Denis",
# "O'Brien", "St. Louis", "Procter & Gamble"); a comma or a bracket ends the name.
_NAME_GAP = re.compile(r"\s*[-'’.&]?\s*")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
# "X's": a possessive unless X is a pronoun or wh-word ("what's" = "what is"); "players' union".
_POSSESSIVE = re.compile(r"\b([^\W_]+)['’]s\b|(?<=[^\W_]s)['’](?=\s)")
_CONTRACTED = re.compile(r"it|he|she|that|this|there|here|let|what|who|where|when|how|why|which")


Entities = tuple[tuple[str, str], ...]


def mentions(question: str, index: NameIndex | None = None) -> tuple[Entities, int]:
    """The question's named entities as (name, type), in order, and its number of possessives."""
    words = list(WORD.finditer(question))
    texts = [w.group() for w in words]
    quoted = _quoted(question, words)
    taken = [any(f <= i < e for f, e in quoted) for i in range(len(words))]
    linked = {
        (f, e): key
        for f, e, key in (index.spans(texts) if index else ())
        if not any(taken[f:e]) and _is_name(texts, f, e)
    }
    # A name's extent is the union of its capitalized run and the indexed name it overlaps:
    # "Thomas Hale" opening the question, "Harrow Valley Railway" when only "Harrow Valley" is indexed.
    spans = _union(sorted([*_capitalized_runs(question, words, taken), *linked]))
    names: dict[str, str] = {}
    for first, end in sorted([*quoted, *spans]):
        name = clean_name(question[words[first].start() : words[end - 1].end()])
        type_ = _type(index, texts, first, end, linked)
        if name and type_ not in NOT_BRIDGES:
            names.setdefault(name, type_)
    return tuple(names.items()), possessives(question)


def _type(
    index: NameIndex | None, texts: Sequence[str], first: int, end: int, linked: dict[tuple[int, int], str]
) -> str:
    """The indexed type of the span's name, else of the longest indexed name inside it."""
    if index is None:
        return UNKNOWN
    key = " ".join(t.lower() for t in texts[first:end])
    if key in index.types:
        return index.types[key]
    inside = [(e - f, key) for (f, e), key in linked.items() if first <= f and e <= end]
    return index.types[max(inside)[1]] if inside else UNKNOWN


def _union(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, end in spans:  # sorted by first word
        if merged and first < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((first, end))
    return merged


def possessives(question: str) -> int:
    return sum(
        1
        for m in _POSSESSIVE.finditer(question)
        if m.group(1) is None or not _CONTRACTED.fullmatch(m.group(1).lower())
    )


def _is_name(texts: Sequence[str], first: int, end: int) -> bool:
    """A capital past the question's first word and not a bare number or date."""
    return any(_capital(texts[i]) for i in range(max(first, 1), end))


def _capital(word: str) -> bool:
    return word[:1].isupper() and word.isalpha() and not _DATE_WORD.fullmatch(word.lower())


def _quoted(question: str, words: Sequence[re.Match[str]]) -> list[tuple[int, int]]:
    """(first word, end word) of each quoted title with a capital in it."""
    spans = []
    for m in _QUOTED.finditer(question):
        inside = [i for i, w in enumerate(words) if m.start() < w.start() and w.end() < m.end()]
        if inside and any(words[i].group()[:1].isupper() for i in inside):
            spans.append((inside[0], inside[-1] + 1))
    return spans


def _capitalized_runs(
    question: str, words: Sequence[re.Match[str]], taken: Sequence[bool]
) -> list[tuple[int, int]]:
    """(first word, end word) of each run of capitalized words past the first word, joined by
    connectors and name gaps, outside the spans already found."""
    runs = []
    i = 1
    while i < len(words):
        if taken[i] or not _capital(words[i].group()):
            i += 1
            continue
        end = i + 1
        last_capital = end
        while end < len(words) and not taken[end] and _joined(question, words[end - 1], words[end]):
            word = words[end].group()
            if _capital(word):
                last_capital = end + 1
            elif not _CONNECTORS.fullmatch(word):
                break
            end += 1
        runs.append((i, last_capital))
        i = last_capital
    return runs


def _joined(question: str, before: re.Match[str], after: re.Match[str]) -> bool:
    return _NAME_GAP.fullmatch(question, before.end(), after.start()) is not None
