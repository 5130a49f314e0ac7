"""Link a question's spans to graph entities by name, longest match first.

A question names its entities ("the director of Jump for Glory"); matching its word n-grams
against the graph's entity titles finds them exactly, where embedding the whole question finds
entities merely about similar things. A single word must be capitalized in the question to count,
so "state" or "river" do not link to entities that happen to be called that.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_WORDS = 8


def name_key(text: str) -> str:
    return " ".join(w.lower() for w in _WORD.findall(text))


@dataclass(frozen=True)
class NameIndex:
    rows: dict[str, tuple[int, ...]]  # normalized title → entity rows

    @classmethod
    def build(cls, entities: Sequence[dict[str, Any]]) -> NameIndex:
        rows: dict[str, list[int]] = defaultdict(list)
        for i, entity in enumerate(entities):
            key = name_key(entity["title"])
            if key and len(key.split()) <= MAX_WORDS:
                rows[key].append(i)
        return cls({key: tuple(found) for key, found in rows.items()})

    def link(self, question: str) -> list[tuple[str, tuple[int, ...]]]:
        """(matched span, entity rows) for each maximal span of the question that names entities."""
        words = _WORD.findall(question)
        keys = [w.lower() for w in words]
        found = []
        i = 0
        while i < len(words):
            for length in range(min(MAX_WORDS, len(words) - i), 0, -1):
                key = " ".join(keys[i : i + length])
                if key in self.rows and (
                    length > 1 or (words[i][:1].isupper() and i > 0) or words[i].isdigit()
                ):
                    found.append((" ".join(words[i : i + length]), self.rows[key]))
                    i += length
                    break
            else:
                i += 1
        return found
