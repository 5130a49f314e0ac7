"""Benchmark: the reliability fault matrix; prints JSON.

    python bench/reliability [--workdir DIR] [--only provider|crash|hostile]

Every scenario is actually run: provider faults (429 with retry-after, 500, 529, connection
reset, timeout, truncated and malformed replies, empty completions) at the loopback fake
Anthropic and Voyage servers, and crashes, concurrent rebuilds, reads during a rebuild and a
damaged store against a real data home, and hostile input (long ids, damaged caches, state and
published files, a 2 MB heading line; bench/reliability/hostile.py). Each row says how often
the fault was injected, whether the pipeline recovered, how many rows were lost (must be 0) and
how many LLM calls that had already been answered were made again after resuming (must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]  # the project (and tests.fakes) and the scenario modules

import crash  # noqa: E402
import hostile  # noqa: E402
import provider_faults  # noqa: E402

SCENARIOS = {"provider": provider_faults.run, "crash": crash.run, "hostile": hostile.run}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workdir", type=Path, help="where the scratch homes go (default: a temp folder)")
    parser.add_argument("--only", choices=sorted(SCENARIOS), help="run one group of scenarios")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="graphunified-reliability-") as scratch:
        workdir = (args.workdir or Path(scratch)).resolve()
        print(json.dumps(run(workdir, [args.only] if args.only else list(SCENARIOS)), indent=2))


def run(workdir: Path, groups: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for group in groups:
        folder = workdir / group
        folder.mkdir(parents=True, exist_ok=True)
        rows += [{"group": group, **row} for row in SCENARIOS[group](folder)]
    return {
        "benchmark": "reliability fault matrix",
        "scenarios": rows,
        "totals": {
            "faults_injected": sum(row["injected"] for row in rows),
            "scenarios_recovered": sum(bool(row["recovered"]) for row in rows),
            "scenarios": len(rows),
            "rows_lost": sum(row["rows_lost"] for row in rows),
            "repeated_llm_calls_after_resume": sum(row["repeated_llm_calls_after_resume"] for row in rows),
        },
        "all_recovered_nothing_lost": all(
            row["recovered"] and row["rows_lost"] == 0 and row["repeated_llm_calls_after_resume"] == 0
            for row in rows
        ),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared dev machine",
    }


if __name__ == "__main__":
    main()
