"""Benchmark: the faiss index of the large vector tables against exact search, and HNSW; prints JSON.

    python bench/ann.py [--rows 100000] [--dimension 384] [--lancedb DIR --table NAME]
                        [--added 1000] [--queries 200] [--seed 0]

The matrix is ``--rows`` unit vectors around 1,000 random topics (seeded), or the vectors of a
real LanceDB table (``--lancedb HOME/lancedb --table relationship_vectors``: MiniLM vectors of an
indexed corpus). The last ``--queries`` rows are held out as queries; of the rest, the last
``--added`` rows play the documents an update adds. Timed, one query at a time as the query path
searches:

- ``exact``: numpy's matrix-vector product and argpartition (`DenseIndex.search(exact=True)`);
- ``ivf_flat``: `core/indexes/ann.py` as built at index time (4*sqrt(n) lists trained on a
  sample, a fifth probed): build seconds, ms per query, recall@10 against exact; then the update
  (the added rows added and as many removed, by id) as `index` runs it on the saved index (its
  base mapped, the change written to the delta beside it: `ann_update.py`) in seconds, the
  delta's size, ms per query and recall with that delta; and the same update folded into the base
  (the base read, changed and written whole, what every update cost before the delta);
- ``hnsw``: faiss's HNSW (M 32, efConstruction 64, efSearch 64) on the same rows, for the choice
  between them: HNSW cannot remove rows, so an update would rebuild it.

The hand-written inverted lists faiss replaced are in the benchmark record (`bench/results/
records/ann.json`), measured with the same rows before they were removed. Quote ``load``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphunified_query.core.artifacts import ann_file
from graphunified_query.core.indexes import ann, ann_delta, ann_update
from graphunified_query.core.indexes.dense import DenseIndex


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


def _timed_search(index: DenseIndex, queries: np.ndarray, exact: list[set[int]]) -> dict[str, float]:
    started = time.perf_counter()
    found = [{row for row, _ in index.search(q, 10)} for q in queries]
    ms = (time.perf_counter() - started) * 1000 / len(queries)
    recall = float(np.mean([len(f & e) / 10 for f, e in zip(found, exact, strict=True)]))
    return {"ms_per_query": round(ms, 3), "recall_at_10": round(recall, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--lancedb")
    parser.add_argument("--table", default="relationship_vectors")
    parser.add_argument("--added", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-hnsw", action="store_true", help="skip HNSW (minutes to build at 100K)")
    args = parser.parse_args()
    if args.lancedb:
        matrix = _real(args.lancedb, args.table, args.seed)
    else:
        matrix = _synthetic(args.rows + args.queries, args.dimension, args.seed)
    queries, rows = matrix[-args.queries :], matrix[: -args.queries]
    base = len(rows) - args.added
    ids = tuple(f"r{i}" for i in range(len(rows)))
    exact_index = DenseIndex(ids[:base], rows[:base])
    started = time.perf_counter()
    exact = [{row for row, _ in exact_index.search(q, 10)} for q in queries]
    out: dict[str, object] = {
        "source": f"{args.lancedb}:{args.table}" if args.lancedb else "synthetic",
        "rows": base,
        "dimension": rows.shape[1],
        "queries": len(queries),
        "faiss": faiss.__version__,
        "exact": {"ms_per_query": round((time.perf_counter() - started) * 1000 / len(queries), 3)},
    }
    started = time.perf_counter()
    built = ann.build(rows[:base], ids[:base], seed=args.seed)
    ivf_flat = {"build_seconds": round(time.perf_counter() - started, 2), "lists": built.lists}
    ivf_flat |= _timed_search(DenseIndex(ids[:base], rows[:base], built), queries, exact)
    # The update: the added rows in, as many of the first rows out (a document replaced).
    kept = ids[args.added : len(rows)]
    added = {ids[i]: rows[i] for i in range(base, len(rows))}
    updated_exact = DenseIndex(kept, rows[args.added :])
    truth = [{row for row, _ in updated_exact.search(q, 10)} for q in queries]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ann_file(args.table)
        ann.save(path, built)
        seconds, after = _timed_update(path, kept, ids[: args.added], added)
        assert after.source == path, "the update folded: pass fewer --added rows"
        delta = ann_delta.path_of(path)
        ivf_flat |= {"update_seconds": seconds, "delta_mb": round(delta.stat().st_size / 1e6, 2)}
        loaded = ann.load(path, kept)
        assert loaded is not None and len(loaded) == len(kept)
        searched = _timed_search(DenseIndex(kept, rows[args.added :], loaded), queries, truth)
        ivf_flat["ms_per_query_after_update"] = searched["ms_per_query"]
        ivf_flat["recall_at_10_after_update"] = searched["recall_at_10"]
        ann.save(path, built)  # the same update again, folded into the base
        share, ann_update.FOLD_SHARE = ann_update.FOLD_SHARE, 0.0
        ivf_flat["fold_seconds"], after = _timed_update(path, kept, ids[: args.added], added)
        ann_update.FOLD_SHARE = share
        assert after.source is None and not delta.exists()
    out["ivf_flat"] = ivf_flat
    if not args.no_hnsw:
        out["hnsw"] = _hnsw(rows[:base], queries, exact)
    out["load"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))


def _timed_update(
    path: Path, kept: tuple[str, ...], removed: tuple[str, ...], added: dict[str, np.ndarray]
) -> tuple[float, ann.AnnIndex]:
    """Seconds of one update as `graph_vectors` runs it: the saved index read, changed, saved."""
    started = time.perf_counter()
    previous = ann.load_previous(path)
    assert previous is not None
    after = ann_update.updated(previous, kept, removed, added)
    assert after is not None and len(after) == len(kept)
    ann.save(path, after)
    return round(time.perf_counter() - started, 3), after


def _hnsw(rows: np.ndarray, queries: np.ndarray, exact: list[set[int]]) -> dict[str, float]:
    started = time.perf_counter()
    index = faiss.IndexHNSWFlat(rows.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 64
    index.add(rows)
    built = time.perf_counter() - started
    index.hnsw.efSearch = 64
    started = time.perf_counter()
    found = [set(index.search(q[None], 10)[1][0].tolist()) for q in queries]
    ms = (time.perf_counter() - started) * 1000 / len(queries)
    recall = float(np.mean([len(f & e) / 10 for f, e in zip(found, exact, strict=True)]))
    return {"build_seconds": round(built, 2), "ms_per_query": round(ms, 3), "recall_at_10": round(recall, 4)}


if __name__ == "__main__":
    main()
