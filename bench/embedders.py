"""Benchmark: one embedding configuration against another, from `eval` results; prints JSON.

    python bench/embedders.py --results minilm=OUT/minilm-{set}/results.json \\
                              --results e5=OUT/e5-{set}/results.json \\
                              --results fused=OUT/fused-{set}/results.json \\
                              [--sets musique,2wikimultihopqa,hotpotqa]
                              [--baseline minilm] [--candidate fused]

Each ``--results`` names a configuration and a path pattern (``{set}`` is replaced by each dev
set). Produce them with ``python -m graphunified_query eval ../shared/eval/SET --home HOME --out
OUT/NAME-SET`` on a home whose settings.yaml lists the configuration's ``embedding.models``.

Per set and configuration it reports every strategy's R@2/R@5/R@10 and p50/p95 retrieval latency,
the rule router, the learned router (cross-validated), the best single strategy and the oracle,
and the index build time. ``decision`` applies issue #18's rule to ``--candidate`` against
``--baseline``: the candidate becomes the default only if mean `hipporag` R@5 rises and no set loses
more than one point. Each run's index time is reported as measured: runs that started from another
run's caches (extractions, one model's vectors) are not comparable with a cold build, so compare
index cost on cold builds of the same corpus.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

DATASETS = ("musique", "2wikimultihopqa", "hotpotqa")
DECIDING_STRATEGY = "hipporag"
DECIDING_METRIC = "recall@5"
MAX_LOSS_POINTS = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", action="append", required=True, help="NAME=PATH with {set} in PATH")
    parser.add_argument("--sets", default=",".join(DATASETS))
    parser.add_argument("--baseline", default="minilm")
    parser.add_argument("--candidate", default="fused")
    args = parser.parse_args()
    patterns = dict(spec.split("=", 1) for spec in args.results)
    sets = [s for s in args.sets.split(",") if s]
    runs = {
        name: {
            s: summary(json.loads(Path(pattern.format(set=s)).read_text()))
            for s in sets
            if _exists(pattern, s)
        }
        for name, pattern in patterns.items()
    }
    print(json.dumps({"runs": runs, "decision": decision(runs, args.baseline, args.candidate)}, indent=2))


def _exists(pattern: str, dataset: str) -> bool:
    return Path(pattern.format(set=dataset)).is_file()


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """What one eval run says about an embedding configuration."""
    router = results.get("router", {})
    return {
        "embedding_model": results.get("embedding_model"),
        "index_seconds": results["index"]["seconds"],
        "index_reused": results["index"]["reused"],
        "strategies": {
            name: {
                key: figures[key]
                for key in (
                    "recall@2",
                    "recall@5",
                    "recall@10",
                    "retrieval_latency_p50_ms",
                    "retrieval_latency_p95_ms",
                )
            }
            for name, figures in results["strategies"].items()
        },
        "router_recall@5": {
            key: router.get(key)
            for key in ("rule", "learned_cv", "best_single", "best_single_strategy", "oracle")
        },
    }


def decision(runs: dict[str, dict[str, Any]], baseline: str, candidate: str) -> dict[str, Any]:
    """Issue #18's rule: default only if mean hipporag R@5 rises and no set loses > 1 point."""
    if baseline not in runs or candidate not in runs:
        return {"decided": False, "why": f"need results for both {baseline!r} and {candidate!r}"}
    common = sorted(set(runs[baseline]) & set(runs[candidate]))
    deltas = {
        s: round(
            runs[candidate][s]["strategies"][DECIDING_STRATEGY][DECIDING_METRIC]
            - runs[baseline][s]["strategies"][DECIDING_STRATEGY][DECIDING_METRIC],
            2,
        )
        for s in common
    }
    complete = len(common) == len(DATASETS)
    mean_delta = round(statistics.fmean(deltas.values()), 2) if deltas else 0.0
    worst = min(deltas.values()) if deltas else 0.0
    wins = complete and mean_delta > 0 and worst >= -MAX_LOSS_POINTS
    return {
        "decided": complete,
        "rule": f"mean {DECIDING_STRATEGY} {DECIDING_METRIC} rises, no set loses > {MAX_LOSS_POINTS} point",
        f"{DECIDING_STRATEGY}_{DECIDING_METRIC}_delta": deltas,
        "mean_delta": mean_delta,
        "worst_delta": worst,
        "candidate_becomes_default": wins,
    }


if __name__ == "__main__":
    main()
