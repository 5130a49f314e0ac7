"""Benchmark: does the rule router choose as well with index-based question entities as with spaCy's?

    python bench/router_agreement.py [--set musique --results R.json --home HOME --questions Q.jsonl]...

For each eval set, routes every question twice with the rule router: once on spaCy features (the
named entities and possessive tags of spaCy's parse, as the router read them before) and once on
the features it reads now (`mentions`: the home's entity names, capitals, quotes, no spaCy).
Scores both choices with the per-question, per-strategy recall an earlier `eval` stored in its
``results.json``, so nothing is re-indexed or re-retrieved. The entity names are read from the
home's published ``entities.parquet`` (read only: the home is not opened as a snapshot, which
would write its cache). Prints one JSON object: per set, the agreement, routed Recall@2/@5 old and
new, and the time the new features take per question.

Defaults: the three dev sets of this machine (/tmp/i17out/after-SET, /tmp/i17homes/SET,
the dev sets in shared/eval beside the checkout).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from eval_data import EVAL_ROOT

from graphunified_query.routing.rules import QueryFeatures, Router
from graphunified_query.strategies.entity_linking import NameIndex
from graphunified_query.strategies.query_keywords import question_entities

SETS = ("musique", "2wikimultihopqa", "hotpotqa")
KS = ("2", "5")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--set", action="append", dest="sets", help="set name (repeatable; default: all three)"
    )
    parser.add_argument(
        "--results", type=Path, action="append", default=[], help="results.json, one per --set"
    )
    parser.add_argument("--home", type=Path, action="append", default=[], help="indexed home, one per --set")
    parser.add_argument(
        "--questions", type=Path, action="append", default=[], help="questions.jsonl per --set"
    )
    parser.add_argument("--show", type=int, default=8, help="disagreements listed per set")
    args = parser.parse_args()
    sets = args.sets or list(SETS)
    report: dict[str, Any] = {"benchmark": "rule router: spaCy features vs index-based features", "sets": {}}
    for n, name in enumerate(sets):
        results = _nth(args.results, n, Path(f"/tmp/i17out/after-{name}/results.json"))
        home = _nth(args.home, n, Path(f"/tmp/i17homes/{name}"))
        questions = _nth(args.questions, n, EVAL_ROOT / name / "questions.jsonl")
        report["sets"][name] = compare(results, home, questions, args.show)
    print(json.dumps(report, indent=2))


def _nth(values: list[Path], n: int, default: Path) -> Path:
    return values[n] if n < len(values) else default


def compare(results_path: Path, home: Path, questions_path: Path, show: int) -> dict[str, Any]:
    results = json.loads(results_path.read_text(encoding="utf-8"))
    per_strategy = {
        s: {r["question_id"]: r for r in records}
        for s, records in results["questions"].items()
        if s != "auto"
    }
    available = tuple(per_strategy)
    texts = {}
    for line in questions_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            texts[record["id"]] = record["question"]
    ids = list(per_strategy[available[0]])
    if missing := [qid for qid in ids if qid not in texts]:
        sys.exit(
            f"{questions_path}: {len(missing)} questions of {results_path} are missing (e.g. {missing[0]})"
        )
    as_run = {r["question_id"]: r.get("routed_to") for r in results["questions"].get("auto", [])}

    entities = _entities(home)
    started = time.perf_counter()
    index = NameIndex.build(entities)
    build_ms = (time.perf_counter() - started) * 1000
    new_router = Router(names=lambda: index)
    old_router = Router()  # decide() only: the same rule table
    from graphunified_query.core.text.spacy_text import load_pipeline

    nlp = load_pipeline()
    old, new, feature_ms, shown = {}, {}, [], []
    for qid in ids:
        question = texts[qid]
        doc = nlp(question)
        spacy_features = QueryFeatures(
            question, question.lower(), question_entities(doc), sum(t.tag_ == "POS" for t in doc)
        )
        old[qid] = old_router.decide(spacy_features, available)
        started = time.perf_counter()
        features = new_router.features(question)
        feature_ms.append((time.perf_counter() - started) * 1000)
        new[qid] = new_router.decide(features, available)
        if old[qid].strategy != new[qid].strategy and len(shown) < show:
            shown.append(
                {
                    "question": question,
                    "old": f"{old[qid].strategy} ({old[qid].features['rule']}, {spacy_features.entities})",
                    "new": f"{new[qid].strategy} ({new[qid].features['rule']}, {features.entities})",
                }
            )

    def routed(choice: dict[str, Any], k: str) -> float:
        return round(100 * statistics.mean(per_strategy[choice[q].strategy][q]["recall"][k] for q in ids), 2)

    agree = sum(old[q].strategy == new[q].strategy for q in ids)
    return {
        "questions": len(ids),
        "entities_indexed": len(index.rows),
        "agreement_pct": round(100 * agree / len(ids), 1),
        "rule_agreement_pct": round(
            100 * sum(old[q].features["rule"] == new[q].features["rule"] for q in ids) / len(ids), 1
        ),
        **{f"old_R@{k}": routed(old, k) for k in KS},
        **{f"new_R@{k}": routed(new, k) for k in KS},
        **{f"delta_R@{k}": round(routed(new, k) - routed(old, k), 2) for k in KS},
        "old_matches_eval_auto_pct": round(
            100 * sum(old[q].strategy == as_run.get(q) for q in ids) / len(ids), 1
        )
        if as_run
        else None,
        "new_choices": _counts(new),
        "old_choices": _counts(old),
        "name_index_build_ms": round(build_ms, 1),
        "features_ms_mean": round(statistics.mean(feature_ms), 3),
        "features_ms_p95": round(statistics.quantiles(feature_ms, n=20)[-1], 3),
        "features_ms_max": round(max(feature_ms), 3),
        "disagreements": shown,
    }


def _counts(choices: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for decision in choices.values():
        counts[decision.strategy] = counts.get(decision.strategy, 0) + 1
    return dict(sorted(counts.items()))


def _entities(home: Path) -> list[dict[str, Any]]:
    """The published generation's entity titles and types, read from its parquet file."""
    generation = (home / "published" / "CURRENT").read_text(encoding="utf-8").strip()
    path = home / "published" / generation / "tables" / "entities.parquet"
    if not path.is_file():
        sys.exit(f"--home {home}: {path} is missing; give a home with a published index.")
    return pq.read_table(path, columns=["title", "type"]).to_pylist()


if __name__ == "__main__":
    main()
