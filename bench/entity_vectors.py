"""Which entity vectors the strategies need: one home's questions under other entity vectors.

    python bench/entity_vectors.py --home HOME --dataset ../shared/eval/hotpotqa \
        [--strategies lightrag,hipporag] [--variants whole,composed,offset:0.03,noise:0.02:0,zero]

Loads a built home once and answers its eval set's questions (retrieval only, the engine's one
query path) with the entity index replaced in memory, so a composition is compared without a
rebuild and the home is only read (pieces missing from its embedding cache are computed and not
stored). Variants:

- ``whole``: the stored vectors; ``composed``: `composed_vectors.entity_vectors` of the rows, as
  ``embedding.composed_vectors: [entities, ...]`` builds them;
- ``offset:C``: the stored vectors with every cosine raised by C (does a strategy depend on the
  similarity scale? composed cosines sit 0.02-0.04 higher);
- ``noise:TAU:SEED``: the stored cosines plus Gaussian noise of deviation TAU, fixed per question
  (how much R@k any change of the entity ranking costs, whatever its cause);
- ``zero``: no entity similarity at all (what the entity index adds to each strategy).

Prints JSON: per variant, per strategy Recall@2/@5, MRR and the questions that lost or gained at
Recall@5 against ``whole``; per variant the entity ranking alone: the share of the top 5 shared
with ``whole``, the passages cited by the top 1 / top 5 entities and the supporting passages they
reach. docs/build-throughput.md has what it found.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.composed_vectors import ReadOnlyEmbedder
from graphunified_assets.lib.vectors.composed_vectors import entity_vectors
from graphunified_query.core.indexes.dense import DenseIndex
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.evaluation.dataset import Question, load_dataset
from graphunified_query.evaluation.home import passage_id
from graphunified_query.evaluation.runner import QuestionRun, run_questions

KS = (2, 5, 10)


@dataclasses.dataclass(frozen=True)
class ShiftedIndex(DenseIndex):
    """A dense index whose cosines are moved: by ``offset``, plus noise fixed per query."""

    offset: float = 0.0
    noise: float = 0.0
    seed: int = 0

    def similarities(self, query: np.ndarray) -> np.ndarray:
        scores = super().similarities(query) + np.float32(self.offset)
        if self.noise:  # the same question gets the same noise in every strategy
            key = int.from_bytes(np.asarray(query, np.float32).tobytes()[:8], "little")
            rng = np.random.default_rng([self.seed, key])
            scores = scores + rng.normal(0.0, self.noise, len(scores)).astype(np.float32)
        return scores


def entity_index(variant: str, engine: QueryEngine, home: Path) -> DenseIndex:
    """The entity index of ``variant`` (module docstring); a bad name is a one-line error."""
    stored = engine.snapshot.entity_vectors
    kind, *args = variant.split(":")
    try:
        if kind == "whole" and not args:
            return stored
        if kind == "composed" and not args:
            rows = list(engine.snapshot.entities)
            return DenseIndex(stored.ids, entity_vectors(rows, ReadOnlyEmbedder(home).embed))
        if kind == "offset" and len(args) == 1:
            return ShiftedIndex(stored.ids, stored.matrix, offset=float(args[0]))
        if kind == "noise" and len(args) == 2:
            return ShiftedIndex(stored.ids, stored.matrix, noise=float(args[0]), seed=int(args[1]))
        if kind == "zero" and not args:
            return DenseIndex(stored.ids, np.zeros_like(stored.matrix))
    except ValueError:
        pass
    raise SystemExit(f"--variants: {variant!r} is not one of whole, composed, offset:C, noise:TAU:SEED, zero")


def entity_ranking(
    index: DenseIndex, whole: DenseIndex, engine: QueryEngine, questions: Sequence[Question]
) -> dict[str, float]:
    """The entity ranking alone: top-5 overlap with ``whole``, passages the top 1 / top 5 cite,
    and the share of supporting passages the top 5 reach."""
    snap = engine.snapshot
    vectors = engine.embedder.embed([q.question for q in questions], kind="query")
    overlap, top1, top5, reached = [], [], [], []
    for question, vector in zip(questions, vectors, strict=True):
        rows = [row for row, _ in index.search(vector, 5)]
        overlap.append(len(set(rows) & {row for row, _ in whole.search(vector, 5)}) / 5)
        cited = [_passages(engine, snap.entities[row]["text_unit_ids"]) for row in rows]
        top1.append(len(cited[0]) if cited else 0)
        top5.append(float(np.mean([len(c) for c in cited])) if cited else 0.0)
        gold = set(question.supporting_ids)
        reached.append(len(set().union(*cited) & gold) / max(len(gold), 1))
    return {
        "top5_shared_with_whole": round(float(np.mean(overlap)), 3),
        "passages_per_top1_entity": round(float(np.mean(top1)), 2),
        "passages_per_top5_entity": round(float(np.mean(top5)), 2),
        "supporting_reached_by_top5": round(100 * float(np.mean(reached)), 1),
    }


def _passages(engine: QueryEngine, chunk_ids: Sequence[str]) -> set[str]:
    snap = engine.snapshot
    rows = [snap.chunk_row[c] for c in chunk_ids if c in snap.chunk_row]
    return {passage_id(snap.chunks.document_ids[row]) for row in rows}


def scores(runs: Sequence[QuestionRun], baseline: Sequence[QuestionRun] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        f"recall@{k}": round(100 * float(np.mean([r.recall[k] for r in runs])), 1) for k in KS
    }
    out["mrr"] = round(float(np.mean([r.mrr for r in runs])), 3)
    if baseline is not None:  # questions that moved at Recall@5 against `whole`
        before = {r.question_id: r.recall[5] for r in baseline}
        out["lost_at_5"] = [r.question_id for r in runs if r.recall[5] < before[r.question_id]]
        out["gained_at_5"] = [r.question_id for r in runs if r.recall[5] > before[r.question_id]]
    return out


def compare(home: Path, dataset: Path, strategies: Sequence[str], variants: Sequence[str]) -> dict[str, Any]:
    engine = QueryEngine.open(home)
    questions = load_dataset(dataset).questions
    whole = engine.snapshot.entity_vectors
    indexes = {variant: entity_index(variant, engine, home) for variant in variants}  # all checked first
    out: dict[str, Any] = {"home": str(home), "dataset": str(dataset), "questions": len(questions)}
    baseline: dict[str, list[QuestionRun]] | None = None
    for variant, index in indexes.items():
        snapshot = dataclasses.replace(engine.snapshot, entity_vectors=index, extras={})
        swapped = QueryEngine(snapshot, engine.settings, engine.embedder, llm=engine.llm)
        runs = run_questions(swapped, questions, strategies, ks=KS, generate=False)
        out[variant] = {
            "entity_ranking": entity_ranking(index, whole, swapped, questions),
            **{s: scores(runs[s], baseline[s] if baseline else None) for s in strategies},
        }
        if variant == "whole":
            baseline = runs
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--dataset", type=Path, required=True, help="eval folder (questions.jsonl)")
    parser.add_argument("--strategies", default="lightrag,hipporag,graphrag_local")
    parser.add_argument("--variants", default="whole,composed,offset:0.03,noise:0.02:0,zero")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if "whole" in variants:  # the baseline the others are compared with runs first
        variants = ["whole", *[v for v in variants if v != "whole"]]
    result = compare(args.home, args.dataset, args.strategies.split(","), variants)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
