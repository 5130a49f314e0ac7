"""Fitting the learned router, and scoring it honestly by k-fold cross-validation.

A multinomial logistic regression on standardized features, fitted on each strategy's Recall@5
gain per question (`fit_logistic`): a question's label (its winner, ties to the cheaper) is what is
stored and reported, but two strategies that tie both deserve the credit. Fitting on the labels
alone was measured first and lost on every set (5-fold CV R@5, label vs gain: MuSiQue 62.3 vs 61.8,
2Wiki 83.0 vs 90.8, HotpotQA 80.5 vs 82.5; chosen on 2Wiki, the smallest set, checked on the
others). The regularization C is chosen from `C_GRID` by an inner
cross-validation on the training questions alone, scored by what the router is for: the mean
Recall@5 of the strategies it picks. Folds are fixed by a hash of the question id, so a question's
fold never depends on the order of the files; a question is only ever scored by a model fitted
without it. scikit-learn is imported here only: routing reads the stored coefficients with numpy.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from statistics import fmean

import numpy as np

from graphunified_query.routing.labels import Labelled
from graphunified_query.routing.model import LearnedModel
from graphunified_query.strategies.registry import cost_order

C_GRID = (0.01, 0.1, 1.0, 10.0)  # a decade apart; the inner cross-validation picks one per fit
FOLDS = 5
Fit = Callable[[np.ndarray, Sequence[Labelled]], LearnedModel]


def folds(ids: Sequence[str], k: int = FOLDS) -> list[int]:
    """Each question's fold (0..k-1): questions ranked by a hash of their id, dealt round-robin."""
    ranked = sorted(range(len(ids)), key=lambda i: hashlib.sha256(ids[i].encode()).hexdigest())
    fold = [0] * len(ids)
    for position, index in enumerate(ranked):
        fold[index] = position % k
    return fold


def pick(model: LearnedModel, row: np.ndarray, available: Sequence[str]) -> tuple[str, dict[str, float]]:
    """The most probable available strategy (equals to the cheaper) and every class's probability."""
    probabilities = model.probabilities(row)
    candidates = [c for c in model.classes if c in available] or list(model.classes)  # caller falls back
    best = min(candidates, key=lambda s: (-probabilities.get(s, 0.0), cost_order(s)))
    return best, probabilities


def fit_logistic(
    x: np.ndarray, examples: Sequence[Labelled], c: float, names: Sequence[str] = ()
) -> LearnedModel:
    """One logistic regression at regularization ``c`` (metadata left for the caller).

    Each question counts once per strategy, weighted by that strategy's Recall@5 gain over the
    worst one there: strategies that tie share the credit, a question every strategy answers alike
    weighs nothing, and the most probable class is the one expected to retrieve most."""
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a feature constant in training carries nothing
    names = tuple(names) or tuple(f"f{i}" for i in range(x.shape[1]))
    rows, targets, weights = [], [], []
    for i, example in enumerate(examples):
        worst = min(o.recall for o in example.outcomes.values())
        for strategy, outcome in example.outcomes.items():
            if outcome.recall > worst:
                rows.append(i)
                targets.append(strategy)
                weights.append(outcome.recall - worst)
    classes = sorted(set(targets), key=cost_order)
    if len(classes) < 2:  # nothing to separate: always the one strategy that ever gained (or the label)
        only = classes or [Counter(e.label for e in examples).most_common(1)[0][0]]
        return LearnedModel(tuple(only), names, mean, scale, np.zeros((1, x.shape[1])), np.zeros(1), "", c)
    model = LogisticRegression(C=c, max_iter=2000)
    model.fit(((x - mean) / scale)[rows], targets, sample_weight=weights)
    order = [list(model.classes_).index(cls) for cls in classes]
    coef, intercept = model.coef_, model.intercept_
    if len(model.classes_) == 2:  # scikit-learn keeps one row w for two classes: softmax of (-w/2, w/2)
        coef = np.vstack([-coef[0] / 2, coef[0] / 2])
        intercept = np.asarray([-intercept[0] / 2, intercept[0] / 2])
    return LearnedModel(tuple(classes), names, mean, scale, coef[order], intercept[order], "", c)


@dataclass(frozen=True)
class Scored:
    question_id: str
    fold: int
    predicted: str
    recall: float  # the predicted strategy's recorded Recall@5 for this question


def cross_validate(x: np.ndarray, examples: Sequence[Labelled], fit: Fit, k: int = FOLDS) -> list[Scored]:
    """Each question scored by a model fitted on the other folds only."""
    fold = folds([e.question_id for e in examples], k)
    scored: list[Scored | None] = [None] * len(examples)
    for held in range(min(k, len(examples))):
        train = [i for i, f in enumerate(fold) if f != held]
        if not train:  # one question (or one fold): no model can be fitted without it
            continue
        model = fit(x[train], [examples[i] for i in train])
        for i in (i for i, f in enumerate(fold) if f == held):
            strategy, _ = pick(model, x[i], list(examples[i].outcomes))
            scored[i] = Scored(examples[i].question_id, held, strategy, examples[i].outcomes[strategy].recall)
    return [s for s in scored if s is not None]


def choose_c(x: np.ndarray, examples: Sequence[Labelled], k: int = FOLDS) -> float:
    """The C of `C_GRID` whose inner cross-validated picks have the best mean Recall@5 (ties: the
    stronger regularization, the smaller C). Under two questions there is nothing to cross-validate
    on: the grid's middle (1.0), as scikit-learn's default."""
    if len(examples) < 2:
        return 1.0
    scores = {
        c: fmean(s.recall for s in cross_validate(x, examples, partial(fit_logistic, c=c), k)) for c in C_GRID
    }
    return max(C_GRID, key=lambda c: (round(scores[c], 9), -c))


def fit_selected(x: np.ndarray, examples: Sequence[Labelled], names: Sequence[str] = ()) -> LearnedModel:
    """C chosen by cross-validation on ``examples`` alone, then fitted on all of them."""
    return fit_logistic(x, examples, choose_c(x, examples), names)
