"""Benchmark: LightRAG's modes on a home, against a questions file with supporting documents.

    python bench/lightrag_modes.py --home H [--questions data/sample-questions.jsonl] [--top-k 10]

For each mode (and, for the graph modes, with and without the dual-level keyword split that
matches relationships on their high-level keywords, LightRAG's thematic layer), runs the strategy
itself (no link expansion, no context filters) on every question and prints one JSON object:
document Recall@5 and @10 (the share of a question's supporting documents among the first k
distinct documents of its contexts) and the entities' share of the graph contexts. The home is
only read. A mode the checkout does not have is reported as an error, so two checkouts compare.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.evaluation.metrics import recall_at_k

MODES = ("local", "global", "hybrid", "mix", "naive")


def measure(engine: QueryEngine, questions: list[dict], top_k: int, **params: object) -> dict[str, object]:
    retriever = engine.retriever("lightrag")
    recall5, recall10, entities, graph = [], [], 0, 0
    started = time.perf_counter()
    for record in questions:
        results = retriever.retrieve(record["question"], top_k, retriever.params.updated(**params)).results
        ranking = [r.document_id for r in results if r.document_id]
        recall5.append(recall_at_k(ranking, record["supporting_ids"], 5))
        recall10.append(recall_at_k(ranking, record["supporting_ids"], 10))
        entities += sum(r.kind == "entity" for r in results)
        graph += sum(r.kind in ("entity", "relationship") for r in results)
    return {
        "recall@5": round(sum(recall5) / len(recall5), 3),
        "recall@10": round(sum(recall10) / len(recall10), 3),
        "entity_share": round(entities / graph, 3) if graph else None,
        "graph_contexts": graph,
        "ms_per_query": round(1000 * (time.perf_counter() - started) / len(questions), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=Path("data/sample-questions.jsonl"))
    parser.add_argument("--top-k", type=int, default=10)
    args = parser.parse_args()
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    engine = QueryEngine.open(args.home, environ={})
    out: dict[str, object] = {"questions": len(questions), "top_k": args.top_k}
    for mode in MODES:
        for dual in (False, True) if mode != "naive" else (False,):
            name = f"{mode}{'+keywords' if dual else ''}"
            try:
                out[name] = measure(engine, questions, args.top_k, mode=mode, dual_keywords=dual)
            except ValueError as error:  # a mode this checkout does not have
                out[name] = {"error": str(error)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
