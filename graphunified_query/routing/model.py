"""The stored learned router: a multinomial logistic regression as plain JSON in the home.

``<home>/router/learned.json`` holds everything needed to route and to inspect: the classes
(strategies), the feature names, the standardization, the coefficients, the embedder model the
features came from, the regularization and cross-validation figures, and the questions it was
trained on with their labels and source results files. Routing reads it with numpy alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1


class ModelFileError(ValueError):
    """The stored model cannot be read; the message names the file and field."""


def model_path(home: str | Path) -> Path:
    return Path(home) / "router" / "learned.json"


@dataclass(frozen=True)
class LearnedModel:
    classes: tuple[str, ...]
    feature_names: tuple[str, ...]
    mean: np.ndarray  # standardization of each feature, from the training questions
    scale: np.ndarray
    coef: np.ndarray  # (classes, features), on standardized features
    intercept: np.ndarray  # (classes,)
    embedder_model: str
    regularization: float  # C of the logistic regression, chosen by cross-validation
    cross_validation: Mapping[str, Any] = field(default_factory=dict)
    training: Sequence[Mapping[str, Any]] = ()  # id, question, label, source per question
    sources: tuple[str, ...] = ()

    def probabilities(self, features: np.ndarray) -> dict[str, float]:
        """Softmax over the classes for one feature row."""
        logits = (
            self.coef @ ((np.asarray(features, dtype=np.float64) - self.mean) / self.scale) + self.intercept
        )
        weights = np.exp(logits - logits.max())
        return dict(zip(self.classes, (weights / weights.sum()).tolist(), strict=True))

    def top_features(
        self, count: int = 5, *, skip_prefix: str | None = None
    ) -> dict[str, list[tuple[str, float]]]:
        """Per class, the features whose (standardized) coefficients push hardest towards it."""
        kept = [
            i for i, n in enumerate(self.feature_names) if not (skip_prefix and n.startswith(skip_prefix))
        ]
        top: dict[str, list[tuple[str, float]]] = {}
        for row, name in zip(self.coef, self.classes, strict=True):
            ranked = sorted(kept, key=lambda i: -row[i])[:count]
            top[name] = [(self.feature_names[i], round(float(row[i]), 3)) for i in ranked]
        return top

    def as_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "kind": "logistic_regression",
            "embedder_model": self.embedder_model,
            "classes": list(self.classes),
            "feature_names": list(self.feature_names),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept.tolist(),
            "regularization_C": self.regularization,
            "cross_validation": dict(self.cross_validation),
            "sources": list(self.sources),
            "training": [dict(t) for t in self.training],
        }

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.as_json(), indent=1), encoding="utf-8")
        temporary.replace(path)  # a reader never sees half a model
        return path


def load_model(path: Path) -> LearnedModel:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFileError(
            f"{path}: not a readable learned router ({error}); run train-router again."
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ModelFileError(f"{path}: field 'format' is not {FORMAT}; run train-router again.")
    try:
        classes = tuple(str(c) for c in data["classes"])
        names = tuple(str(n) for n in data["feature_names"])
        model = LearnedModel(
            classes=classes,
            feature_names=names,
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64).reshape(len(classes), len(names)),
            intercept=np.asarray(data["intercept"], dtype=np.float64).reshape(len(classes)),
            embedder_model=str(data["embedder_model"]),
            regularization=float(data["regularization_C"]),
            cross_validation=data.get("cross_validation") or {},
            training=data.get("training") or [],
            sources=tuple(data.get("sources") or ()),
        )
    except KeyError as error:
        raise ModelFileError(f"{path}: field {error.args[0]!r} is missing; run train-router again.") from None
    except (TypeError, ValueError) as error:
        raise ModelFileError(f"{path}: malformed coefficients ({error}); run train-router again.") from None
    if model.mean.shape != (len(names),) or model.scale.shape != (len(names),):
        raise ModelFileError(
            f"{path}: fields 'mean'/'scale' do not match 'feature_names'; run train-router again."
        )
    return model
