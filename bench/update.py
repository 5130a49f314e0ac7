"""Benchmark: what an update of a built home costs: one passage added, then removed; prints JSON.

    python bench/update.py --home H [--rounds 2] [--cold] [--build-seconds S]

Each round writes one passage written for this benchmark (nothing of it is cached anywhere) to
``bench-update.jsonl`` in the home's input folder and runs `python -m graphunified_assets index
--home H` in a child process, then deletes the file and runs `index` again, then runs it once
more with nothing changed. Reported per command: wall and CPU seconds (user + system of the
process tree, from wait4), the largest process's peak RSS, the megabytes it wrote to files, and
the seconds of each step of the runs it made (from the home's event log). ``--cold`` empties the
page cache before each command (root only: what a user who comes back to the home later meets);
``--build-seconds`` (the cold build's wall time) adds each command's share of it. The home is
changed as `index` changes it: run it on a copy. Quote the load averages with any figure; they
are in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from build import steps_report

PASSAGE = {
    "id": "bench-update",
    "title": "Marrowdale Observatory",
    "text": (
        "The Marrowdale Observatory is an astronomical observatory on Carrick Fell in Cumbria, England. "
        "It was founded in 1887 by the engineer Thomas Ashcombe Pryor and the astronomer Eleanor Vance, "
        "who raised the funds through the Kendal Philosophical Society. Its 18-inch refracting telescope "
        "was built by Howard Grubb of Dublin and first used on 4 March 1889 to observe the Orion Nebula. "
        "Vance directed the observatory until 1912, publishing a catalogue of 2,300 variable stars with "
        "the Royal Astronomical Society. The building was damaged by a storm in 1927 and restored in 1931 "
        "with support from Lancaster University's predecessor, the Lancaster Royal Grammar School trust. "
        "Since 1998 it has been run by the Cumbria Astronomical Trust as a public observatory and museum."
    ),
}
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def run_index(home: Path, *, cold: bool) -> dict[str, object]:
    from graphunified_query.core.layout import HomeLayout

    before = _run_ids(HomeLayout.at(home).dagster_home)
    if cold:
        os.sync()
        DROP_CACHES.write_text("3\n")
    load = os.getloadavg()
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "graphunified_assets", "index", "--home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        sys.stderr.write(output[-4000:])
        raise SystemExit(f"bench/update.py: `index --home {home}` failed")
    runs = _run_ids(HomeLayout.at(home).dagster_home) - before
    return {
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "system_seconds": round(usage.ru_stime, 1),
        "peak_process_mb": round(usage.ru_maxrss / 1024, 1),
        # What the process tree wrote to files, cached or not (Linux counts 512-byte units).
        "written_mb": round(usage.ru_oublock * 512 / 1e6, 1),
        "runs": len(runs),
        "steps": {k: v["seconds"] for k, v in steps_report(HomeLayout.at(home).dagster_home, runs).items()},
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def _run_ids(dagster_home: Path) -> set[str]:
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    import dagster as dg

    return {run.run_id for run in dg.DagsterInstance.get().get_runs()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, required=True, help="a built home (a copy: it is updated)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cold", action="store_true", help="empty the page cache before each command")
    parser.add_argument("--build-seconds", type=float, help="the cold build's wall time, for shares")
    args = parser.parse_args()
    from graphunified_query.core.home_input import recorded_input
    from graphunified_query.core.layout import HomeLayout

    folder = recorded_input(HomeLayout.at(args.home))
    if folder is None:
        parser.error(f"--home {args.home} has no recorded input folder (input.json): index it first")
    if args.cold and not os.access(DROP_CACHES, os.W_OK):
        parser.error(f"--cold needs to write {DROP_CACHES} (root)")
    added = folder / "bench-update.jsonl"
    if added.exists():
        parser.error(f"{added} exists: remove it (a stopped run's) and `index` before measuring")
    rounds = []
    try:
        for _ in range(args.rounds):
            added.write_text(json.dumps(PASSAGE) + "\n", encoding="utf-8")
            add = run_index(args.home, cold=args.cold)
            added.unlink()
            remove = run_index(args.home, cold=args.cold)
            rounds.append({"add": add, "remove": remove, "unchanged": run_index(args.home, cold=args.cold)})
    finally:
        added.unlink(missing_ok=True)
    if args.build_seconds:
        for commands in rounds:
            for figures in commands.values():
                figures["share_of_build"] = round(float(figures["wall_seconds"]) / args.build_seconds, 4)
    print(json.dumps({"home": str(args.home), "cold": args.cold, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
