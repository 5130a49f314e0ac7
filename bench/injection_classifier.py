"""Benchmark: a packaged prompt-injection classifier beside the feature detector, and both fused; prints JSON.

    pip install metatronnanoguard   # NanoGuard 0.1.0: weights inside the wheel; needs torch, tiktoken
    python bench/injection_classifier.py [--limit N] [--record]

Same corpora and parts as bench/injection.py. The classifier's threshold, and whether fusing
(flag when the detector or the classifier says so) helps, are chosen on the tune parts only: the
lowest threshold whose false-positive rate on the tune part of ordinary text
stays at or under 5 %. The held parts are then reported at that threshold.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from bench.injection import CORPUS_NAMES, Sample, corpora, is_flagged, load_average, write_record

MAX_TUNE_FALSE_POSITIVES = 0.05
THRESHOLDS = (0.5, 0.7, 0.9, 0.95, 0.99, 0.999)


def load_classifier() -> Any:
    try:
        import torch  # only for this measurement: neither is a dependency of the project
        from nanoguard.scanner import NanoGuard
    except ImportError:
        sys.exit("bench/injection_classifier.py: NanoGuard is not installed; pip install metatronnanoguard")
    torch.set_num_threads(1)  # the machine is shared; one thread is also what a pipeline step gets
    return NanoGuard(device="cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=0, help="samples per corpus and part (0: all)")
    parser.add_argument("--record", action="store_true", help="write the held figures into the record")
    args = parser.parse_args()
    classifier = load_classifier()
    load = load_average()
    scored: dict[str, list[tuple[Sample, float, bool]]] = {}
    started, count = time.perf_counter(), 0
    for name, samples in corpora().items():
        chosen = [
            s for held in (False, True) for s in [s for s in samples if s.held == held][: args.limit or None]
        ]
        scored[name] = [(s, classifier.scan(s.text).injection_score, is_flagged(s.text)) for s in chosen]
        count += len(chosen)
    seconds = time.perf_counter() - started
    threshold = _choose_threshold(scored)
    report = {
        "classifier": "metatronnanoguard 0.1.0 (NanoGuard, 16.8M parameters, weights in the wheel)",
        "threshold_chosen_on_tune": threshold,
        "held": {name: _figures(rows, threshold, held=True) for name, rows in scored.items()},
        "tune": {name: _figures(rows, threshold, held=False) for name, rows in scored.items()},
        "seconds_per_chunk_both": round(seconds / max(count, 1), 3),
    }
    print(json.dumps(report, indent=2))
    if args.record:
        write_record(_record(report, args.limit, load))


def _record(report: dict[str, Any], limit: int, load: str) -> dict[str, object]:
    def cells(figures: dict[str, Any], key: str) -> list[str]:
        found = figures.get(key)
        return [f"{found[k]:.3f}" for k in ("features", "classifier", "either")] if found else ["—"] * 3

    held = report["held"]
    rows = [
        [label, *cells(held[name], "recall"), *cells(held[name], "false_positive_rate")]
        for name, label in CORPUS_NAMES.items()
    ]
    sample = f"the first {limit} samples of each corpus's part" if limit else "every sample"
    return {
        "id": "injection-2",
        "order": 20,
        "title": "A packaged classifier (NanoGuard) beside the features, and both fused, on the held parts",
        "script": f"bench/injection_classifier.py{f' --limit {limit}' if limit else ''} --record",
        "machine": {"cores": 2, "memory_gb": None, "shared": True},
        "load_average": load,
        "source": f"measured on {sample}; {report['seconds_per_chunk_both']} s a chunk for both at this load",
        "before": [
            f"{report['classifier']}, threshold {report['threshold_chosen_on_tune']} (the lowest keeping "
            'ordinary text\'s tune false positives at or under 5 %). "Either" flags what the features or the '
            "classifier flag."
        ],
        "columns": [
            "corpus",
            "recall: features",
            "classifier",
            "either",
            "false positives: features",
            "classifier",
            "either",
        ],
        "rows": rows,
        "after": [],
    }


def _choose_threshold(scored: dict[str, list[tuple[Sample, float, bool]]]) -> float:
    """The lowest threshold at which the classifier keeps ordinary text's tune FP rate at most 5 %."""
    ordinary = [score for sample, score, _ in scored["ordinary_documents"] if not sample.held]
    for threshold in THRESHOLDS:
        if sum(score >= threshold for score in ordinary) / max(len(ordinary), 1) <= MAX_TUNE_FALSE_POSITIVES:
            return threshold
    return 1.0


def _figures(rows: list[tuple[Sample, float, bool]], threshold: float, held: bool) -> dict[str, object]:
    part = [(s, score >= threshold, feature) for s, score, feature in rows if s.held == held]
    figures: dict[str, object] = {}
    for label, injection in (("recall", True), ("false_positive_rate", False)):
        chosen = [(c, f) for s, c, f in part if s.injection == injection]
        if chosen:
            figures[label] = {
                "features": round(sum(f for _, f in chosen) / len(chosen), 3),
                "classifier": round(sum(c for c, _ in chosen) / len(chosen), 3),
                "either": round(sum(c or f for c, f in chosen) / len(chosen), 3),
            }
    return figures


if __name__ == "__main__":
    main()
