"""The eval set's own data home, indexed through the same Dagster asset graph as any corpus.

The home is derived from the dataset name and its corpus hash, so an unchanged corpus reuses its
index and an edited one gets a fresh home. Indexing runs `python -m graphunified_assets index`
in a child process: the query package never imports Dagster.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from graphunified_query.evaluation.dataset import Dataset

INPUT_FOLDER = "input"


@dataclass(frozen=True)
class IndexRun:
    home: Path
    seconds: float
    reused: bool  # nothing was pending: the existing index was used as it was
    output: str


def default_home(dataset: Dataset, root: Path = Path("data/eval")) -> Path:
    return root / f"{dataset.name}-{dataset.corpus_hash[:12]}"


def ensure_index(dataset: Dataset, home: Path) -> IndexRun:
    """Copy the corpus into the home's input folder and bring the index up to date."""
    input_dir = home / INPUT_FOLDER
    input_dir.mkdir(parents=True, exist_ok=True)
    target = input_dir / "corpus.jsonl"
    if not target.exists() or target.read_bytes() != dataset.corpus.read_bytes():
        shutil.copyfile(dataset.corpus, target)
    started = time.perf_counter()
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphunified_assets",
            "index",
            "--input",
            str(input_dir),
            "--home",
            str(home),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"indexing {dataset.corpus} into {home} failed:\n{process.stderr[-4000:]}")
    reused = "(0 Dagster runs)" in process.stdout
    return IndexRun(home, seconds, reused, process.stdout)


def passage_id(document_id: str) -> str:
    """Corpus lines are documents ``corpus.jsonl#<id>``; the eval set knows them by ``<id>``."""
    return document_id.split("#", 1)[1] if "#" in document_id else document_id
