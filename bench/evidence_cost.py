"""Benchmark: the CPU one `/ask` spends on the evidence subgraph, asked for and not; prints JSON.

    python bench/evidence_cost.py --home DIR [--questions 20] [--strategies naive,hybrid,...]

Loads the home's engine behind the HTTP service's `QueryService` (as `serve` does) and asks each
question with each strategy, retrieval only: once to warm the result cache, then with
``evidence: false`` and ``evidence: true`` alternately, ``--rounds`` times each. Each call's process
CPU time (``time.process_time``) is measured around ``QueryService.ask``; with the retrieval served
from the result cache, the difference is what the evidence costs. Questions are made from the
home's own entity titles ("What is X related to?"), so every strategy finds graph contexts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.engine.request import QueryRequest
from graphunified_query.server.service import QueryService

CORE = "naive,hybrid,hipporag,lightrag,graphrag_local,graphrag_global"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", required=True, help="an indexed data home")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--strategies", default=CORE)
    args = parser.parse_args()
    print(json.dumps(run(args.home, args.questions, args.rounds, args.strategies.split(",")), indent=2))


def run(home: str, n_questions: int, rounds: int, strategies: list[str]) -> dict[str, Any]:
    engine = QueryEngine.open(home)
    service = QueryService(engine)
    titles = [str(row["title"]) for row in engine.snapshot.entities[: n_questions * 7 : 7]]
    questions = [f"What is {title} related to?" for title in titles[:n_questions]]
    load_before = os.getloadavg()[0]
    per_strategy: dict[str, dict[str, float]] = {}
    for strategy in strategies:
        cpu: dict[bool, list[float]] = {False: [], True: []}
        for question in questions:
            request = QueryRequest(question=question, strategy=strategy, retrieve_only=True)
            service.ask(request, retrieve_only=True)  # warms the result cache for this request
            for _ in range(rounds):
                for asked in (False, True):
                    started = time.process_time()
                    service.ask(request.model_copy(update={"evidence": asked}), retrieve_only=True)
                    cpu[asked].append((time.process_time() - started) * 1000)
        per_strategy[strategy] = {
            "cpu_ms_without_p50": round(statistics.median(cpu[False]), 2),
            "cpu_ms_with_p50": round(statistics.median(cpu[True]), 2),
            "evidence_cpu_ms_mean": round(statistics.fmean(cpu[True]) - statistics.fmean(cpu[False]), 2),
        }
    return {
        "home": home,
        "chunks": len(engine.snapshot.chunks.ids),
        "questions": len(questions),
        "rounds": rounds,
        "strategies": per_strategy,
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
    }


if __name__ == "__main__":
    main()
