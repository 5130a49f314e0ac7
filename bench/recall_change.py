"""Benchmark helper: how one `eval` run's recall differs from another's, question by question; prints JSON.

    python bench/recall_change.py BEFORE/results.json AFTER/results.json [--k 5]

Both files are `python -m graphunified_query eval` outputs on the same questions (two homes of
one set: a setting, a model variant, a code change). Per strategy: Recall@k before and after, the
questions whose Recall@k fell and rose, and the two-sided sign test's p-value over those changed
questions (the chance of a split at least this uneven if a change were as likely to cost a
question as to gain one). On 100-question sets one supporting passage of a question is 0.25-0.5
point of Recall@5 (two to four per question), so a one-point move is a few passages: the p-value
says whether a difference is the change or which few questions near a rank cut moved.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any


def sign_test(lost: int, gained: int) -> float:
    """Two-sided exact sign test over ``lost + gained`` changed questions."""
    n = lost + gained
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(lost, gained) + 1)) / 2**n
    return min(1.0, 2 * tail)


def recall_change(before: dict[str, Any], after: dict[str, Any], k: str) -> dict[str, dict[str, Any]]:
    """Per strategy present in both: recall@k before/after (mean over questions, x100), lost, gained, p."""
    changes: dict[str, dict[str, Any]] = {}
    for strategy, rows in before["questions"].items():
        if strategy not in after["questions"]:
            continue
        was = {row["question_id"]: row["recall"][k] for row in rows}
        now = {row["question_id"]: row["recall"][k] for row in after["questions"][strategy]}
        shared = sorted(was.keys() & now.keys())
        if not shared:
            continue
        lost = sum(now[q] < was[q] for q in shared)
        gained = sum(now[q] > was[q] for q in shared)
        changes[strategy] = {
            f"recall@{k}_before": round(100 * sum(was[q] for q in shared) / len(shared), 2),
            f"recall@{k}_after": round(100 * sum(now[q] for q in shared) / len(shared), 2),
            "questions": len(shared),
            "lost": lost,
            "gained": gained,
            "sign_test_p": round(sign_test(lost, gained), 3),
        }
    return changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="results.json of the first eval")
    parser.add_argument("after", type=Path, help="results.json of the second eval, same questions")
    parser.add_argument("--k", type=int, default=5, help="the Recall@k cut-off (one of the evals' --k)")
    args = parser.parse_args()
    before, after = (json.loads(path.read_text(encoding="utf-8")) for path in (args.before, args.after))
    for path, results in ((args.before, before), (args.after, after)):
        if args.k not in results.get("ks", []):
            parser.error(f"--k {args.k}: {path} measured Recall@k only at {results.get('ks')}")
    report = {
        "before": str(args.before),
        "after": str(args.after),
        "dataset": before.get("dataset"),
        "k": args.k,
        "strategies": recall_change(before, after, str(args.k)),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
