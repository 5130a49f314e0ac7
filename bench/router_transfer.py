"""Benchmark: does the learned router help beyond the set it was trained on? Prints JSON.

    python bench/router_transfer.py [--results DIR/{set}/results.json] [--eval-root ../shared/eval]
                                    [--sets musique,2wikimultihopqa,hotpotqa]

For each dev set's eval results (every core strategy run; the question texts from the results or
from ``<eval-root>/<set>/questions.jsonl``), a learned router is fitted on one set (C chosen by
cross-validation inside that set alone) and scored on each other set by the recorded Recall@5 of
the strategy it picks: no retrieval runs again. The diagonal is the set's own 5-fold
cross-validated figure (a question is never scored by a model trained on it); one more row trains
on the other sets pooled, as `train-router A.json B.json` would. Each column also
gets the rule router, the best single strategy on that set and the per-question oracle. The
features use the default local embedder, which must be the one the results were retrieved with.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval_data import EVAL_ROOT  # noqa: E402

from graphunified_query.core.providers.embedding import make_embedder  # noqa: E402
from graphunified_query.core.settings.model import EmbeddingSettings  # noqa: E402
from graphunified_query.routing.compare import comparison, held_out  # noqa: E402
from graphunified_query.routing.features import QuestionFeatures  # noqa: E402
from graphunified_query.routing.fit import cross_validate, fit_selected, pick  # noqa: E402
from graphunified_query.routing.labels import load_results  # noqa: E402
from graphunified_query.routing.rules import Router  # noqa: E402

DATASETS = ("musique", "2wikimultihopqa", "hotpotqa")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", default="/tmp/i17out/after-{set}/results.json", help="{set} is replaced")
    parser.add_argument("--eval-root", type=Path, default=EVAL_ROOT)
    parser.add_argument("--sets", default=",".join(DATASETS))
    args = parser.parse_args()
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    embedder = make_embedder(EmbeddingSettings())
    features = QuestionFeatures(embedder, Router())
    data: dict[str, Any] = {}
    for name in sets:
        path = Path(args.results.format(set=name))
        examples = load_results(path, args.eval_root / name / "questions.jsonl")
        x, rule_picks = features.matrix([e.question for e in examples], list(examples[0].outcomes))
        data[name] = (path, examples, x, rule_picks)
    matrix: dict[str, dict[str, float]] = {}
    columns: dict[str, Any] = {}
    for test, (_, examples, x, rule_picks) in data.items():
        figures = comparison(examples, rule_picks, cross_validate(x, examples, fit_selected))
        columns[test] = {k: figures[k] for k in ("rule", "best_single_strategy", "best_single", "oracle")}
        columns[test]["learned_cv"] = figures["learned_cv"]
    for train, (_, train_examples, train_x, _) in data.items():
        model = fit_selected(train_x, train_examples)
        matrix[train] = {}
        for test, (_, examples, x, _) in data.items():
            if test == train:
                matrix[train][test] = columns[test]["learned_cv"]
                continue
            picks = [pick(model, row, list(e.outcomes))[0] for row, e in zip(x, examples, strict=True)]
            matrix[train][test] = held_out(examples, picks)
        matrix[train]["C"] = model.regularization
    # What a user would train: every other set pooled (`train-router A.json B.json`), tested on the rest.
    pooled: dict[str, float] = {}
    for test, (_, examples, x, _) in data.items():
        others = [name for name in data if name != test]
        if not others:
            continue
        model = fit_selected(np.vstack([data[n][2] for n in others]), [e for n in others for e in data[n][1]])
        picks = [pick(model, row, list(e.outcomes))[0] for row, e in zip(x, examples, strict=True)]
        pooled[test] = held_out(examples, picks)
    print(
        json.dumps(
            {
                "metric": "recall@5",
                "embedder_model": embedder.model_name,
                "results": {name: str(d[0]) for name, d in data.items()},
                "learned_trained_on_row_tested_on_column": matrix,
                "diagonal": "5-fold cross-validated on the set itself",
                "learned_trained_on_the_other_sets_pooled": pooled,
                "per_column": columns,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
