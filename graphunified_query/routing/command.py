"""`python -m graphunified_query train-router RESULTS.json [...]`: label, fit, cross-validate, store.

Reads eval results files, labels each question with the strategy that won it, computes the
question's features with the home's configured embedder and entity names, scores the learned
router by k-fold cross-validation (C chosen inside each training fold), fits the stored model on
every question, writes it to ``<home>/router/learned.json`` and prints what it learned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphunified_query.core.providers.embedding import Embedder, make_embedder
from graphunified_query.core.settings.model import load_settings
from graphunified_query.core.stores.parquet import StoreError
from graphunified_query.routing.compare import comparison
from graphunified_query.routing.features import EMBEDDING_PREFIX, QuestionFeatures
from graphunified_query.routing.fit import FOLDS, cross_validate, fit_selected
from graphunified_query.routing.labels import Labelled, ResultsError, load_results, training_summary
from graphunified_query.routing.model import LearnedModel, model_path
from graphunified_query.routing.rules import Router
from graphunified_query.snapshot.loader import load_snapshot
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.entity_linking import name_index


def labelled_from(results: Sequence[Path], questions: Sequence[Path] = ()) -> list[Labelled]:
    """Every question of every results file; ``questions``: one questions.jsonl for all, or one per file."""
    if questions and len(questions) not in (1, len(results)):
        raise ResultsError(
            f"--questions: give one file, or one per results file ({len(results)}), not {len(questions)}."
        )
    examples: list[Labelled] = []
    for n, path in enumerate(results):
        given = questions[n if len(questions) > 1 else 0] if questions else None
        examples += load_results(Path(path), Path(given) if given else None)
    if len({e.label for e in examples}) < 2:
        raise ResultsError(
            f"{', '.join(map(str, results))}: every question is labelled {examples[0].label!r}; "
            "there is nothing to learn (add results of another set, or keep the rule router)."
        )
    return examples


def train(examples: Sequence[Labelled], embedder: Embedder, rule: Router) -> LearnedModel:
    """Cross-validate, then fit on every question; the model carries its figures and data."""
    features = QuestionFeatures(embedder, rule)
    strategies = list(examples[0].outcomes)
    x, rule_picks = features.matrix([e.question for e in examples], strategies)
    scored = cross_validate(x, examples, fit_selected, FOLDS)
    figures = comparison(examples, rule_picks, scored)
    model = fit_selected(x, examples, features.names())
    return replace(
        model,
        embedder_model=embedder.model_name,
        cross_validation=figures,
        training=training_summary(examples),
        sources=tuple(dict.fromkeys(e.source for e in examples)),
    )


def train_router(
    results: Sequence[Path],
    home: Path,
    questions: Sequence[Path] = (),
    environ: Mapping[str, str] = os.environ,
) -> tuple[LearnedModel, Path]:
    if not Path(home).is_dir():
        raise ResultsError(
            f"--home {home}: no such folder; point it at the data home `auto` should route for."
        )
    examples = labelled_from(results, questions)
    snapshot = _home_snapshot(home, environ)
    settings = load_settings(home, environ=environ).embedding
    if snapshot is not None:  # embedded as `ask` embeds on this home: the variant of its vectors
        settings = settings.with_recorded_variants(snapshot.model)
    model = train(examples, make_embedder(settings, environ), _router_over(snapshot))
    return model, model.save(model_path(home))


def home_router(home: Path, environ: Mapping[str, str] = os.environ) -> Router:
    """The rule router reading the home's entity names, as `auto` does when it serves the home, so
    the features trained on are those served (capitals alone when the home holds no index yet)."""
    return _router_over(_home_snapshot(home, environ))


def _home_snapshot(home: Path, environ: Mapping[str, str]) -> Snapshot | None:
    try:
        return load_snapshot(home, environ=environ)
    except StoreError:  # no index yet
        return None


def _router_over(snapshot: Snapshot | None) -> Router:
    if snapshot is None:
        return Router()
    return Router(names=lambda: name_index(snapshot))


def report(model: LearnedModel, path: Path) -> str:
    cv: Mapping[str, Any] = model.cross_validation
    lines = [
        f"learned router: {path}",
        f"trained on {len(model.training)} questions from {', '.join(model.sources)}",
        f"embedder {model.embedder_model!r}; logistic regression, C={model.regularization:g} "
        f"(chosen by {FOLDS}-fold cross-validation on the training questions)",
        f"labels: {_counts(cv.get('labels', {}))}",
        "",
        f"{cv.get('metric', 'recall@5')} on these questions ({cv.get('learned_cv_folds', FOLDS)}-fold CV, "
        "each question scored by a model that never saw it):",
        f"  learned router (CV) {cv.get('learned_cv')}   rule router {cv.get('rule')}   "
        f"best single ({cv.get('best_single_strategy')}) {cv.get('best_single')}   oracle {cv.get('oracle')}",
        f"  learned (CV) routed to: {_counts(cv.get('learned_cv_routed_to', {}))}",
        "",
        "strongest features per strategy (standardized coefficients; cue and count features first):",
    ]
    named = model.top_features(4, skip_prefix=EMBEDDING_PREFIX)
    overall = model.top_features(3)
    for strategy in model.classes:
        lines.append(f"  {strategy}: " + ", ".join(f"{n} {w:+.2f}" for n, w in named[strategy]))
        lines.append("      overall: " + ", ".join(f"{n} {w:+.2f}" for n, w in overall[strategy]))
    return "\n".join(lines)


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{s} {n}" for s, n in counts.items()) or "-"
