"""Which strategy won each question of an eval run: the per-question labels the learned router fits.

A question's label is the strategy with the highest Recall@5, then the highest MRR, ties going to
the cheaper strategy (`registry.cost_order`): when two strategies find the same passages, the
cheaper one is the right answer. Read from ``results.json`` files (`eval`'s per-question records)
or from an eval run in memory; either way the result is one `Labelled` per question.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphunified_query.strategies.registry import AUTO, cost_order

LABEL_K = 5  # Recall@5, the router's metric in eval (`summary.ROUTER_METRIC_K`)


class ResultsError(ValueError):
    """A results file the learned router cannot train on; the message names the file and field."""


@dataclass(frozen=True)
class Outcome:
    recall: float  # Recall@LABEL_K
    mrr: float


@dataclass(frozen=True)
class Labelled:
    question_id: str
    question: str
    label: str
    outcomes: Mapping[str, Outcome]  # strategy -> how it did on this question
    source: str  # the results file (or eval run) it comes from


def best_strategy(outcomes: Mapping[str, Outcome]) -> str:
    """Highest recall, then MRR; among equals the cheapest strategy."""
    return min(outcomes, key=lambda s: (-outcomes[s].recall, -outcomes[s].mrr, cost_order(s)))


def label_all(
    outcomes: Mapping[str, Mapping[str, Outcome]], texts: Mapping[str, str], source: str
) -> list[Labelled]:
    """``outcomes``: strategy -> question id -> outcome; every strategy must cover every question."""
    ids = list(next(iter(outcomes.values())))
    return [
        Labelled(qid, texts[qid], best_strategy(per := {s: o[qid] for s, o in outcomes.items()}), per, source)
        for qid in ids
    ]


def load_results(path: Path, questions_file: Path | None = None) -> list[Labelled]:
    """The labelled questions of one ``results.json``; question texts from its records, else from
    ``questions_file`` or the dataset folder the results name."""
    data = _json(path)
    questions = data.get("questions")
    if not isinstance(questions, dict):
        raise ResultsError(f"{path}: field 'questions' is missing; pass the results.json an eval run wrote.")
    singles = {s: records for s, records in questions.items() if s != AUTO}
    if len(singles) < 2:
        raise ResultsError(
            f"{path}: field 'questions' holds {sorted(singles) or 'no'} strategies; the learned router "
            "needs at least two: run eval with --strategies all."
        )
    outcomes: dict[str, dict[str, Outcome]] = {}
    texts: dict[str, str] = {}
    for strategy, records in singles.items():
        outcomes[strategy] = {}
        for n, record in enumerate(records if isinstance(records, list) else []):
            where = f"questions.{strategy}[{n}]"
            qid = str(_field(record, "question_id", path, where))
            recall = _field(record, "recall", path, where)
            value = recall.get(str(LABEL_K)) if isinstance(recall, dict) else None
            if not isinstance(value, int | float):
                raise ResultsError(
                    f"{path}: field {where}.recall['{LABEL_K}'] is missing; "
                    f"run eval with --k including {LABEL_K}."
                )
            outcomes[strategy][qid] = Outcome(float(value), float(_field(record, "mrr", path, where)))
            if record.get("question"):
                texts[qid] = str(record["question"])
    ids = set(next(iter(outcomes.values())))
    for strategy, per in outcomes.items():
        if set(per) != ids or not per:
            raise ResultsError(
                f"{path}: field questions.{strategy} does not cover the same questions as the rest."
            )
    missing = ids - set(texts)
    if missing:
        texts |= _texts_from_file(path, data, questions_file, missing)
    return label_all(outcomes, texts, str(path))


def _texts_from_file(
    path: Path, data: Mapping[str, Any], given: Path | None, ids: set[str]
) -> dict[str, str]:
    folder = data.get("dataset_folder")
    file = given or (Path(folder) / "questions.jsonl" if folder else None)
    if file is None or not file.is_file():
        raise ResultsError(
            f"{path}: field questions.*[].question (the question text) is missing and "
            + (f"{file} does not exist" if file else "no dataset folder is recorded")
            + "; pass --questions SET/questions.jsonl (the file the eval ran), or rerun eval."
        )
    texts: dict[str, str] = {}
    for line in file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            texts[str(record.get("id"))] = str(record.get("question") or "")
    absent = sorted(q for q in ids if not texts.get(q))
    if absent:
        raise ResultsError(
            f"{file}: no question text for ids {absent[:3]} of {path}; is it the set the eval ran?"
        )
    return texts


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file; pass the results.json an eval run wrote.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultsError(f"{path}: not a readable JSON file ({error}).") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected a JSON object (eval's results.json).")
    return data


def _field(record: object, name: str, path: Path, where: str) -> Any:
    if not isinstance(record, dict) or record.get(name) is None:
        raise ResultsError(f"{path}: field {where}.{name} is missing; is this an eval results.json?")
    return record[name]


def training_summary(examples: Sequence[Labelled]) -> list[dict[str, Any]]:
    """What the stored model was trained on, one entry per question."""
    return [
        {"id": e.question_id, "question": e.question, "label": e.label, "source": e.source} for e in examples
    ]
