"""Precision, recall and F1 of extracted entities and relationships against hand labels.

Matching rules (documented for the gold fixture in tests/fixtures/extraction_gold/README.md):

* Names match after normalization: Unicode NFKC, curly quotes straightened, case folded,
  whitespace collapsed, surrounding punctuation, a leading article (the/a/an) and a trailing
  possessive removed. A label lists aliases ("Fleming" for "Alexander Fleming"); a predicted
  name that normalizes to the label's name or any alias *is* that entity.
* Type-aware entities: a prediction is a true positive when its type is one of the label's
  acceptable types; each label is credited once, so a second prediction of the same entity with
  another type is a false positive. Type-agnostic entities ignore the type.
* Relationships are undirected unless the label says ``directed``; their endpoints are resolved
  through the same alias lists, and the relation type is not compared (free-form verbs).
* ``optional`` labels (vague dates, generic concepts) are neither credited nor penalised, and
  neither is a predicted relationship touching an optional entity.
* Micro-averaged: counts are summed over documents before the ratios are taken. Per type, true
  positives count under the type the extractor gave, misses under the label's first type.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphunified_assets.lib.extraction.records import ExtractedEntity, ExtractedRelationship

_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_POSSESSIVE = re.compile(r"'s$")
_SPACES = re.compile(r"\s+")
_EDGE = " \t\n.,;:!?\"'()[]{}"


def normalize_name(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).replace("’", "'").replace("‘", "'")
    text = _SPACES.sub(" ", text.casefold()).strip(_EDGE)
    text = _POSSESSIVE.sub("", _ARTICLE.sub("", text)).strip(_EDGE)
    return text


@dataclass(frozen=True)
class GoldEntity:
    name: str
    types: tuple[str, ...]  # acceptable types, the first one is the label's main type
    aliases: tuple[str, ...] = ()
    optional: bool = False


@dataclass(frozen=True)
class GoldRelationship:
    source: str  # gold entity names
    target: str
    type: str = ""
    directed: bool = False
    optional: bool = False


@dataclass(frozen=True)
class GoldDocument:
    document_id: str
    entities: tuple[GoldEntity, ...]
    relationships: tuple[GoldRelationship, ...] = ()


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
        }


@dataclass
class DocumentScore:
    entities: Counts = field(default_factory=Counts)  # type-aware
    entities_any_type: Counts = field(default_factory=Counts)
    relationships: Counts = field(default_factory=Counts)
    per_type: dict[str, Counts] = field(default_factory=dict)


Identity = int | str  # a gold entity's index, or the normalized name of an unknown one


class _Resolver:
    def __init__(self, gold: GoldDocument) -> None:
        self.gold = gold
        self.index: dict[str, int] = {}
        for i, entity in enumerate(gold.entities):
            for form in (entity.name, *entity.aliases):
                key = normalize_name(form)
                owner = self.index.setdefault(key, i)
                if owner != i:
                    raise ValueError(
                        f"{gold.document_id}: '{form}' names both '{gold.entities[owner].name}' and "
                        f"'{entity.name}'; keep the alias on one of them"
                    )

    def __call__(self, name: str) -> Identity:
        key = normalize_name(name)
        return self.index.get(key, key)

    def is_optional(self, identity: Identity) -> bool:
        return isinstance(identity, int) and self.gold.entities[identity].optional


def score_document(
    gold: GoldDocument,
    entities: Iterable[ExtractedEntity],
    relationships: Iterable[ExtractedRelationship],
) -> DocumentScore:
    resolve = _Resolver(gold)
    score = DocumentScore()
    _score_entities(gold, resolve, list(entities), score)
    _score_relationships(gold, resolve, list(relationships), score)
    return score


def _bump(per_type: dict[str, Counts], type_: str, **delta: int) -> None:
    counts = per_type.setdefault(type_, Counts())
    for name, value in delta.items():
        setattr(counts, name, getattr(counts, name) + value)


def _score_entities(
    gold: GoldDocument, resolve: _Resolver, entities: list[ExtractedEntity], score: DocumentScore
) -> None:
    seen: set[Identity] = set()
    seen_typed: set[tuple[Identity, str]] = set()
    credited: set[int] = set()
    for entity in entities:
        identity = resolve(entity.name)
        if resolve.is_optional(identity) or not normalize_name(entity.name):
            continue
        if identity not in seen:
            seen.add(identity)
            if isinstance(identity, int):
                score.entities_any_type.tp += 1
            else:
                score.entities_any_type.fp += 1
        type_ = entity.type.upper()
        if (identity, type_) in seen_typed:
            continue
        seen_typed.add((identity, type_))
        if isinstance(identity, int) and identity not in credited and type_ in gold.entities[identity].types:
            credited.add(identity)
            score.entities.tp += 1
            _bump(score.per_type, type_, tp=1)
        else:
            score.entities.fp += 1
            _bump(score.per_type, type_, fp=1)
    for i, label in enumerate(gold.entities):
        if label.optional:
            continue
        if i not in seen:
            score.entities_any_type.fn += 1
        if i not in credited:
            score.entities.fn += 1
            _bump(score.per_type, label.types[0], fn=1)


def _score_relationships(
    gold: GoldDocument, resolve: _Resolver, relationships: list[ExtractedRelationship], score: DocumentScore
) -> None:
    labels: dict[frozenset[Identity], tuple[int, GoldRelationship]] = {}
    for i, label in enumerate(gold.relationships):
        labels[frozenset((resolve(label.source), resolve(label.target)))] = (i, label)
    credited: set[int] = set()
    seen: set[object] = set()
    for rel in relationships:
        a, b = resolve(rel.source), resolve(rel.target)
        pair = frozenset((a, b))
        found = labels.get(pair)
        key: object = (a, b) if found is not None and found[1].directed else pair
        if key in seen:
            continue  # the same edge again (e.g. named by an alias): one prediction
        seen.add(key)
        if found is None:
            if not (resolve.is_optional(a) or resolve.is_optional(b)):
                score.relationships.fp += 1
            continue
        i, label = found
        if label.optional:
            continue
        if label.directed and (a, b) != (resolve(label.source), resolve(label.target)):
            score.relationships.fp += 1  # the right pair the wrong way round
        elif i not in credited:
            credited.add(i)
            score.relationships.tp += 1
    score.relationships.fn += sum(
        1 for i, label in enumerate(gold.relationships) if not label.optional and i not in credited
    )


@dataclass
class QualityReport:
    """Micro-averaged scores over a gold set, with per-type and per-document detail."""

    extractor: str
    documents: dict[str, DocumentScore]

    def _total(self, name: str) -> Counts:
        total = Counts()
        for score in self.documents.values():
            total = total + getattr(score, name)
        return total

    @property
    def entities(self) -> Counts:
        return self._total("entities")

    @property
    def entities_any_type(self) -> Counts:
        return self._total("entities_any_type")

    @property
    def relationships(self) -> Counts:
        return self._total("relationships")

    @property
    def per_type(self) -> dict[str, Counts]:
        totals: dict[str, Counts] = {}
        for score in self.documents.values():
            for type_, counts in score.per_type.items():
                totals[type_] = totals.get(type_, Counts()) + counts
        return dict(sorted(totals.items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor,
            "documents": len(self.documents),
            "entities": self.entities.as_dict(),
            "entities_any_type": self.entities_any_type.as_dict(),
            "relationships": self.relationships.as_dict(),
            "per_type": {t: c.as_dict() for t, c in self.per_type.items()},
            "per_document": {
                d: {"entities_f1": round(s.entities.f1, 4), "relationships_f1": round(s.relationships.f1, 4)}
                for d, s in self.documents.items()
            },
        }

    def table(self) -> str:
        rows = [
            ("entities (type-aware)", self.entities),
            ("entities (any type)", self.entities_any_type),
            ("relationships", self.relationships),
            *((f"  {t}", c) for t, c in self.per_type.items()),
        ]
        lines = [
            f"{'extractor: ' + self.extractor:<26} {'P':>6} {'R':>6} {'F1':>6} {'TP':>4} {'FP':>4} {'FN':>4}"
        ]
        for name, c in rows:
            lines.append(
                f"{name:<26} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} {c.tp:4d} {c.fp:4d} {c.fn:4d}"
            )
        return "\n".join(lines)


def score_all(
    gold: Iterable[GoldDocument],
    predictions: Mapping[str, tuple[Iterable[ExtractedEntity], Iterable[ExtractedRelationship]]],
    *,
    extractor: str,
) -> QualityReport:
    """``predictions`` maps a document id to its (entities, relationships); a missing one scores empty."""
    return QualityReport(
        extractor,
        {doc.document_id: score_document(doc, *predictions.get(doc.document_id, ((), ()))) for doc in gold},
    )
