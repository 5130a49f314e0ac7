"""The routers on an eval run: the rule router, the learned router cross-validated on the run's own
questions (each scored by a model fitted without it), the best single strategy and the oracle.

No retrieval is run again: a router's figure is the recorded Recall@5 of the strategy it picks for
each question. `auto` in the same run used whichever router the home holds (`auto_router`): a
learned router trained on these very questions would be scored on its training data there, which
is why the cross-validated figure is reported beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphunified_query.engine.query_engine import AUTO, QueryEngine
from graphunified_query.evaluation.dataset import Question
from graphunified_query.evaluation.runner import QuestionRun
from graphunified_query.routing.compare import comparison
from graphunified_query.routing.features import QuestionFeatures
from graphunified_query.routing.fit import cross_validate, fit_selected
from graphunified_query.routing.labels import LABEL_K, Outcome, label_all


def router_figures(
    engine: QueryEngine, questions: Sequence[Question], runs: Mapping[str, Sequence[QuestionRun]]
) -> dict[str, Any] | None:
    """None when fewer than two strategies ran or Recall@5 was not measured."""
    singles = [s for s in runs if s != AUTO]
    if len(singles) < 2 or any(LABEL_K not in r.recall for s in singles for r in runs[s]):
        return None
    outcomes = {s: {r.question_id: Outcome(r.recall[LABEL_K], r.mrr) for r in runs[s]} for s in singles}
    examples = label_all(outcomes, {q.id: q.question for q in questions}, "this eval run")
    features = QuestionFeatures(engine.embedder, engine.router.rule)
    x, rule_picks = features.matrix([e.question for e in examples], singles)
    figures = comparison(examples, rule_picks, cross_validate(x, examples, fit_selected))
    return figures | {"auto_router": engine.router.kind}
