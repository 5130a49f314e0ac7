"""Benchmark: a cold build of a corpus, through `python -m graphunified_assets index`; prints JSON.

    python bench/build.py [--corpus ../shared/eval/musique/corpus.jsonl] [--limit 400]
        [--settings settings.yaml] [--keep DIR]

The corpus (JSONL or JSONL.gz, one {id, title, text} per line; its first ``--limit`` passages, 0
for all) is written to a fresh input folder and indexed into a fresh home by the same command a
user runs, in a child process, with no API keys (the offline build). Reported:

- ``wall_seconds``, ``cpu_seconds`` (user + system of the whole process tree, from wait4);
- ``peak_pss_mb``: the largest sum of every tree process's proportional set size (sampled every
  0.2 s from /proc/PID/smaps_rollup: shared pages counted once), and ``peak_process_mb``: the
  largest single process's own peak RSS (VmHWM);
- per step (from the home's Dagster event log): seconds, texts the model embedded, real and
  padded model tokens; per graph vector table its distinct texts;
- ``model_tokens_per_corpus_token``: model tokens (real, and padded) over the corpus's tokens
  (the same WordPiece tokenizer, without [CLS]/[SEP]), and ``padded_per_real``.

Token counts are what the local embedder recorded batch by batch (`core/providers/
embedding_usage.py`), not estimates. Quote `uptime`'s load average with any figure: it is in
the JSON (``load_before``, ``load_after``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "eval" / "musique" / "corpus.jsonl"
_SECRETS = ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "OPENAI_API_KEY")


def read_corpus(path: Path, limit: int) -> list[dict]:
    """The first ``limit`` (0: all) records; a missing file or a bad line is a one-line error."""
    if not path.is_file():
        raise SystemExit(
            f"bench/build.py: corpus {path} does not exist (--corpus: a .jsonl or .jsonl.gz file)"
        )
    opener = gzip.open if path.name.endswith(".gz") else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows.append(
                    {"id": str(row["id"]), "title": str(row.get("title", "")), "text": str(row["text"])}
                )
            except (ValueError, KeyError, TypeError) as error:
                raise SystemExit(
                    f"bench/build.py: {path} line {number}: not an {{id, title, text}} object ({error})"
                ) from None
            if limit and len(rows) >= limit:
                break
    if not rows:
        raise SystemExit(f"bench/build.py: {path} has no passages")
    return rows


class TreeMemory:
    """Samples the process tree under ``pid``: the peak of its summed PSS, and each process's VmHWM."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.pid, self.every = pid, every
        if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):  # CONFIG_PROC_CHILDREN
            raise SystemExit("bench/build.py: no /proc/PID/task/TID/children here to find the tree")
        self.peak_pss_kb = 0
        self.peak_hwm_kb: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for pid in process_tree(self.pid):
                total += _status_kb(f"/proc/{pid}/smaps_rollup", "Pss:")
                hwm = _status_kb(f"/proc/{pid}/status", "VmHWM:")
                self.peak_hwm_kb[pid] = max(self.peak_hwm_kb.get(pid, 0), hwm)
            self.peak_pss_kb = max(self.peak_pss_kb, total)
            self._stop.wait(self.every)


def process_tree(root: int) -> list[int]:
    """``root`` and its descendants, from each thread's ``children`` list (no scan of /proc: the
    sampler ran at ~17 % of a core scanning every process five times a second)."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # it ended
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                    todo.extend(int(child) for child in children.read().split())
            except (OSError, ValueError):
                continue
    return found


def _status_kb(path: str, field: str) -> int:
    try:
        with open(path, encoding="ascii") as lines:
            for line in lines:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass  # the process ended between listing and reading
    return 0


def _events(dagster_home: Path, runs: set[str] | None = None) -> Iterator[tuple[str, object]]:
    """(run id, event log entry) of every step event and materialization in the home's instance
    (of ``runs`` alone, when given)."""
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    import dagster as dg

    instance = dg.DagsterInstance.get()
    kinds = (
        dg.DagsterEventType.STEP_START,
        dg.DagsterEventType.STEP_SUCCESS,
        dg.DagsterEventType.ASSET_MATERIALIZATION,
    )
    for run in instance.get_runs():
        if runs is not None and run.run_id not in runs:
            continue
        for kind in kinds:
            for record in instance.get_records_for_run(run.run_id, of_type=kind, limit=1_000_000).records:
                yield run.run_id, record.event_log_entry


def steps_report(dagster_home: Path, runs: set[str] | None = None) -> dict[str, dict[str, float]]:
    """Per step key, summed over runs (``runs`` alone, when given): seconds, and the embedding
    figures of its metadata."""
    starts: dict[tuple[str, str], float] = {}
    seconds: dict[str, float] = defaultdict(float)
    seen: set[tuple[str, str]] = set()
    figures: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for run_id, entry in sorted(_events(dagster_home, runs), key=lambda item: item[1].timestamp):
        step, event = entry.step_key, entry.dagster_event
        if step is None or event is None:
            continue
        if event.event_type_value == "STEP_START":
            starts[(run_id, step)] = entry.timestamp
        elif event.event_type_value == "STEP_SUCCESS":
            seconds[step] += entry.timestamp - starts.pop((run_id, step), entry.timestamp)
        elif (run_id, step) not in seen:  # a ranged step repeats its metadata per document
            seen.add((run_id, step))
            metadata = event.step_materialization_data.materialization.metadata
            for name, value in metadata.items():
                if name.startswith("embed_") or name.endswith(("texts_embedded", "vectors_texts")):
                    figures[step][name] += float(value.value)
    return {
        step: {"seconds": round(seconds[step], 2), **{k: int(v) for k, v in figures[step].items()}}
        for step in sorted(seconds, key=seconds.__getitem__, reverse=True)
    }


def corpus_tokens(rows: list[dict]) -> int:
    from graphunified_query.core.providers.tokenizer import count_tokens

    return sum(count_tokens(f"{row['title']}\n{row['text']}") for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="JSONL(.gz) of {id, title, text}")
    parser.add_argument("--limit", type=int, default=400, help="first N passages (0: all)")
    parser.add_argument("--settings", type=Path, help="a settings.yaml copied into the home")
    parser.add_argument("--keep", type=Path, help="build here (an empty or new folder) and keep it")
    args = parser.parse_args()
    rows = read_corpus(args.corpus, args.limit)
    if args.settings and not args.settings.is_file():
        parser.error(f"--settings {args.settings} does not exist")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-build-"))
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep} is not empty: a cold build needs an empty folder")
    home, source = work / "home", work / "input"
    source.mkdir(parents=True)
    home.mkdir()
    with (source / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    if args.settings:
        shutil.copyfile(args.settings, home / "settings.yaml")
    environ = {k: v for k, v in os.environ.items() if k not in _SECRETS}
    command = [
        sys.executable,
        "-m",
        "graphunified_assets",
        "index",
        "--home",
        str(home),
        "--input",
        str(source),
    ]
    load_before = os.getloadavg()
    started = time.perf_counter()
    child = subprocess.Popen(
        command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    with TreeMemory(child.pid) as memory:
        assert child.stdout is not None
        output = child.stdout.read()  # until the tree closes it; wait4 then reaps with its rusage
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    wall = time.perf_counter() - started
    if child.returncode:  # the figures so far are still printed: a failure at scale is costly
        sys.stderr.write(output[-4000:])
    from graphunified_query.core.layout import HomeLayout

    steps = steps_report(HomeLayout.at(home).dagster_home)
    real = sum(step.get("embed_tokens", 0) for step in steps.values())
    padded = sum(step.get("embed_padded_tokens", 0) for step in steps.values())
    tokens = corpus_tokens(rows)
    result = {
        "corpus": str(args.corpus),
        "passages": len(rows),
        "corpus_tokens": tokens,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_pss_mb": round(memory.peak_pss_kb / 1024, 1),
        "peak_process_mb": round(max(memory.peak_hwm_kb.values(), default=0) / 1024, 1),
        "processes": len(memory.peak_hwm_kb),
        "model_tokens": real,
        "model_padded_tokens": padded,
        "model_tokens_per_corpus_token": round(real / tokens, 2),
        "padded_tokens_per_corpus_token": round(padded / tokens, 2),
        "padded_per_real": round(padded / real, 4) if real else None,
        "texts_embedded": sum(step.get("embed_texts", 0) for step in steps.values()),
        "steps": steps,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "home": str(home) if args.keep else None,
        "index_exit_code": child.returncode,  # not 0: the figures are those of the steps that finished
    }
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if child.returncode:
        raise SystemExit(f"bench/build.py: the index command failed (exit {child.returncode})")


if __name__ == "__main__":
    main()
