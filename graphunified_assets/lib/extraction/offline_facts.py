"""Reading spaCy's dependency parse: OpenIE-style triples and the verb linking two entities.

HippoRAG matches such triples against the question; they only help when one side is a name the
question can mention, so triples with no named-entity side are dropped and phrases stay short.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from graphunified_query.core.text.spacy_text import LABEL_TO_TYPE, clean_name, is_useful_name

if TYPE_CHECKING:  # spaCy (1 s to import) only when something is parsed
    from spacy.tokens import Span, Token

_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
_OBJECT_DEPS = frozenset({"dobj", "attr", "oprd", "dative"})
_PREDICATE_DEPS = frozenset({"aux", "auxpass", "neg", "prt"})
_RELATIVE_PRONOUNS = frozenset({"who", "which", "that", "whom"})
_DROPPED_MODIFIERS = frozenset({"det", "poss", "predet", "case", "punct"})
_MAX_PHRASE_WORDS = 6
_MAX_PREDICATE_WORDS = 6
_MAX_VERB_HOPS = 3
_CORE_DEPS = frozenset({"nsubj", "nsubjpass", "agent"})
_ARGUMENT_PATH_DEPS = frozenset(
    {"nsubj", "nsubjpass", "agent", "dobj", "pobj", "attr", "oprd", "dative", "conj", "appos", "prep"}
)

Triple = tuple[str, str, str]


def sentence_triples(
    sent: Span, entity_at: Mapping[int, Span], aliases: Mapping[int, str] | None = None
) -> list[Triple]:
    """Triples of one sentence. ``entity_at`` maps token index → NER span; ``aliases`` maps
    pronoun token index → antecedent name (cheap coreference done by the caller)."""
    aliases = aliases or {}
    triples: list[Triple] = []
    for verb in sent:
        if not _is_predicate_head(verb):
            continue
        subjects = _subjects(verb)
        if not subjects:
            continue
        base = _base_predicate(verb)
        for obj, predicate in _objects(verb, base):
            for subj in subjects:
                triple = _make_triple(subj, predicate, obj, entity_at, aliases)
                if triple is not None and triple not in triples:
                    triples.append(triple)
    return triples


def _is_predicate_head(token: Token) -> bool:
    if token.pos_ == "VERB":
        return True
    # A copula carries the predicate when it has a subject and an attribute ("X is the capital of Y").
    return token.pos_ == "AUX" and any(c.dep_ == "attr" for c in token.children)


def _subjects(verb: Token) -> list[Token]:
    found = [c for c in verb.children if c.dep_ in _SUBJECT_DEPS]
    if found:
        subj = found[0]
        if verb.dep_ == "relcl" and subj.lower_ in _RELATIVE_PRONOUNS:
            subj = verb.head  # "the mill, which was founded by …" → the mill
        return [subj, *_conjuncts(subj)]
    if verb.dep_ in {"conj", "xcomp"} and verb.head.pos_ in {"VERB", "AUX"}:
        return _subjects(verb.head)  # "born in X and died in Y" shares the subject
    if verb.dep_ in {"acl", "relcl"} and verb.head.pos_ in {"NOUN", "PROPN"}:
        return [verb.head]  # "a film directed by …" → the film
    return []


def _conjuncts(token: Token) -> list[Token]:
    return [c for c in token.conjuncts if c.i > token.i]


def _base_predicate(verb: Token) -> list[Token]:
    words = [c for c in verb.children if c.dep_ in _PREDICATE_DEPS]
    return sorted([*words, verb], key=lambda t: t.i)


def _objects(verb: Token, base: list[Token]) -> list[tuple[Token, str]]:
    """(object token, predicate text) pairs: direct objects, then prepositional objects."""
    base_text = " ".join(t.lower_ for t in base)
    pairs: list[tuple[Token, str]] = []
    for child in verb.children:
        if child.dep_ in _OBJECT_DEPS:
            for obj in [child, *_conjuncts(child)]:
                pairs.append(_through_of(obj, base_text))
        elif child.dep_ in {"prep", "agent"}:
            predicate = f"{base_text} {child.lower_}"
            for pobj in (c for c in child.children if c.dep_ == "pobj"):
                pairs.extend(_through_of(obj, predicate) for obj in [pobj, *_conjuncts(pobj)])
    return [(obj, pred) for obj, pred in pairs if len(pred.split()) <= _MAX_PREDICATE_WORDS]


def _through_of(obj: Token, base_text: str) -> tuple[Token, str]:
    """ "is the capital of France" → (France, "is capital of"): the name is the useful object."""
    if obj.pos_ == "NOUN" and obj.ent_type_ == "":
        for prep in obj.children:
            if prep.dep_ == "prep" and prep.lower_ == "of":
                pobj = next((c for c in prep.children if c.dep_ == "pobj"), None)
                if pobj is not None and pobj.ent_type_ in LABEL_TO_TYPE:
                    return pobj, f"{base_text} {obj.lower_} of"
    return obj, base_text


def _make_triple(
    subj: Token, predicate: str, obj: Token, entity_at: Mapping[int, Span], aliases: Mapping[int, str]
) -> Triple | None:
    subject, subject_named = _phrase(subj, entity_at, aliases)
    object_, object_named = _phrase(obj, entity_at, aliases)
    if not subject or not object_ or not (subject_named or object_named):
        return None
    if subject.lower() == object_.lower():
        return None
    return subject, predicate, object_


def _named(span: Span) -> tuple[str, bool]:
    name, type_ = clean_name(span.text), LABEL_TO_TYPE.get(span.label_)
    return name, type_ is not None and is_useful_name(name, type_)


def _phrase(token: Token, entity_at: Mapping[int, Span], aliases: Mapping[int, str]) -> tuple[str, bool]:
    """The phrase a head token stands for, and whether it is a named entity."""
    span = entity_at.get(token.i)
    if span is not None:
        return _named(span)
    if token.i in aliases:
        return aliases[token.i], True
    # "Obama's wife Michelle visited …": the apposed name is the better subject.
    named_appos = next(
        (entity_at[c.i] for c in token.children if c.dep_ == "appos" and c.i in entity_at), None
    )
    if named_appos is not None:
        return _named(named_appos)
    if token.pos_ in {"PRON", "DET", "NUM", "SYM", "PUNCT"} or not token.is_alpha:
        return "", False
    # The head noun with its compounds and modifiers, without determiners and clauses.
    left = [t for t in token.lefts if t.dep_ not in _DROPPED_MODIFIERS]
    words = [w for t in left for w in t.subtree if w.dep_ not in _DROPPED_MODIFIERS]
    words = [w for w in words if not w.is_punct][-(_MAX_PHRASE_WORDS - 1) :]
    return clean_name(" ".join(w.text for w in [*words, token])), False


def connecting_verb(a: Token, b: Token) -> tuple[str, bool] | None:
    """The verb both heads hang from within a few arcs, and whether ``a`` is on its subject side."""
    a_path = [a, *a.ancestors]
    b_path = [b, *b.ancestors]
    common = next((t for t in a_path if t in b_path), None)
    if common is None or common.pos_ != "VERB" or common in (a, b):
        return None
    a_hops, b_hops = a_path.index(common), b_path.index(common)
    if a_hops > _MAX_VERB_HOPS or b_hops > _MAX_VERB_HOPS:
        return None
    # Each entity must be an argument of the verb (possibly through a preposition or conjunction),
    # not a modifier of one ("Obama's wife visited …" says nothing about Obama's visit).
    if any(t.dep_ not in _ARGUMENT_PATH_DEPS for t in a_path[:a_hops] + b_path[:b_hops]):
        return None
    a_dep, b_dep = a_path[a_hops - 1].dep_, b_path[b_hops - 1].dep_
    # Only a subject–complement pair is what the verb says; two complements merely co-occur.
    if a_dep not in _CORE_DEPS and b_dep not in _CORE_DEPS:
        return None
    # Actor first: the active subject or a passive's agent ("founded by X"), else sentence order.
    # The surface form reads better than the lemma ("BORN", not "BEAR"; "FOUNDED", not "FOUND").
    return common.lower_.upper(), b_dep not in {"nsubj", "agent"}
