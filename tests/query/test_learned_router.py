"""The learned router: labels from eval results, honest cross-validation, storing and loading,
and `auto` using it (or refusing it clearly) on the one query path."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphunified_query.cli import main
from graphunified_query.core.embedding_models import LOCAL_MODELS
from graphunified_query.core.providers.embedding import Embedder, make_embedder
from graphunified_query.core.settings.model import EmbeddingSettings, QuerySettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.routing.command import train, train_router
from graphunified_query.routing.features import QuestionFeatures
from graphunified_query.routing.fit import cross_validate, fit_selected, folds
from graphunified_query.routing.labels import Labelled, Outcome, best_strategy, load_results
from graphunified_query.routing.learned import select_router
from graphunified_query.routing.model import LearnedModel, load_model, model_path
from graphunified_query.routing.rules import Router

STRATEGIES = ("naive", "hybrid", "hipporag")
TOPICS = (
    "the Danube river",
    "the painter Klimt",
    "the city of Lyon",
    "the composer Ravel",
    "the Apollo program",
    "the Amazon rainforest",
    "the Ming dynasty",
    "the game of chess",
    "the Eiffel Tower",
    "the poet Neruda",
    "the Sahara desert",
    "the band Queen",
)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder(EmbeddingSettings(provider="local"), {})


def _outcomes(winner: str) -> dict[str, Outcome]:
    return {s: Outcome(1.0 if s == winner else 0.0, 1.0 if s == winner else 0.1) for s in STRATEGIES}


def _synthetic() -> list[Labelled]:
    """A question asking for a path between two things is won by hipporag; a plain one by hybrid."""
    examples = []
    for n, topic in enumerate(TOPICS):
        for kind, text, winner in (
            ("path", f"What is the path from {topic} to the nearest museum?", "hipporag"),
            ("plain", f"When was {topic} first described?", "hybrid"),
        ):
            examples.append(Labelled(f"{kind}{n}", text, winner, _outcomes(winner), "synthetic"))
    return examples


def test_learned_router_round_trips_on_a_known_rule(tmp_path: Path, embedder: Embedder) -> None:
    model = train(_synthetic(), embedder, Router())
    assert model.cross_validation["learned_cv"] == 100.0  # held-out questions, all routed right
    path = model.save(model_path(tmp_path))
    loaded = load_model(path)
    assert loaded.classes == ("hybrid", "hipporag") and loaded.embedder_model == embedder.model_name
    assert [t["label"] for t in loaded.training].count("hipporag") == len(TOPICS)
    np.testing.assert_allclose(loaded.coef, model.coef)
    router = select_router(tmp_path, QuerySettings().router, embedder, Router())
    assert router.kind == "learned"
    unseen = router.route("What is the path from the Rhine to the nearest harbour?", STRATEGIES)
    assert unseen.strategy == "hipporag" and unseen.reason.startswith("Learned router: hipporag")
    assert unseen.features["probabilities"]["hipporag"] > 0.5
    plain = router.route("When was the Louvre first described?", STRATEGIES)
    assert plain.strategy == "hybrid" and plain.features["router"] == "learned"
    # Only the served strategies are chosen from.
    assert router.route("When was the Louvre first described?", ("naive", "hipporag")).strategy != "hybrid"


def test_ties_go_to_the_cheaper_strategy_after_recall_and_mrr() -> None:
    tied = {"hipporag": Outcome(1.0, 1.0), "hybrid": Outcome(1.0, 1.0), "naive": Outcome(1.0, 1.0)}
    assert best_strategy(tied) == "naive"
    assert best_strategy({**tied, "hipporag": Outcome(1.0, 1.0), "naive": Outcome(1.0, 0.5)}) == "hybrid"
    assert best_strategy({"graphrag_global": Outcome(0.5, 1.0), "lightrag": Outcome(0.5, 1.0)}) == "lightrag"
    assert best_strategy({"naive": Outcome(0.5, 1.0), "hipporag": Outcome(1.0, 0.2)}) == "hipporag"


def test_cross_validation_never_scores_a_question_with_a_model_that_saw_it() -> None:
    examples = _synthetic()
    trained_on: list[set[str]] = []

    def fit(x: np.ndarray, seen: Sequence[Labelled]) -> LearnedModel:
        trained_on.append({e.question_id for e in seen})
        one = np.ones(x.shape[1])
        return LearnedModel(("naive",), (), one * 0, one, np.zeros((1, x.shape[1])), np.zeros(1), "", 1.0)

    x = np.zeros((len(examples), 3))
    scored = cross_validate(x, examples, fit, k=5)
    assert sorted(s.question_id for s in scored) == sorted(e.question_id for e in examples)
    assert len(trained_on) == 5
    fold_of = dict(
        zip([e.question_id for e in examples], folds([e.question_id for e in examples], 5), strict=True)
    )
    for s in scored:
        assert s.fold == fold_of[s.question_id]
        assert s.question_id not in trained_on[s.fold]
        assert trained_on[s.fold] == {q for q, f in fold_of.items() if f != s.fold}


@pytest.mark.parametrize("count", [1, 2, 3])
def test_cross_validation_of_the_fitted_router_on_a_handful_of_questions(count: int) -> None:
    """``eval --limit 2`` ended in an IndexError: a fold's training set of one question left the
    inner cross-validation (choosing C) an empty training set."""
    examples = _synthetic()[:count]
    x = np.arange(count * 3, dtype=float).reshape(count, 3)
    scored = cross_validate(x, examples, fit_selected)
    # A question is scored only by a model fitted without it: one question alone is not scored.
    assert len(scored) == (0 if count == 1 else count)


def _bias_model(embedder: Embedder, favoured: str, model_name: str | None = None) -> LearnedModel:
    names = QuestionFeatures(embedder, Router()).names()
    classes = ("naive", favoured)
    zeros = np.zeros(len(names))
    return LearnedModel(
        classes, tuple(names), zeros, zeros + 1, np.zeros((2, len(names))), np.asarray([0.0, 3.0]),
        model_name or embedder.model_name, 1.0, training=[{"id": "q", "question": "?", "label": favoured}],
    )  # fmt: skip


def test_auto_uses_the_stored_model_and_says_so(built_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_home, home, ignore=shutil.ignore_patterns("dagster"))
    ruled = QueryEngine.open(home, environ={})
    before = ruled.ask("Who founded the Hale Mill?", retrieve_only=True).metadata
    assert (
        before["router_reason"].startswith("Rule router: ") and before["router_features"]["router"] == "rule"
    )
    _bias_model(ruled.embedder, "lightrag").save(model_path(home))
    learned = QueryEngine.open(home, environ={})
    response = learned.ask("Who founded the Hale Mill?", retrieve_only=True)
    assert response.strategy == "lightrag"
    reason = response.metadata["router_reason"]
    assert reason.startswith("Learned router: lightrag (probabilities lightrag 0.95, naive 0.05")
    assert response.metadata["router_features"]["probabilities"]["lightrag"] == pytest.approx(
        0.9526, abs=1e-3
    )
    off = home / "settings.yaml"
    off.write_text(off.read_text() + "query:\n  router:\n    learned: 'off'\n")
    assert QueryEngine.open(home, environ={}).router.kind == "rule"


def test_a_router_trained_with_another_embedder_is_refused(tmp_path: Path, embedder: Embedder) -> None:
    _bias_model(embedder, "lightrag", "some-other-embedder").save(model_path(tmp_path))
    router = select_router(tmp_path, QuerySettings().router, embedder, Router())
    decision = router.route("Who founded the Hale Mill?", STRATEGIES)
    assert router.kind == "rule" and decision.features["router"] == "rule"
    assert "trained with embedder 'some-other-embedder'" in decision.reason
    assert (
        f"configured embedder is {embedder.model_name!r}" in decision.reason
        and "train-router" in decision.reason
    )


def _results(records: dict[str, list[dict[str, object]]]) -> dict[str, object]:
    return {"dataset": "toy", "questions": records}


def test_train_router_on_a_bad_file_names_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"question_id": "q1", "question": "Who?", "recall": {"5": 1.0}, "mrr": 1.0}
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps(_results({"naive": [good], "hipporag": [{"question_id": "q1", "mrr": 1.0}]})))
    assert main(["train-router", str(bad), "--home", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "questions.hipporag[0].recall" in err and "Traceback" not in err
    bad.write_text("{not json")
    assert main(["train-router", str(bad), "--home", str(tmp_path)]) == 2
    assert f"{bad}: not a readable JSON file" in capsys.readouterr().err
    no_text = {k: v for k, v in good.items() if k != "question"}
    bad.write_text(json.dumps(_results({"naive": [no_text], "hipporag": [no_text]})))
    assert main(["train-router", str(bad), "--home", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "questions.*[].question" in err and "--questions" in err and str(bad) in err


def _synthetic_set(folder: Path) -> Path:
    """The synthetic examples as an eval set in ``folder``: its results.json (returned), naming the
    folder, and its questions.jsonl."""
    examples = _synthetic()
    records = {
        s: [
            {"question_id": e.question_id, "recall": {"5": e.outcomes[s].recall}, "mrr": e.outcomes[s].mrr}
            for e in examples
        ]
        for s in STRATEGIES
    }
    results = folder / "results.json"
    results.write_text(json.dumps(_results(records) | {"dataset_folder": str(folder)}))
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps({"id": e.question_id, "question": e.question}) + "\n" for e in examples)
    )
    return results


def test_train_router_cli_reads_question_texts_from_the_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _synthetic_set(tmp_path)
    assert load_results(results)[0].question == _synthetic()[0].question
    assert main(["train-router", str(results), "--home", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "learned router (CV) 100.0" in out, out
    assert "hipporag: cue:path" in out, out  # the cue that decides tops the inspectable features
    assert load_model(model_path(tmp_path)).sources == (str(results),)


def test_train_router_embeds_with_the_variant_the_home_was_built_with(
    built_home: Path, tmp_path: Path
) -> None:
    """`ask` embeds with the variant a home's vectors were made with; a router trained with the
    configured one instead was refused by `ask` until the home was re-indexed."""
    home = tmp_path / "home"
    shutil.copytree(built_home, home, ignore=shutil.ignore_patterns("dagster"))
    built = QueryEngine.open(home, environ={}).embedder.model_name
    other = next(v.name for v in LOCAL_MODELS["all-MiniLM-L6-v2"].variants if v.suffix not in built)
    (home / "settings.yaml").write_text(
        f"embedding:\n  models:\n    - name: all-MiniLM-L6-v2\n      variant: {other}\n", encoding="utf-8"
    )
    model, _ = train_router([_synthetic_set(tmp_path)], home, environ={})
    assert model.embedder_model == built
    assert QueryEngine.open(home, environ={}).router.kind == "learned"
