"""The embedded extractor: spaCy NER, sentence co-occurrence and dependency-parse triples.

It needs no API key and runs at tens of passages per second on two cores, so the whole pipeline
works offline; the LLM extractor replaces it when a key is configured.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphunified_assets.lib.extraction.offline_facts import connecting_verb, sentence_triples
from graphunified_assets.lib.extraction.records import (
    ChunkExtraction,
    ChunkText,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
)
from graphunified_assets.lib.extraction.spacy_workers import read_docs
from graphunified_query.core.text.spacy_text import (
    LABEL_TO_TYPE,
    clean_name,
    is_useful_name,
    load_pipeline,
    trim,
)

if TYPE_CHECKING:  # spaCy (1 s to import) only when something is parsed
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

_PRONOUNS = frozenset({"he", "she", "him", "his", "her", "hers", "himself", "herself"})
_SENTENCE_CHARS = 300
_DESCRIPTION_CHARS = 600
_DESCRIPTION_SENTENCES = 3
_ALIASED_TYPES = frozenset({"PERSON", "ORGANIZATION"})

Key = tuple[str, str]  # (name, type)


@dataclass
class _Pair:
    count: int = 0
    verbs: Counter[str] = field(default_factory=Counter)
    direction: dict[str, Key] = field(default_factory=dict)  # verb → source key
    sentences: list[str] = field(default_factory=list)


class OfflineExtractor:
    """Implements ``Extractor`` with spaCy only."""

    name = "offline-spacy"

    def __init__(
        self,
        *,
        entity_types: Iterable[str],
        nlp: Language | None = None,
        concept_heads: Iterable[str] = (),
        processes: int = 1,
    ) -> None:
        self.entity_types = frozenset(t.upper() for t in entity_types)
        # Domain terms NER never tags ("logical replication"): noun phrases with these head nouns,
        # found by offline tuning (extraction.concept_heads), become CONCEPT entities.
        self.concept_heads = (
            frozenset(singular(h) for h in concept_heads) if "CONCEPT" in self.entity_types else frozenset()
        )
        self._nlp = nlp
        self.processes = processes  # spaCy worker processes per call (`extraction.parse_processes`)

    @property
    def nlp(self) -> Language:
        if self._nlp is None:
            self._nlp = load_pipeline()
        return self._nlp

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        # The title line is not a sentence: spaCy would glue it onto the first one. It is added as
        # an entity of its own instead (see _add_title).
        texts = [_without_title(c) for c in chunks]

        def read(i: int, doc: Doc) -> ChunkExtraction:
            return self._extract_doc(chunks[i].chunk_id, doc, chunks[i].title)

        return list(read_docs(texts, read, processes=self.processes, batch_size=32, nlp=self.nlp))

    def _extract_doc(self, chunk_id: str, doc: Doc, title: str = "") -> ChunkExtraction:
        entity_at = {t.i: ent for ent in doc.ents for t in ent}
        short_forms = _short_forms(doc)
        mentions: dict[Key, list[str]] = {}
        pairs: dict[tuple[Key, Key], _Pair] = {}
        facts: list[tuple[str, str, str]] = []
        antecedent: str | None = None  # last PERSON subject, for he/she in later sentences
        n_sentences = 0
        for sent in doc.sents:
            n_sentences += 1
            text = trim(sent.text, _SENTENCE_CHARS)
            found = self._sentence_entities(sent, short_forms)
            aliases = {t.i: antecedent for t in sent if t.lower_ in _PRONOUNS} if antecedent else {}
            if antecedent and aliases and "PERSON" in self.entity_types:
                first_pronoun = doc[min(aliases)]
                if all(key != (antecedent, "PERSON") for key, _ in found):
                    found.append(((antecedent, "PERSON"), first_pronoun))
            for key, _ in found:
                mentions.setdefault(key, [])
                if text not in mentions[key]:
                    mentions[key].append(text)
            self._count_pairs(found, text, pairs)
            for subj, pred, obj in sentence_triples(sent, entity_at, aliases):
                fact = (short_forms.get(subj, (subj, ""))[0], pred, short_forms.get(obj, (obj, ""))[0])
                if fact not in facts:
                    facts.append(fact)
            antecedent = _next_antecedent(sent, antecedent)
        if title:
            self._add_title(title, doc, mentions, pairs)
        return ChunkExtraction(
            chunk_id=chunk_id,
            entities=tuple(
                ExtractedEntity(name=name, type=type_, description=_describe(sentences))
                for (name, type_), sentences in mentions.items()
            ),
            relationships=tuple(_relationship(a, b, pair) for (a, b), pair in pairs.items()),
            facts=tuple(ExtractedFact(subject=s, predicate=p, object=o) for s, p, o in facts),
            extra={"sentences": float(n_sentences)},
        )

    def _add_title(
        self, title: str, doc: Doc, mentions: dict[Key, list[str]], pairs: dict[tuple[Key, Key], _Pair]
    ) -> None:
        """The passage's title is an entity (HippoRAG indexes titles too): the subject the passage is
        about, often never tagged by NER ("Jump for Glory"), related to what its opening mentions."""
        name = clean_name(title)
        if not is_useful_name(name, "CONCEPT"):
            return
        same = [key for key in mentions if key[0].lower() == name.lower()]
        key = same[0] if same else (name, _title_type(doc, name, self.entity_types))
        opening = [
            trim(s.text, _SENTENCE_CHARS) for s in list(doc.sents)[:_TITLE_SENTENCES] if s.text.strip()
        ]
        if key not in mentions:
            mentions[key] = opening[:1]
        related = [other for other, texts in mentions.items() if other != key and set(texts) & set(opening)]
        for other in related[:_TITLE_RELATIONS]:
            pair = pairs.setdefault((key, other) if key <= other else (other, key), _Pair())
            pair.count += 1
            shared = next(t for t in opening if t in mentions[other])
            if shared not in pair.sentences:
                pair.sentences.append(shared)

    def _sentence_entities(self, sent: Span, short_forms: dict[str, Key]) -> list[tuple[Key, Token]]:
        """Kept entities of a sentence, first mention of each, with the span's root token."""
        found: list[tuple[Key, Token]] = []
        for ent in sent.ents:
            name, type_ = clean_name(ent.text), LABEL_TO_TYPE.get(ent.label_)
            if type_ in _ALIASED_TYPES:
                name, type_ = short_forms.get(name, (name, type_))
            if type_ is None or type_ not in self.entity_types:
                continue
            if not is_useful_name(name, type_):
                continue
            key = (name, type_)
            if all(key != seen for seen, _ in found):
                found.append((key, ent.root))
        if self.concept_heads:
            found.extend(self._concept_phrases(sent, found))
        return found

    def _concept_phrases(self, sent: Span, found: list[tuple[Key, Token]]) -> list[tuple[Key, Token]]:
        """Noun phrases headed by a tuned concept head, outside any named entity."""
        extra: list[tuple[Key, Token]] = []
        for chunk in sent.noun_chunks:
            if singular(chunk.root.lower_) not in self.concept_heads or any(t.ent_type_ for t in chunk):
                continue
            words = [t for t in chunk if t.dep_ not in {"det", "poss", "predet"} and not t.is_punct]
            name = clean_name(" ".join(t.text for t in words))
            key = (name, "CONCEPT")
            if is_useful_name(name, "CONCEPT") and all(key != seen for seen, _ in [*found, *extra]):
                extra.append((key, chunk.root))
        return extra

    @staticmethod
    def _count_pairs(found: list[tuple[Key, Token]], text: str, pairs: dict[tuple[Key, Key], _Pair]) -> None:
        for i, (a, a_root) in enumerate(found):
            for b, b_root in found[i + 1 :]:
                if a[0].lower() == b[0].lower() or (a[1] == "DATE" and b[1] == "DATE"):
                    continue
                pair = pairs.setdefault((a, b) if a <= b else (b, a), _Pair())
                pair.count += 1
                if text not in pair.sentences:
                    pair.sentences.append(text)
                linked = connecting_verb(a_root, b_root)
                if linked is not None:
                    verb, a_is_source = linked
                    pair.verbs[verb] += 1
                    pair.direction.setdefault(verb, a if a_is_source else b)


def _short_forms(doc: Doc) -> dict[str, Key]:
    """In-passage short forms: "Harris" after "Calvin Harris" is the same person (spaCy often labels
    the bare surname ORG), so a single word that ends exactly one longer PERSON/ORG name becomes it."""
    full: dict[str, set[Key]] = {}
    singles: set[str] = set()
    for ent in doc.ents:
        type_ = LABEL_TO_TYPE.get(ent.label_)
        name = clean_name(ent.text)
        words = name.split()
        if len(words) == 1 and type_ in _ALIASED_TYPES:
            singles.add(name)
        elif len(words) > 1 and type_ in _ALIASED_TYPES:
            full.setdefault(words[-1], set()).add((name, type_))
    return {s: next(iter(full[s])) for s in sorted(singles) if len(full.get(s, ())) == 1}


def _next_antecedent(sent: Span, current: str | None) -> str | None:
    for ent in sent.ents:
        if ent.label_ == "PERSON" and ent.root.dep_ in {"nsubj", "nsubjpass"}:
            return clean_name(ent.text) or current
    if current is None:
        return next((clean_name(e.text) for e in sent.ents if e.label_ == "PERSON"), None)
    return current


def _without_title(chunk: ChunkText) -> str:
    head = chunk.text.lstrip()
    if chunk.title and head.startswith(chunk.title) and head[len(chunk.title) : len(chunk.title) + 1] in "\n":
        return head[len(chunk.title) :].lstrip()
    return chunk.text


_TITLE_SENTENCES = 2  # a passage's opening sentences say what its title entity relates to
_TITLE_RELATIONS = 8


def _title_type(doc: Doc, name: str, entity_types: frozenset[str] | set[str] | tuple[str, ...]) -> str:
    """The NER type of the title when spaCy tagged it somewhere in the passage, else CONCEPT."""
    for ent in doc.ents:
        type_ = LABEL_TO_TYPE.get(ent.label_)
        if type_ is not None and type_ in entity_types and clean_name(ent.text).lower() == name.lower():
            return type_
    return "CONCEPT"


def singular(word: str) -> str:
    """A crude singular for matching head nouns ("servers" -> "server"); the lemmatizer is not loaded."""
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _describe(sentences: list[str]) -> str:
    return trim(" ".join(sentences[:_DESCRIPTION_SENTENCES]), _DESCRIPTION_CHARS)


def _relationship(a: Key, b: Key, pair: _Pair) -> ExtractedRelationship:
    source, target, type_ = a, b, "RELATED_TO"
    if pair.verbs:
        type_ = min(pair.verbs, key=lambda v: (-pair.verbs[v], v))
        source = pair.direction[type_]
        target = b if source == a else a
    return ExtractedRelationship(
        source=source[0],
        target=target[0],
        type=type_,
        description=trim(" ".join(pair.sentences[:2]), _DESCRIPTION_CHARS),
        strength=float(min(10, pair.count)),
    )
