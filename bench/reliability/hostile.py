"""Hostile and careless input (issue 22), offline: each row damages or stresses a real data home,
recovers with a plain `index` (never `--refresh`), and compares every table with a clean run.

Long ids (a 36-character Chinese file name, seven nested 40-character folders, a 300-character
JSONL id), random bytes in each SQLite file, a garbage or deleted `published/CURRENT`, truncated
LanceDB data, a deleted BM25 file, and a 2 MB Markdown heading line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graphunified_assets.defs.resources import GraphUnifiedResource  # noqa: E402
from graphunified_assets.lib.ingest.index_state import IndexState  # noqa: E402
from graphunified_assets.lib.ingest.markdown_sections import outline  # noqa: E402
from graphunified_assets.ops.indexing import index  # noqa: E402
from graphunified_query.core.layout import HomeLayout  # noqa: E402
from graphunified_query.core.stores.publication import current  # noqa: E402
from graphunified_query.snapshot.loader import load_snapshot  # noqa: E402
from tests.reliability.harness import make_corpus, rows_lost, table_contents  # noqa: E402

Row = dict[str, Any]
LONG_NAMES = {
    "河流泛滥的历史记录" * 4 + ".txt": "The River Harrow flooded Eastfold in 1894.\n",
    "/".join(f"folder{i}-" + "x" * 33 for i in range(7))
    + "/deep.md": "# Deep\n\nMillbrook lies downstream.\n",
}


def run(workdir: Path) -> list[Row]:
    corpus = make_corpus(workdir / "corpus")
    baseline = workdir / "clean"
    _index(baseline, corpus)
    expected = table_contents(baseline)
    damages: dict[str, Callable[[HomeLayout], object]] = {
        "random bytes in cache/extractions.sqlite": lambda h: _garbage(h.extraction_cache),
        "random bytes in cache/embeddings.sqlite": lambda h: _garbage(h.embedding_cache),
        "random bytes in state.sqlite": lambda h: _garbage(h.index_state),
        "garbage published/CURRENT": lambda h: (h.published / "CURRENT").write_text("garbage\n"),
        "deleted published/CURRENT": lambda h: (h.published / "CURRENT").unlink(),
        "truncated LanceDB data (chunk_vectors)": lambda h: _truncate_all(
            h.lancedb / "chunk_vectors.lance" / "data"
        ),
        "deleted published BM25 index": lambda h: shutil.rmtree(_generation(h) / "indexes" / "bm25"),
    }  # fmt: skip
    rows = [_long_ids(workdir / "long-ids", corpus), _long_heading()]
    for name, damage in damages.items():
        home = workdir / re.sub(r"\W+", "-", name).strip("-")
        shutil.copytree(baseline, home, symlinks=True)
        damage(HomeLayout.at(home))
        started = time.perf_counter()
        recovered = _recovers(home, corpus)
        lost = rows_lost(expected, table_contents(home)) if recovered else -1
        rows.append(_row(name, recovered and lost == 0, max(lost, 0), started))
    return rows


def _long_ids(home: Path, corpus: Path) -> Row:
    folder = home.parent / "long-corpus"
    shutil.copytree(corpus, folder, dirs_exist_ok=True)
    for rel, text in LONG_NAMES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    record = {"id": "r" * 300, "text": "Thomas Hale sold wool in Millbrook."}
    (folder / "records.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    started = time.perf_counter()
    recovered = _recovers(home, folder)
    indexed = set(IndexState(HomeLayout.at(home).index_state).indexed_hashes())
    wanted = {*LONG_NAMES, f"records.jsonl#{'r' * 300}"}
    return _row(
        "long Chinese name, deep folders, 300-character JSONL id", recovered, len(wanted - indexed), started
    )


def _long_heading() -> Row:
    started = time.perf_counter()
    outline("# " + "word " * 400_000)
    seconds = time.perf_counter() - started
    return {"fault": "2 MB Markdown heading line parses", "injected": 1, "recovered": seconds < 1.0,
            "rows_lost": 0, "repeated_llm_calls_after_resume": 0, "seconds": round(seconds, 3)}  # fmt: skip


def _recovers(home: Path, corpus: Path) -> bool:
    try:
        _index(home, corpus)
        load_snapshot(home)
    except Exception as error:  # a scenario that does not recover is a row, not a crashed benchmark
        print(f"{home.name}: {type(error).__name__}: {error}", file=sys.stderr)
        return False
    return True


def _index(home: Path, corpus: Path) -> None:
    index(GraphUnifiedResource(home=str(home), input_dir=str(corpus)), echo=lambda _: None)


def _row(name: str, recovered: bool, lost: int, started: float) -> Row:
    seconds = round(time.perf_counter() - started, 1)
    return {"fault": name, "injected": 1, "recovered": recovered, "rows_lost": lost,
            "repeated_llm_calls_after_resume": 0, "seconds": seconds}  # fmt: skip


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(8192))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def _truncate_all(folder: Path) -> None:
    for path in folder.iterdir():
        with path.open("r+b") as handle:
            handle.truncate(path.stat().st_size // 2)


def _generation(layout: HomeLayout) -> Path:
    root = current(layout, rebuild_hint="").root
    assert root is not None
    return root
