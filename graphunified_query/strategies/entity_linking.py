"""Link a question's spans to graph entities by name, longest match first.

A question names its entities ("the director of Jump for Glory"); matching its word n-grams
against the graph's entity titles finds them exactly, where embedding the whole question finds
entities merely about similar things. A single word must be capitalized in the question to count,
so "state" or "river" do not link to entities that happen to be called that.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphunified_query.snapshot.arrow_rows import column_of

if TYPE_CHECKING:
    from graphunified_query.snapshot.model import Snapshot

WORD = re.compile(r"[^\W_]+", re.UNICODE)  # a word of a name or question (mentions.py too)
MAX_WORDS = 8


def name_key(text: str) -> str:
    return " ".join(w.lower() for w in WORD.findall(text))


@dataclass(frozen=True)
class NameIndex:
    rows: dict[str, tuple[int, ...]]  # normalized title → entity rows
    types: dict[str, str]  # normalized title → its entities' most common type (the router's)

    @classmethod
    def build(cls, entities: Sequence[Mapping[str, Any]]) -> NameIndex:
        rows: dict[str, list[int]] = {}
        for i, title in enumerate(column_of(entities, "title")):  # by column: one pass, no row objects
            key = name_key(title)
            if key and key.count(" ") < MAX_WORDS:
                rows.setdefault(key, []).append(i)
        typed = len(entities) > 0 and "type" in entities[0]  # titles alone (tests): every type unknown
        kinds = column_of(entities, "type") if typed else ["UNKNOWN"] * len(entities)
        types = {
            key: kinds[found[0]] if len(found) == 1 else Counter(kinds[i] for i in found).most_common(1)[0][0]
            for key, found in rows.items()
        }
        return cls({key: tuple(found) for key, found in rows.items()}, types)

    def link(self, question: str) -> list[tuple[str, tuple[int, ...]]]:
        """(matched span, entity rows) for each maximal span of the question that names entities."""
        words = WORD.findall(question)
        return [(" ".join(words[i:j]), self.rows[key]) for i, j, key in self.spans(words)]

    def spans(self, words: Sequence[str]) -> list[tuple[int, int, str]]:
        """(first word, end word, key) of each maximal run of ``words`` that names entities."""
        keys = [w.lower() for w in words]
        found = []
        i = 0
        while i < len(words):
            for length in range(min(MAX_WORDS, len(words) - i), 0, -1):
                key = " ".join(keys[i : i + length])
                if key in self.rows and (
                    length > 1 or (words[i][:1].isupper() and i > 0) or words[i].isdigit()
                ):
                    found.append((i, i + length, key))
                    i += length
                    break
            else:
                i += 1
        return found


def name_index(snapshot: Snapshot) -> NameIndex:
    """The snapshot's name index, built on first use and shared by every reader of that snapshot
    (hipporag's and expanded's entity linking, the router's question entities)."""
    cached = snapshot.extras.get("name_index")
    if cached is None:
        cached = snapshot.extras["name_index"] = NameIndex.build(snapshot.entities)
    return cached
