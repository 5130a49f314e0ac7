"""Benchmark: inverted-list build time before/after the one-hot sums, and an update's warm start.

    python bench/ivf.py [--rows 300000] [--dimension 384] [--lancedb DIR --table NAME]
                        [--added 1000] [--queries 200] [--seed 0]

The matrix is ``--rows`` unit vectors around 1,000 random topics (seeded), or the vectors of a
real LanceDB table (``--lancedb HOME/lancedb --table relationship_vectors``). The last
``--queries`` rows are held out as queries; of the rest, the last ``--added`` rows play the
documents an update adds. Steps, each timed:

1. ``before``: the base rows (all but the added ones) clustered as ``ivf.build`` did before,
   with ``np.add.at`` accumulation; ``after``: the same with today's ``ivf.build`` (the result
   must be identical: ``same_lists``).
2. The update: every row clustered ``fresh`` (cold start, ``ITERATIONS``) and ``warm`` (from the
   base build's centroids, ``WARM_ITERATIONS``); recall@10 of each against exact search.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphunified_query.core.indexes import ivf


def _synthetic(rows: int, dimension: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(1_000, dimension)).astype(np.float32)
    matrix = topics[rng.integers(0, len(topics), rows)]
    matrix += 0.8 * rng.normal(size=(rows, dimension)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _real(lancedb_dir: str, table: str, seed: int) -> np.ndarray:
    import lancedb

    column = lancedb.connect(lancedb_dir).open_table(table).to_arrow().column("vector").combine_chunks()
    matrix = column.values.to_numpy().reshape(len(column), -1).astype(np.float32)
    return matrix[np.random.default_rng(seed).permutation(len(matrix))]  # held-out rows at random


def _add_at_sums(sample: np.ndarray, nearest: np.ndarray, lists: int) -> np.ndarray:
    sums = np.zeros((lists, sample.shape[1]), dtype=sample.dtype)
    np.add.at(sums, nearest, sample)
    return sums


def _timed(build: object, *args: object, **kwargs: object) -> tuple[ivf.InvertedLists, float]:
    start = time.perf_counter()
    lists = build(*args, **kwargs)  # type: ignore[operator]
    return lists, round(time.perf_counter() - start, 2)


def _recall(matrix: np.ndarray, lists: ivf.InvertedLists, queries: np.ndarray, k: int = 10) -> float:
    found = []
    for query in queries:
        exact = set(np.argpartition(-(matrix @ query), k)[:k].tolist())
        candidates = lists.candidates(query)
        top = candidates[np.argpartition(-(matrix[candidates] @ query), k)[:k]]
        found.append(len(exact & set(top.tolist())) / k)
    return round(float(np.mean(found)), 4)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--lancedb", help="a home's lancedb folder: cluster a real table's vectors")
    parser.add_argument("--table", default="relationship_vectors")
    parser.add_argument("--added", type=int, default=1_000, help="rows the update adds")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.lancedb:
        data = _real(args.lancedb, args.table, args.seed)
    else:
        data = _synthetic(args.rows, args.dimension, args.seed)
    queries, matrix = data[-args.queries :], data[: -args.queries]
    base = matrix[: -args.added]
    ids = [f"r{i}" for i in range(len(matrix))]

    new_sums = ivf._sums
    ivf._sums = _add_at_sums  # the accumulation ivf.build used before
    before, before_s = _timed(ivf.build, base, ids[: len(base)])
    ivf._sums = new_sums
    after, after_s = _timed(ivf.build, base, ids[: len(base)])
    same = all(
        np.array_equal(getattr(before, field), getattr(after, field))
        for field in ("centroids", "rows", "offsets")
    )
    fresh, fresh_s = _timed(ivf.build, matrix, ids, seed=args.seed + 1)
    warm, warm_s = _timed(ivf.build, matrix, ids, seed=args.seed + 1, previous=after)
    recall_fresh, recall_warm = _recall(matrix, fresh, queries), _recall(matrix, warm, queries)
    result = {
        "matrix": f"{args.lancedb}:{args.table}" if args.lancedb else "synthetic",
        "rows": len(matrix),
        "dimension": matrix.shape[1],
        "lists": len(fresh.centroids),
        "added_rows": args.added,
        "queries": len(queries),
        "build_before_s": before_s,
        "build_after_s": after_s,
        "same_lists": same,
        "update_fresh_s": fresh_s,
        "update_warm_s": warm_s,
        "fresh_iterations": fresh.iterations,
        "warm_iterations": warm.iterations,
        "recall10_fresh": recall_fresh,
        "recall10_warm": recall_warm,
        "recall_diff_points": round(100 * (recall_warm - recall_fresh), 2),
        "loadavg": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
