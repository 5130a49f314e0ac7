"""Pick a retrieval strategy for a question from its wording and the named entities it mentions.

The rules are data: an ordered table, first match wins, each naming the cue behind its choice.
A strategy the index cannot serve falls back along `FALLBACKS`, which always ends in ``naive``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphunified_query.retrieval.registry import fallbacks

if TYPE_CHECKING:  # importing spaCy alone takes a second: only the first routed question pays it
    from spacy.language import Language
    from spacy.tokens import Doc, Token

# Where a strategy's questions go when it is not built: each strategy's `fallbacks` in the registry.
FALLBACKS: dict[str, tuple[str, ...]] = fallbacks()

_SUMMARY = re.compile(
    r"\b(summar(?:y|ies|ize|ise)|overview|overall|main (?:ideas?|themes?|topics?|points?)|themes?"
    r"|key (?:ideas|takeaways|topics|trends|points)|recurring|big picture|in general|landscape)\b"
)
_WHAT_ARE_THE = re.compile(r"^\s*what are the\b")
_RELATION = re.compile(
    r"\b(relationship between|relation(?:ship)? (?:of|to|with)|(?:related|linked|connected) to"
    r"|connection between|link between|relate[sd]? to|interact(?:ed|s)? with|associated with"
    r"|connect(?:s|ed|ing)?(?: to| with)?)\b"
)
# "the path from X to Y", "the chain linking X and Y": a walk through the graph, hop by hop.
_PATH = re.compile(r"\b(?:path|paths|chain) (?:between|from|linking|connecting)\b")
_COMPARISON = re.compile(
    r"\b(both|same|compare[sd]?|comparison|versus|vs\.?|differ(?:ence|ent)?|in common|\w+er than|more than"
    r"|less than|which (?:one )?of|which (?:is|was|one is) \w+(?:er|est))\b"
)
_NESTED = re.compile(r"\b(?:who|what|which|where|when)\b.*\bof the\b.*\b(?:that|which|who|whose)\b")
# "the director of film X", "the capital of the state where ...", "X's husband": the answer is an
# attribute of something the question reaches through a relation, i.e. a bridge (multi-hop) question.
_RELATION_CHAIN = re.compile(
    r"\bthe [a-z]+(?: [a-z]+)? (?:of|for) (?:the |a |an )?(?:[a-z]+ )?"
    r"(?:[A-Z0-9]|[a-z]+ (?:that|which|who|where))"
    r"|[A-Z][\w.\-]*(?:'s|’s) (?:[a-z]+ ){0,2}?[a-z]+(?:'s|’s)? ?[a-z]*"
)
_NAME = re.compile(r"(?<!^)(?<![.?!] )\b[A-Z][a-z]+")  # a capitalized word not opening the sentence
_ABOUT = re.compile(r"^\s*(?:who|what) (?:is|was|are|were)\b|\btell me about\b|\bdescribe\b|\bknow about\b")
NOT_BRIDGES = {"DATE"}  # a year in a question narrows it; it is not an entity to hop through


def asks_about_collection(question: str) -> bool:
    """A question about the whole collection: the router's summary or open-list cue with no name in
    it. Global search answers it from the top-level communities instead of similar reports. No
    spaCy here (retrievers call it per query): a capitalized word past the first is taken as a name."""
    lowered = question.lower()
    cued = _SUMMARY.search(lowered) is not None or _WHAT_ARE_THE.search(lowered) is not None
    return cued and _NAME.search(question.strip()) is None


@dataclass(frozen=True)
class QueryFeatures:
    question: str
    lowered: str
    entities: tuple[tuple[str, str], ...]  # (name, type), named entities worth a graph hop
    possessives: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "entity_count": len(self.entities),
            "entities": [name for name, _ in self.entities],
            "entity_types": sorted({type_ for _, type_ in self.entities}),
            "possessives": self.possessives,
        }


Cue = Callable[[QueryFeatures], "str | None"]


@dataclass(frozen=True)
class Rule:
    """``cue`` returns the words that fired (for the reason), or None when the rule does not apply."""

    name: str
    strategy: str
    reason: str  # formatted with {cue}
    cue: Cue


@dataclass(frozen=True)
class RouteDecision:
    strategy: str
    reason: str
    features: dict[str, Any]


def _match(pattern: re.Pattern[str]) -> Cue:
    return lambda f: m.group(0) if (m := pattern.search(f.lowered)) else None


_SPAN_TAIL = re.compile(r"[\w’'\-]*(?:\s+(?:(?:of|for|the|and|de|von|van|du|la)\s+)?[A-Z0-9][\w’'\-]*)*")


def _whole_span(text: str, m: re.Match[str]) -> str:
    """The cue quoted to the end of its word and of the name it opens: "the flood of 1894", not
    "the flood of 1"."""
    cut = m.end() < len(text) and text[m.end()].isalnum()  # the match stopped inside a word
    tail = _SPAN_TAIL.match(text, m.end()) if cut else None
    return text[m.start() : tail.end() if tail else m.end()].strip()


def _names(f: QueryFeatures) -> str:
    return " and ".join(f'"{name}"' for name, _ in f.entities)


def _when(test: Callable[[QueryFeatures], bool], cue: Cue) -> Cue:
    return lambda f: cue(f) if test(f) else None


RULES: tuple[Rule, ...] = (
    Rule("summary", "graphrag_global", 'asks for a corpus-wide summary ("{cue}")', _match(_SUMMARY)),
    Rule(
        "open_list",
        "graphrag_global",
        'asks "{cue} ..." with no named entity, a question over the whole corpus',
        _when(lambda f: not f.entities, _match(_WHAT_ARE_THE)),
    ),
    Rule(
        "path", "hipporag", 'asks for a path ("{cue}") through the graph, a multi-hop question', _match(_PATH)
    ),
    Rule(
        "two_entity_relation",
        "lightrag",
        "asks how named entities {cue} are related",
        _when(lambda f: len(f.entities) >= 2 and _RELATION.search(f.lowered) is not None, _names),
    ),
    Rule("nested", "hipporag", 'nests clauses ("{cue}"), a multi-hop question', _match(_NESTED)),
    Rule(
        "possessives",
        "hipporag",
        "chains {cue} possessives, a multi-hop question",
        lambda f: str(f.possessives) if f.possessives >= 2 else None,
    ),
    Rule(
        "comparison", "hipporag", 'compares or bridges ("{cue}"), a multi-hop question', _match(_COMPARISON)
    ),
    Rule("relation", "hipporag", 'asks for a relation ("{cue}") to bridge by graph hops', _match(_RELATION)),
    Rule(
        "several_entities",
        "hipporag",
        "mentions several named entities ({cue}) to bridge",
        _when(lambda f: len(f.entities) >= 2, _names),
    ),
    Rule(
        "relation_chain",
        "hipporag",
        'reaches its answer through a relation ("{cue}"), a bridge question',
        lambda f: _whole_span(f.question, m) if (m := _RELATION_CHAIN.search(f.question)) else None,
    ),
    Rule(
        "one_entity",
        "graphrag_local",
        "asks about one named entity ({cue}) and its neighbourhood",
        _when(lambda f: len(f.entities) == 1 and _ABOUT.search(f.lowered) is not None, _names),
    ),
    Rule(
        "factual",
        "hybrid",
        "has no graph cue, so it is a factual lookup for dense plus keyword search",
        lambda f: "",
    ),
)


class Router:
    def __init__(
        self, *, rules: Sequence[Rule] = RULES, load_nlp: Callable[[], Language] | None = None
    ) -> None:
        self.rules = tuple(rules)
        self._load_nlp = load_nlp
        self._nlp: Language | None = None
        self._lock = threading.Lock()

    def route(self, question: str, available: Sequence[str]) -> RouteDecision:
        return self.decide(self.features(question), available)

    def decide(self, features: QueryFeatures, available: Sequence[str]) -> RouteDecision:
        """The first rule whose cue fires, on features already computed (the learned router's too)."""
        rule, cue = next((r, c) for r in self.rules if (c := r.cue(features)) is not None)
        reason = rule.reason.format(cue=cue)
        order = (rule.strategy, *fallbacks().get(rule.strategy, ("naive",)))  # the registry, now
        strategy = next((s for s in order if s in available), None)
        if strategy is None:
            raise ValueError(f"No strategy to route to: none of {', '.join(order)} is in {list(available)}.")
        if strategy != rule.strategy:
            reason += f"; {rule.strategy} is not available, so {strategy} answers"
        details = features.as_dict() | {"rule": rule.name, "cue": cue, "preferred": rule.strategy}
        return RouteDecision(strategy, f"The question {reason}.", details)

    def warm(self) -> None:
        """Load the spaCy pipeline now (a server does it in the background once it listens)."""
        self._pipeline()

    def features(self, question: str) -> QueryFeatures:
        doc = self._pipeline()(question)
        return QueryFeatures(question, question.lower(), _entities(doc), sum(t.tag_ == "POS" for t in doc))

    def _pipeline(self) -> Language:
        with self._lock:  # spaCy takes seconds to load: once, on the first question
            if self._nlp is None:
                self._nlp = (self._load_nlp or _default_pipeline)()
            return self._nlp


def _default_pipeline() -> Language:
    from graphunified_query.spacy_text import load_pipeline

    return load_pipeline()


def question_entities(doc: Doc) -> tuple[tuple[str, str], ...]:
    """The named entities a question mentions, as the router sees them: (name, type), in order."""
    return _entities(doc)


def _entities(doc: Doc) -> tuple[tuple[str, str], ...]:
    """spaCy's named entities, plus capitalized proper-noun runs its small model misses, in order."""
    from graphunified_query.spacy_text import LABEL_TO_TYPE, clean_name

    spans = [(ent.start, ent.text, LABEL_TO_TYPE.get(ent.label_)) for ent in doc.ents]
    found = [(start, text, type_) for start, text, type_ in spans if type_ and type_ not in NOT_BRIDGES]
    run: list[Token] = []
    for token in [*doc, None]:
        if token is not None and _is_unlabelled_name(token):
            run.append(token)
        elif run:
            found.append((run[0].i, " ".join(t.text for t in run), "UNKNOWN"))
            run = []
    names: dict[str, str] = {}
    for _, text, type_ in sorted(found):
        if name := clean_name(text):
            names.setdefault(name, type_ or "UNKNOWN")
    return tuple(names.items())


def _is_unlabelled_name(token: Token) -> bool:
    # A capital is a name's mark except on the first word, which needs spaCy's PROPN tag as well.
    return (
        token.is_title and token.is_alpha and token.ent_iob_ == "O" and (token.i > 0 or token.pos_ == "PROPN")
    )
