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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from graphunified_query.core.home_input import recorded_input
from graphunified_query.core.layout import HomeLayout
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


def ensure_index(
    dataset: Dataset, home: Path, *, replace_input: bool = False, echo: Callable[[str], None] | None = None
) -> IndexRun:
    """Copy the corpus into the home's input folder and bring the index up to date."""
    input_dir = home / INPUT_FOLDER
    if not replace_input and (foreign := _foreign_input(home)):
        raise ValueError(
            f"--home {home} indexes {foreign}; eval would replace its documents with the corpus of "
            f"{dataset.folder}. Leave out --home (eval builds its own, {default_home(dataset)}), "
            "or pass --replace-input to turn this home into the eval set's"
        )
    input_dir.mkdir(parents=True, exist_ok=True)
    target = input_dir / "corpus.jsonl"
    if not target.exists() or target.read_bytes() != dataset.corpus.read_bytes():
        shutil.copyfile(dataset.corpus, target)
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "graphunified_assets",
            "index",
            "--input",
            str(input_dir),
            "--home",
            str(home),
            *(["--replace-input"] if replace_input else []),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, in order: what the user would see running `index`
        text=True,
    )
    lines: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:  # shown as it comes: indexing a set takes minutes
        lines.append(line)
        if echo:
            echo(line.rstrip("\n"))
    output = "".join(lines)
    seconds = time.perf_counter() - started
    if process.wait() != 0:
        raise RuntimeError(f"indexing {dataset.corpus} into {home} failed:\n{output[-4000:]}")
    reused = "(0 Dagster runs)" in output
    return IndexRun(home, seconds, reused, output)


def _foreign_input(home: Path) -> str | None:
    """What the home indexes when that is not an eval corpus in its own input/ folder, else None."""
    layout = HomeLayout.at(home)
    recorded = recorded_input(layout)
    if recorded is not None:
        return None if recorded == (layout.home / INPUT_FOLDER).resolve() else str(recorded)
    own_corpus = (layout.home / INPUT_FOLDER / "corpus.jsonl").exists()
    # A home indexed before homes recorded their input: eval's own has its corpus in input/.
    return "documents from an unrecorded folder" if layout.index_state.exists() and not own_corpus else None


def passage_id(document_id: str) -> str:
    """Corpus lines are documents ``corpus.jsonl#<id>``; the eval set knows them by ``<id>``."""
    return document_id.split("#", 1)[1] if "#" in document_id else document_id
