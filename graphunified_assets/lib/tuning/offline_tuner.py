"""Offline tuning: which entity types and domain terms the local NER model sees in a corpus.

The entity-type distribution decides the types to keep (a type under 2 % of mentions mostly
adds noise nodes); frequent noun-phrase heads outside named entities ("replication", "server")
are the corpus's domain terms, which the offline extractor then records as CONCEPT entities.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphunified_assets.lib.extraction.offline_extractor import singular
from graphunified_assets.lib.tuning.corpus import CorpusChunk
from graphunified_query.core.text.spacy_text import LABEL_TO_TYPE, load_pipeline

if TYPE_CHECKING:  # spaCy (1 s to import) only when something is parsed
    from spacy.language import Language

MIN_TYPE_SHARE = 0.02
MIN_HEAD_COUNT = 3
MAX_HEADS = 25
# Heads too generic to name a domain concept in any corpus.
_GENERIC_HEADS = frozenset(
    [
        "year",
        "time",
        "part",
        "way",
        "number",
        "one",
        "people",
        "thing",
        "lot",
        "kind",
        "type",
        "end",
        "place",
        "day",
        "side",
        "use",
        "case",
        "group",
        "other",
        "some",
        "first",
        "second",
        "all",
        "many",
        "most",
        "what",
        "which",
        "who",
        "this",
        "that",
        "it",
        "they",
        "them",
        "he",
        "she",
        "we",
        "you",
        "i",
        "name",
        "form",
        "area",
        "member",
        "work",
        "world",
        "life",
        "home",
        "week",
        "month",
        "century",
    ]
)


@dataclass(frozen=True)
class OfflineProfile:
    type_counts: dict[str, int]
    head_counts: dict[str, int]  # noun-phrase head -> chunks it heads a phrase in
    entity_types: tuple[str, ...]
    concept_heads: tuple[str, ...]


def profile_corpus(chunks: Sequence[CorpusChunk], nlp: Language | None = None) -> OfflineProfile:
    nlp = nlp or load_pipeline()
    types: Counter[str] = Counter()
    heads: Counter[str] = Counter()
    head_docs: dict[str, set[str]] = {}
    for chunk, doc in zip(chunks, nlp.pipe((c.chunk.text for c in chunks), batch_size=32), strict=True):
        for ent in doc.ents:
            if (type_ := LABEL_TO_TYPE.get(ent.label_)) is not None:
                types[type_] += 1
        seen: set[str] = set()
        for phrase in doc.noun_chunks:
            head = singular(phrase.root.lower_)
            if (
                any(t.ent_type_ for t in phrase)
                or not head.isalpha()
                or len(head) < 3
                or head in _GENERIC_HEADS
            ):
                continue
            if phrase.root.pos_ != "NOUN" or head in seen:
                continue
            seen.add(head)
            heads[head] += 1
            head_docs.setdefault(head, set()).add(chunk.document_id)
    total = sum(types.values()) or 1
    kept = [t for t, n in types.most_common() if n >= 2 and n / total >= MIN_TYPE_SHARE]
    n_docs = len({c.document_id for c in chunks})
    min_docs = 2 if n_docs > 1 else 1
    concept = [h for h, n in heads.most_common() if n >= MIN_HEAD_COUNT and len(head_docs[h]) >= min_docs][
        :MAX_HEADS
    ]
    if concept and "CONCEPT" not in kept:
        kept.append("CONCEPT")
    return OfflineProfile(dict(types.most_common()), dict(heads.most_common(40)), tuple(kept), tuple(concept))
