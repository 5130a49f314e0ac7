"""Benchmark: eval's per-strategy latency with the strategies given in both orders; prints JSON.

    python bench/eval_order.py HOME DATASET [--strategies naive,hybrid] [--repeat 10]

``HOME`` is an index of ``DATASET``'s corpus (`graphunified eval DATASET --home HOME` builds one).
For each order of ``--strategies`` (as given, then reversed) a fresh engine runs the set's
questions ``--repeat`` times through `run_questions`, which warms the engine and every strategy,
embeds each question before its strategies run and shuffles their order per question. Latencies
should then not depend on which strategy was named first (#32: naive then hybrid was 32/162 and
17/22 ms p50/p95, reversed 22/42 and 41/231). Quote the load average (``load``) with any figure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("dataset", type=Path, help="folder with corpus.jsonl and questions.jsonl")
    parser.add_argument("--strategies", default="naive,hybrid")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    for path in (args.home, args.dataset):
        if not path.is_dir():
            print(f"error: {path} is not a folder", file=sys.stderr)
            return 2
    from graphunified_query.engine.query_engine import QueryEngine
    from graphunified_query.evaluation.dataset import load_dataset
    from graphunified_query.evaluation.runner import run_questions

    strategies = args.strategies.split(",")
    questions = list(load_dataset(args.dataset).questions) * args.repeat
    report: dict[str, object] = {"load": os.getloadavg()[0], "questions": len(questions)}
    for order in (strategies, strategies[::-1]):
        engine = QueryEngine.open(args.home, environ={})  # cold, as a fresh `eval` is
        runs = run_questions(engine, questions, order, ks=(2, 5, 10), generate=False)
        report[",".join(order)] = {
            name: {
                "p50_ms": percentile([r.total_ms for r in rs], 0.5),
                "p95_ms": percentile([r.total_ms for r in rs], 0.95),
            }
            for name, rs in runs.items()
        }
    report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
