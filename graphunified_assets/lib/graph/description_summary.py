"""Extractive summaries of an entity's description fragments.

A frequent entity collects dozens of sentences; the ones closest to the centroid of all of them say
what the entity is, the outliers say what else happened nearby. No LLM needed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import numpy as np

# Sentence ends, except after an initial or a common title ("William T. Ellis", "St. Louis").
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\b(?:Mr|Dr|St|Jr|Sr)\.)\s+(?=[A-Z0-9\"'(“])")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORD_TEXT = (
    "a an and are as at be by for from had has have he her his in is it its of on or she that the their "
    "they this to was were which who with"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_NEAR_DUPLICATE = 0.8  # word Jaccard above which a second sentence adds nothing


def summarize_descriptions(
    fragments: list[str],
    *,
    max_sentences: int = 3,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    max_chars: int = 800,
) -> str:
    """The ``max_sentences`` most central sentences of the fragments, in their original order."""
    units = sentences(fragments)
    if not units:
        return ""
    scores = _centrality(units, embed) if len(units) > max_sentences else np.zeros(len(units))
    words = [_content_words(u) for u in units]
    picked: list[int] = []
    for i in sorted(range(len(units)), key=lambda i: (-scores[i], i)):
        if len(picked) == max_sentences:
            break
        if all(_jaccard(words[i], words[j]) < _NEAR_DUPLICATE for j in picked):
            picked.append(i)
    summary = ""
    for i in sorted(picked):
        candidate = f"{summary} {units[i]}".strip()
        if len(candidate) > max_chars:
            break
        summary = candidate
    return summary or units[picked[0]][: max_chars - 1].rstrip() + "…"


def sentences(fragments: list[str]) -> list[str]:
    """The distinct sentences of the fragments, in order: the units a summary picks from."""
    units: dict[str, None] = {}
    for fragment in fragments:
        for sentence in _SENTENCE_END.split(" ".join(fragment.split())):
            if sentence:
                units.setdefault(sentence, None)
    return list(units)


def _centrality(units: list[str], embed: Callable[[list[str]], np.ndarray] | None) -> np.ndarray:
    if embed is not None:
        vectors = np.asarray(embed(units), dtype=np.float32)
        centroid = vectors.mean(axis=0)
        return vectors @ (centroid / (np.linalg.norm(centroid) or 1.0))
    # Bag-of-words centroid: a sentence scores by how many other sentences share its words.
    words = [_content_words(u) for u in units]
    frequency = Counter(w for ws in words for w in ws)
    return np.array([sum(frequency[w] - 1 for w in ws) / (len(ws) ** 0.5 or 1.0) for ws in words])


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0
