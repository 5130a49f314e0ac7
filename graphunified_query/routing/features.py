"""A question as numbers for the learned router: the rule router's cues, its entity counts, and the
question's embedding from the configured embedder.

The cue features are the rule router's own (`router.RULES`, `Router.features`): whether each rule
fires, which strategy the first firing rule prefers, how many entities of each type and possessives
the question has. Nothing is copied: a new rule becomes a feature by being added to the table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.core.text.entity_names import LABEL_TO_TYPE
from graphunified_query.routing.rules import NOT_BRIDGES, QueryFeatures, Router
from graphunified_query.strategies.registry import names


def entity_types() -> tuple[str, ...]:
    """The types a question's entities may have, as the router reads them."""
    return (*sorted(set(LABEL_TO_TYPE.values()) - NOT_BRIDGES), "UNKNOWN")


EMBEDDING_PREFIX = "embedding:"


class QuestionFeatures:
    """Feature vectors of questions, named (`names`) so a model's coefficients can be read."""

    def __init__(self, embedder: Embedder, rule: Router) -> None:
        self.embedder = embedder
        self.rule = rule

    def names(self) -> list[str]:
        cues = [f"cue:{r.name}" for r in self.rule.rules]
        preferred = [f"rule_prefers:{s}" for s in names("core")]
        counts = ["entities", "possessives", *(f"entities:{t}" for t in entity_types())]
        embedding = [f"{EMBEDDING_PREFIX}{i}" for i in range(self.embedder.dimension)]
        return [*cues, *preferred, *counts, *embedding]

    def matrix(self, questions: Sequence[str], available: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """One row per question, and the rule router's pick among ``available`` for each (the embedder
        once per batch)."""
        parsed = [self.rule.features(q) for q in questions]
        vectors = self.embed(questions)
        rows = np.vstack([self.row(f, v) for f, v in zip(parsed, vectors, strict=True)])
        return rows, [self.rule.decide(f, available).strategy for f in parsed]

    def embed(self, questions: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed(list(questions), kind="query"), dtype=np.float64)

    def row(self, features: QueryFeatures, embedding: np.ndarray) -> np.ndarray:
        fired = [r for r in self.rule.rules if r.cue(features) is not None]
        first = fired[0].strategy if fired else None
        cues = [float(r in fired) for r in self.rule.rules]
        preferred = [float(s == first) for s in names("core")]
        types = [type_ for _, type_ in features.entities]
        counts = [
            float(len(types)),
            float(features.possessives),
            *(float(types.count(t)) for t in entity_types()),
        ]
        return np.concatenate(
            [np.asarray([*cues, *preferred, *counts]), np.asarray(embedding, dtype=np.float64)]
        )
