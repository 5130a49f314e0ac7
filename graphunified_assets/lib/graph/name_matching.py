"""Entity-name normalization and the candidate rules entity resolution merges on.

Every rule works inside one entity type and proposes pairs of normalized names; blocking (by type
and name prefix, `fuzzy_blocks`) keeps the work near-linear in the number of names. The fuzzy and
embedding-neighbour pairs themselves are computed, and remembered between builds, by
`resolution_pairs.PairMemory`.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache

import numpy as np

Embed = Callable[[list[str]], np.ndarray]

_POSSESSIVE = re.compile(r"['’]s$|(?<=s)['’]$")
_LEADING_THE = re.compile(r"^the\s+")
_NON_WORD = re.compile(r"[^\w]+")
# Numbers and regnal numerals tell apart names that are otherwise near-identical
# ("Henry VII" / "Henry VIII", "1990 FIFA World Cup" / "1994 FIFA World Cup").
# Initials likewise ("George W. Bush" / "George H. W. Bush").
_MARKER = re.compile(r"^(?:\w*\d\w*|[ivx]+|[a-z])$")
_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv"})
_MIN_FUZZY_CHARS = 5


def normalize_name(name: str) -> str:
    """Case-, accent- and punctuation-insensitive key: "The U.S.'s" → "us", "Besançon" → "besancon"."""
    text = unicodedata.normalize("NFKC", name).strip()
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    text = _POSSESSIVE.sub("", text.casefold().strip())
    text = text.replace("&", " and ").replace(".", "").replace("'", "").replace("’", "")
    text = _NON_WORD.sub(" ", text).replace("_", " ")
    text = " ".join(text.split())
    return _LEADING_THE.sub("", text)


@lru_cache(maxsize=1 << 17)  # asked for both names of every candidate pair: 40K calls, 9.4K names at 12.6K
def markers(norm: str) -> tuple[str, ...]:
    return tuple(sorted(t for t in norm.split() if _MARKER.match(t)))


def fuzzy_blocks(names: Sequence[str]) -> dict[str, list[int]]:
    """Indexes of the names sharing the first two letters of the name or of its last word; names
    shorter than five characters are left out (too short to tell a typo from another name)."""
    blocks: dict[str, set[int]] = defaultdict(set)
    for i, name in enumerate(names):
        if len(name) >= _MIN_FUZZY_CHARS:
            blocks["a" + name[:2]].add(i)
            blocks["z" + name.split()[-1][:2]].add(i)
    return {key: sorted(blocks[key]) for key in sorted(blocks)}


def middle_name_pairs(names: Sequence[str], roots: Sequence[int]) -> list[tuple[int, int]]:
    """ "John Kennedy" → "John F. Kennedy" when exactly one person has that first and last name
    ("George Bush" stays apart from both "George W. Bush" and "George H. W. Bush")."""
    by_ends: dict[tuple[str, str], set[int]] = defaultdict(set)
    for i, name in enumerate(names):
        words = _core_words(name)
        if len(words) >= 3:
            by_ends[(words[0], words[-1])].add(i)
    pairs: list[tuple[int, int]] = []
    for i, name in enumerate(names):
        words = _core_words(name)
        target = (
            _unique_cluster(by_ends.get((words[0], words[-1]), set()), roots) if len(words) == 2 else None
        )
        if target is not None:
            pairs.append((i, target))
    return pairs


def short_name_pairs(
    names: Sequence[str], roots: Sequence[int], chunks: Callable[[int], AbstractSet[str]]
) -> list[tuple[int, int]]:
    """Single-word PERSON names merged into the one cluster they can mean.

    ``roots`` holds each name's current cluster, so variants already merged count as one person.
    "Obama" joins the one cluster whose multi-word names end in "obama" (two Smiths: no merge); a
    bare first name joins only if no name ends in it and it shares a passage (``chunks`` of a
    name's index: asked only of candidates) with that person.
    """
    by_last: dict[str, set[int]] = defaultdict(set)
    by_first: dict[str, set[int]] = defaultdict(set)
    for i, name in enumerate(names):
        words = _core_words(name)
        if len(words) >= 2:
            by_last[words[-1]].add(i)
            by_first[words[0]].add(i)
    pairs: list[tuple[int, int]] = []
    for i, name in enumerate(names):
        if " " in name:  # "Napoleon III" is a full name, not a short form
            continue
        words = [name]
        target = _unique_cluster(by_last.get(words[0], set()), roots)
        if target is None and not by_last.get(words[0]):
            target = _unique_cluster(by_first.get(words[0], set()), roots)
            if target is not None and not chunks(i) & chunks(target):
                target = None
        if target is not None:
            pairs.append((i, target))
    return pairs


def _core_words(name: str) -> list[str]:
    words = name.split()
    while len(words) > 1 and words[-1] in _NAME_SUFFIXES:
        words.pop()
    return words


def _unique_cluster(candidates: set[int], roots: Sequence[int]) -> int | None:
    return min(candidates) if len({roots[c] for c in candidates}) == 1 else None
