"""The router `auto` uses: the learned one when the home holds a model for this embedder, the rule
router otherwise. Built in one place (`select_router`, called by the engine), so the CLI, HTTP,
eval, Python and LangChain all route alike. The reason of every decision says which router decided,
with the learned probabilities, or why a stored model was not used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.core.settings.query import RouterSettings
from graphunified_query.routing.features import QuestionFeatures
from graphunified_query.routing.fit import pick
from graphunified_query.routing.model import LearnedModel, ModelFileError, load_model, model_path
from graphunified_query.routing.rules import RouteDecision, Router
from graphunified_query.strategies.registry import fallbacks


class SelectedRouter:
    """Routes with ``model`` when given, else with ``rule`` (noting ``refused``, why a model was not used)."""

    def __init__(
        self,
        rule: Router,
        embedder: Embedder,
        model: LearnedModel | None = None,
        *,
        path: Path | None = None,
        refused: str | None = None,
    ) -> None:
        self.rule = rule
        self.model = model
        self.path = path
        self.refused = refused
        self._features = QuestionFeatures(embedder, rule)

    @property
    def kind(self) -> str:
        return "learned" if self.model else "rule"

    def describe(self) -> dict[str, Any]:
        """Which router `auto` uses, for `GET /strategies` and logs."""
        if self.model is None:
            return {
                "router": "rule",
                "learned_model": str(self.path) if self.path else None,
                "refused": self.refused,
            }
        return {
            "router": "learned",
            "learned_model": str(self.path),
            "embedder_model": self.model.embedder_model,
            "classes": list(self.model.classes),
            "trained_questions": len(self.model.training),
            "sources": list(self.model.sources),
            "cross_validation": dict(self.model.cross_validation),
        }

    def warm(self) -> None:
        """Build what the first routed question would (the rule router's name index)."""
        self.rule.warm()

    def route(self, question: str, available: Sequence[str]) -> RouteDecision:
        features = self.rule.features(question)
        ruled = self.rule.decide(features, available)
        if self.model is None:
            note = f" ({self.refused}.)" if self.refused else ""
            return replace(
                ruled,
                reason=f"Rule router: {ruled.reason}{note}",
                features={**ruled.features, "router": "rule"},
            )
        row = self._features.row(features, self._features.embed([question])[0])
        strategy, probabilities = pick(self.model, row, available)
        if strategy not in available:  # no class the model knows is served: the registry's fallbacks
            order = (strategy, *fallbacks().get(strategy, ("naive",)))
            strategy = next((s for s in order if s in available), ruled.strategy)
        shown = ", ".join(f"{s} {p:.2f}" for s, p in sorted(probabilities.items(), key=lambda i: -i[1]))
        reason = (
            f"Learned router: {strategy} (probabilities {shown}; trained on "
            f"{len(self.model.training)} questions). "
            f"The rule router would pick {ruled.strategy}: {ruled.reason}"
        )
        details = {
            **ruled.features,
            "router": "learned",
            "probabilities": {s: round(p, 4) for s, p in probabilities.items()},
            "rule_choice": ruled.strategy,
        }
        return RouteDecision(strategy, reason, details)


def select_router(
    home: str | Path, settings: RouterSettings, embedder: Embedder, rule: Router
) -> SelectedRouter:
    """The learned router if ``query.router.learned`` allows it and the home holds a model trained
    with this embedder; otherwise the rule router, saying why when a stored model was refused."""
    path = model_path(home)
    if settings.learned == "off" or not path.is_file():
        return SelectedRouter(rule, embedder, path=path if path.is_file() else None)
    try:
        model = load_model(path)
    except ModelFileError as error:
        return SelectedRouter(rule, embedder, path=path, refused=f"the learned router was not used: {error}")
    if model.embedder_model != embedder.model_name:
        refused = (
            f"the learned router {path} was trained with embedder {model.embedder_model!r} but the "
            f"configured embedder is {embedder.model_name!r}; its features are not comparable. "
            "Run train-router again with this embedder"
        )
        return SelectedRouter(rule, embedder, path=path, refused=refused)
    expected = QuestionFeatures(embedder, rule).names()
    if list(model.feature_names) != expected:
        refused = (
            f"the learned router {path} has other features than this version computes; run train-router again"
        )
        return SelectedRouter(rule, embedder, path=path, refused=refused)
    return SelectedRouter(rule, embedder, model, path=path)
