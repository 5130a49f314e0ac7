"""Benchmark: what `strategies.enabled` saves when building; prints one JSON object.

    python bench/strategies_enabled.py [--corpus DIR] [--enabled naive,hybrid,hipporag] [--rounds 2]

Builds ``--corpus`` (default: the bundled sample, `data/sample`) from nothing into a fresh home
with the offline models, once with every strategy and once with ``--enabled`` only, alternating
``--rounds`` times (so a load change hits both alike), and reports each build's wall time, the
global steps' own times from Dagster's step events, and the rows of what the subset left empty.
Every home is fresh: no embedding, extraction or report cache is shared between builds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from build import steps_report  # bench/build.py: step times from the home's Dagster events

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.artifacts import COMMUNITIES, COMMUNITY_REPORTS, FACTS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import read_table

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = "embedding:\n  provider: local\nllm:\n  provider: offline\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/sample")
    parser.add_argument("--enabled", default="naive,hybrid,hipporag", help="comma-separated strategies")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    enabled = [n.strip() for n in args.enabled.split(",") if n.strip()]
    runs: list[dict[str, object]] = []
    for _ in range(args.rounds):
        for chosen in (None, enabled):
            runs.append(build(args.corpus.resolve(), chosen))
    result = {
        "corpus": str(args.corpus),
        "enabled": enabled,
        "runs": runs,
        "median_s": {
            label: _median([float(str(r["seconds"])) for r in runs if r["label"] == label])
            for label in ("all", ",".join(enabled))
        },
    }
    print(json.dumps(result, indent=2))


def build(corpus: Path, enabled: list[str] | None) -> dict[str, object]:
    home = Path(tempfile.mkdtemp(prefix="bench-enabled-"))
    try:
        settings = OFFLINE + (f"strategies:\n  enabled: [{', '.join(enabled)}]\n" if enabled else "")
        (home / "settings.yaml").write_text(settings)
        os.environ["DAGSTER_HOME"] = str(home / "dagster")
        load_before = os.getloadavg()
        started = time.perf_counter()
        index(GraphUnifiedResource(home=str(home), input_dir=str(corpus)), echo=lambda _: None)
        seconds = time.perf_counter() - started
        layout = HomeLayout.at(home)
        return {
            "label": "all" if enabled is None else ",".join(enabled),
            "seconds": round(seconds, 1),
            "global_steps_s": {step: f["seconds"] for step, f in steps_report(home / "dagster").items()},
            "rows": {
                t: read_table(layout.table_path(t)).num_rows for t in (COMMUNITIES, COMMUNITY_REPORTS, FACTS)
            },
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else round((ordered[middle - 1] + ordered[middle]) / 2, 1)


if __name__ == "__main__":
    main()
