"""Pick a retrieval strategy for a question from its wording and the named entities it mentions.

The rules are data: an ordered table, first match wins, each naming the cue behind its choice.
A strategy the index cannot serve falls back along `FALLBACKS`, which always ends in ``naive``.
The entities come from the index's names and the question's capitals (`mentions`), no language
model: routing costs well under a millisecond, on the first question as on any other.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graphunified_query.strategies.entity_linking import NameIndex
from graphunified_query.strategies.mentions import NOT_BRIDGES as NOT_BRIDGES
from graphunified_query.strategies.mentions import mentions
from graphunified_query.strategies.registry import cost_order, fallbacks

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
    """Routes by ``rules``; ``names`` gives the index's name index (built on first use), whose names
    and types a question's entities are read against; without it, capitals and quotes alone."""

    def __init__(
        self, *, rules: Sequence[Rule] = RULES, names: Callable[[], NameIndex] | None = None
    ) -> None:
        self.rules = tuple(rules)
        self._names = names
        self._index: NameIndex | None = None
        self._lock = threading.Lock()

    def with_names(self, names: Callable[[], NameIndex]) -> Router:
        """The same rules reading another index's names (an engine binds its snapshot's)."""
        return Router(rules=self.rules, names=names)

    def route(self, question: str, available: Sequence[str]) -> RouteDecision:
        return self.decide(self.features(question), available)

    def decide(self, features: QueryFeatures, available: Sequence[str]) -> RouteDecision:
        """The first rule whose cue fires, on features already computed (the learned router's too)."""
        rule, cue = next((r, c) for r in self.rules if (c := r.cue(features)) is not None)
        reason = rule.reason.format(cue=cue)
        order = (rule.strategy, *fallbacks().get(rule.strategy, ("naive",)))  # the registry, now
        # None of the chain served (strategies.enabled left it out): the cheapest that is.
        strategy = next((s for s in order if s in available), min(available, key=cost_order, default=None))
        if strategy is None:
            raise ValueError(f"No strategy to route to: none of {', '.join(order)} is in {list(available)}.")
        if strategy != rule.strategy:
            reason += f"; {rule.strategy} is not available, so {strategy} answers"
        details = features.as_dict() | {"rule": rule.name, "cue": cue, "preferred": rule.strategy}
        return RouteDecision(strategy, f"The question {reason}.", details)

    def warm(self) -> None:
        """Build the name index now (a server does it before its first question)."""
        self._name_index()

    def features(self, question: str) -> QueryFeatures:
        entities, possessives = mentions(question, self._name_index())
        return QueryFeatures(question, question.lower(), entities, possessives)

    def _name_index(self) -> NameIndex | None:
        with self._lock:  # built once, by whichever question comes first
            if self._index is None and self._names is not None:
                self._index = self._names()
            return self._index
