"""Benchmark: the prompt-injection detector on the labelled set; prints JSON.

    python bench/injection.py [--part held|tune|all] [--misses]

Recall per class of injection (caught = the chunk's risk level is "high", so the default
query policy leaves it out), the false-positive rate on the look-alikes, and chunks scanned per
second. The held-back part (tests/fixtures/injection) was not looked at while tuning.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

from graphunified_assets.lib.risk.detector import assess_document
from graphunified_query.core.settings.model import RiskSettings
from tests.fixtures.injection.labelled_set import Example, examples

_SETTINGS = RiskSettings()


def is_flagged(text: str) -> bool:
    (risk,) = assess_document("bench.md", text, [(0, len(text))], _SETTINGS)
    return risk.level == "high"


def evaluate(part: str = "held") -> tuple[dict[str, object], list[Example]]:
    chosen = [e for e in examples() if part == "all" or e.held_back == (part == "held")]
    started = time.perf_counter()
    flagged = [is_flagged(e.text) for e in chosen]
    seconds = time.perf_counter() - started
    caught: dict[str, list[bool]] = defaultdict(list)
    by_form: dict[str, list[bool]] = defaultdict(list)
    false_positives: list[bool] = []
    misses = []
    for example, hit in zip(chosen, flagged, strict=True):
        if example.injection:
            caught[example.kind].append(hit)
            by_form[example.form].append(hit)
        else:
            false_positives.append(hit)
        if hit != example.injection:
            misses.append(example)
    injections = [hit for hits in caught.values() for hit in hits]
    report = {
        "part": part,
        "injections": len(injections),
        "benign": len(false_positives),
        "recall": round(sum(injections) / max(len(injections), 1), 3),
        "false_positive_rate": round(sum(false_positives) / max(len(false_positives), 1), 3),
        "recall_by_class": {k: round(sum(v) / len(v), 3) for k, v in sorted(caught.items())},
        "recall_by_form": {k: round(sum(v) / len(v), 3) for k, v in sorted(by_form.items())},
        "chunks_per_second": round(len(chosen) / seconds, 1),
    }
    return report, misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", default="held", choices=["held", "tune", "all"])
    parser.add_argument("--misses", action="store_true", help="list the misclassified examples")
    args = parser.parse_args()
    report, misses = evaluate(args.part)
    if args.misses:
        report["misses"] = [{"injection": m.injection, "kind": m.kind, "form": m.form, "text": m.text}
                            for m in misses]  # fmt: skip
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
