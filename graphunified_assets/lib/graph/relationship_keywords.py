"""LightRAG's high-level keywords of relationships: made where the extractor gave none, merged.

LightRAG's extraction prompt asks the LLM for each relationship's "high-level keywords", the
themes of the relation rather than its entities, and indexes the relationship by them; `global`
query mode matches a question's themes against them. The LLM extractor's tool asks for them too.
The offline extractor gives none, so here, before relationships are aggregated, each relationship
without keywords gets the theme phrases of its own sentence (its description: the offline
extractor's description *is* the sentence, or two), minus the words of its two entity names.

The phrases are applied in the graph stage, not by the extractor, so adding them left the
per-chunk extraction cache valid (a full re-extraction of a dev set costs half an hour). Parsing is
the cost: each distinct description is parsed once, over `extraction.parse_processes` worker
processes, and its phrases are cached on disk by content (SHA-256 of the description, the theme
rule's source and the model), so a re-run parses nothing it parsed before; they are read and
written in batches (a commit per row was 14 % of the cold parsing time). The per-document
`extractions` step parses its own documents' descriptions into that cache, so the parse spreads
with the document runs (over workers, on a cluster) and the one global step finds them parsed.

Merging: an edge seen in several chunks has the union of its mentions' keywords, the most
frequent first (then first seen), at most `MAX_EDGE_KEYWORDS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphunified_query.core.providers.llm_cache import LLMCache, request_key

if TYPE_CHECKING:
    from spacy.tokens import Doc

MAX_EDGE_KEYWORDS = 10
SAVE_EVERY = 512  # parsed texts per cache transaction
MAX_MENTION_KEYWORDS = 8  # per relationship mention; as records.MAX_KEYWORDS for the LLM's
Phrases = Callable[[list[str]], list[list[str]]]  # descriptions -> their theme phrases


class SpacyPhrases:
    """Theme phrases of texts with the shared spaCy pipeline (loaded once per process), cached by
    content when a cache is given. The graph stage keeps in the cache only the `keys` of every
    live relationship's sentence, so a removed document's sentences leave the cache with it
    (they used to stay for good)."""

    def __init__(self, cache: LLMCache | None = None, processes: int = 1) -> None:
        from graphunified_assets.lib.extraction.extraction_cache import source_digest
        from graphunified_query.core.text import themes
        from graphunified_query.core.text.spacy_text import DEFAULT_MODEL

        self.cache = cache
        self.processes = processes  # spaCy worker processes (`extraction.parse_processes`)
        self.parsed = 0  # texts not found in the cache, parsed by this instance
        # What decides a text's phrases: the theme rule and the model (not how they are parsed or merged).
        self._version = {
            "themes": source_digest(themes),
            "model": DEFAULT_MODEL,
        }

    def __call__(self, texts: list[str]) -> list[list[str]]:
        from graphunified_assets.lib.extraction.spacy_workers import read_docs

        cache = self.cache
        keys = self.keys(texts)
        cached = cache.get_many(keys) if cache is not None else {}
        found = {i: list(cached[key]["phrases"]) for i, key in enumerate(keys) if key in cached}
        missing = [i for i in range(len(texts)) if i not in found]
        self.parsed += len(missing)
        parsed: dict[str, dict[str, list[str]]] = {}
        asked = [texts[i] for i in missing]
        read = read_docs(asked, _phrases, processes=self.processes, batch_size=64) if missing else ()
        for i, phrases in zip(missing, read, strict=True):
            found[i] = phrases
            if cache is None:
                continue
            parsed[keys[i]] = {"phrases": found[i]}
            if len(parsed) == SAVE_EVERY:
                cache.put_many(parsed)  # a transaction per batch: a crash loses at most one
                parsed = {}
        if cache is not None and parsed:
            cache.put_many(parsed)
        return [found[i] for i in range(len(texts))]

    def keys(self, texts: Iterable[str]) -> list[str]:
        """The cache keys of ``texts``' phrases."""
        return [request_key({**self._version, "text": text}) for text in texts]


def with_keywords(
    rows: Iterable[dict[str, Any]], phrases: Phrases, texts: list[str] | None = None
) -> Iterable[dict[str, Any]]:
    """Extraction rows whose relationships all carry keywords: the extractor's where it gave
    some, else the theme phrases of the relationship's description without its entity names.

    One pass over ``rows`` gathers the descriptions to parse (``texts``, when a pass the caller
    made anyway gathered them with `gather_texts`); the rows themselves are filled one at a time
    as they are read (re-iterable when ``rows`` is), so none is copied ahead.
    """
    if texts is None:
        texts = texts_to_parse(rows)
    return _KeywordedRows(rows, dict(zip(texts, phrases(texts), strict=True)) if texts else {})


def texts_to_parse(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The descriptions of ``rows``' relationships that need theme phrases, first seen first."""
    texts: dict[str, None] = {}
    for row in rows:
        gather_texts(row, texts)
    return list(texts)


def gather_texts(row: dict[str, Any], texts: dict[str, None]) -> None:
    """Adds the row's descriptions that need theme phrases to ``texts`` (first-seen order)."""
    for rel in row["relationships"]:
        if not rel.get("keywords") and rel["description"]:
            texts.setdefault(rel["description"])


@dataclass(frozen=True)
class _KeywordedRows:
    rows: Iterable[dict[str, Any]]
    by_text: dict[str, list[str]]  # description -> its theme phrases

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for row in self.rows:
            relationships = []
            for rel in row["relationships"]:
                if not rel.get("keywords"):
                    names = _words([rel["source"], rel["target"]])
                    found = self.by_text.get(rel["description"], [])
                    rel = {**rel, "keywords": without_names(found, names)[:MAX_MENTION_KEYWORDS]}
                relationships.append(rel)
            yield {**row, "relationships": relationships}


def _phrases(_: int, doc: Doc) -> list[str]:
    from graphunified_query.core.text.themes import theme_phrases

    return theme_phrases(doc)


def without_names(phrases: Iterable[str], name_words: set[str]) -> list[str]:
    """Each phrase without the entity names' words; phrases left empty are dropped."""
    kept = (" ".join(w for w in phrase.split() if w not in name_words) for phrase in phrases)
    return list(dict.fromkeys(p for p in kept if p))


def ranked(counts: Counter[str], limit: int = MAX_EDGE_KEYWORDS) -> list[str]:
    """The most frequent keywords first; ties keep the order they were first seen in."""
    order = {k: i for i, k in enumerate(counts)}
    return sorted(counts, key=lambda k: (-counts[k], order[k]))[:limit]


def _words(names: Iterable[str]) -> set[str]:
    from graphunified_query.core.text.themes import name_words

    return name_words(list(names))
