"""Benchmark: how long `index` goes without a word; prints JSON.

    python bench/index_silence.py [--corpus ../shared/eval/musique/corpus.jsonl] [--limit 200]

Indexes the first ``--limit`` passages of a JSONL corpus into a fresh temporary home with
`graphunified index` in a child process (stdout and stderr merged, unbuffered, as a terminal would
show them) and its own empty cache folder (`GRAPHUNIFIED_CACHE_DIR`), timestamps every output line
as it arrives (a ``\\r`` redraw counts as a line) and reports the line count, the longest silence
and the line it ended with, and the wall time. To time another checkout, run it with that
checkout's ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval_data import EVAL_ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=EVAL_ROOT / "musique/corpus.jsonl")
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    if not args.corpus.is_file():
        raise SystemExit(f"error: {args.corpus} not found; pass --corpus FILE.jsonl")
    work = Path(tempfile.mkdtemp(prefix="gu-silence-"))
    try:
        print(json.dumps(run(args.corpus, args.limit, work), indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(corpus: Path, limit: int, work: Path) -> dict[str, Any]:
    (work / "input").mkdir()
    lines = corpus.read_text(encoding="utf-8").splitlines()[:limit]
    (work / "input" / corpus.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    environ = os.environ | {"PYTHONUNBUFFERED": "1", "GRAPHUNIFIED_CACHE_DIR": str(work / "cache")}
    command = [sys.executable, "-m", "graphunified", "index", "--input", str(work / "input")]
    load = [round(os.getloadavg()[0], 2)]
    started = last = time.monotonic()
    longest, ended_by, count = 0.0, "", 0
    with subprocess.Popen(
        [*command, "--home", str(work / "home")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=environ,
    ) as child:
        assert child.stdout is not None
        for raw in child.stdout:
            now = time.monotonic()
            for part in raw.replace(b"\r", b"\n").split(b"\n"):
                if part.strip():
                    if now - last > longest:
                        longest, ended_by = now - last, part.decode(errors="replace")[:160]
                    count, last = count + 1, now
    load.append(round(os.getloadavg()[0], 2))
    return {
        "passages": len(lines),
        "exit_code": child.returncode,
        "lines": count,
        "longest_silence_s": round(longest, 1),
        "silence_ended_by": ended_by,
        "wall_s": round(time.monotonic() - started, 1),
        "load_average": load,
    }


if __name__ == "__main__":
    main()
