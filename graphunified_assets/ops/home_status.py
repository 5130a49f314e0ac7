"""`status`: what a reader can search right now, what is only parsed, what failed, what comes next.

"Indexed" used to mean "its documents table was written", so right after a crash `status` said
34 documents indexed when nothing was searchable, and 3 when all three failed embedding.
Searchable means present in the published generation readers load; everything is read without
Dagster, so `status` is quick and works on a home whose runs failed.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import lancedb

from graphunified_assets.lib.ingest.chunking import chunking_key
from graphunified_assets.lib.ingest.index_state import Failure, IndexState
from graphunified_assets.lib.ingest.sources import scan_input
from graphunified_assets.lib.ingest.update_plan import UpdatePlan, configured_model, plan_update
from graphunified_query.core.artifacts import CHUNK_EMBEDDINGS, CHUNK_VECTORS, CHUNKS, EXTRACTIONS, MANIFEST
from graphunified_query.core.layout import HomeLayout, refresh_command
from graphunified_query.core.settings.model import load_settings
from graphunified_query.core.stores.errors import storage_problem
from graphunified_query.core.stores.parquet import StoreError
from graphunified_query.core.stores.publication import current
from graphunified_query.core.stores.published_check import published_damage

DOWNSTREAM_TABLES = (CHUNKS, CHUNK_EMBEDDINGS, EXTRACTIONS)  # as the sensor's, without importing Dagster


@dataclass(frozen=True)
class HomeStatus:
    home: Path
    searchable: set[str]
    parsed: set[str]  # the documents table was written for them
    failures: list[Failure]
    generation: str  # "generation 3, published 2026-…", or why there is none
    refresh_pending: bool
    plan: UpdatePlan | None  # what the next `index` does; None when the input folder is missing
    input_dir: Path
    runs: tuple[tuple[str, str, str], ...] = ()  # (run id, job, status) of runs queued or in progress
    disk_problem: str | None = None  # the home's disk refused a write (full): what to do

    def lines(self) -> list[str]:
        failed = {f.source for f in self.failures}
        lines = [
            f"{len(self.searchable)} documents searchable, {len(self.parsed - self.searchable)} parsed but "
            f"not searchable, {len(failed)} failed in {self.home}",
            f"  readers load {self.generation}",
        ]
        lines += [f"  failed [{f.stage}] {f.source}: {f.reason}" for f in self.failures]
        if self.disk_problem:
            lines.append(f"  {self.disk_problem}")
        if self.refresh_pending:
            lines.append("  a global refresh is pending (the last one did not finish): `index` redoes it")
        lines += _run_lines(self.runs)
        if self.plan is None:
            lines.append(f"  next `index`: input folder {self.input_dir} does not exist; pass --input DIR")
        else:
            refresh = self.refresh_pending or self.plan.pending or self.plan.removed or self.unsearchable
            then = "then the global refresh" if refresh else "nothing to refresh"
            lines.append(f"  next `index` of {self.input_dir}: {self.plan.summary()}; {then}")
        return lines

    @property
    def unsearchable(self) -> set[str]:
        """Parsed, not failed, yet in no published index: the next `index` refreshes for them."""
        return self.parsed - self.searchable - {f.source for f in self.failures}


def _run_lines(runs: tuple[tuple[str, str, str], ...]) -> list[str]:
    """What each unfinished Dagster run means for the next `index`, and what to do about it."""
    lines = []
    for run_id, job, status in runs:
        if status in ("QUEUED", "NOT_STARTED"):
            lines.append(
                f"  Dagster run {run_id} ({job}) is queued: `dagster dev` starts it; if it is not running, "
                "the next `index` marks the run failed and does its work"
            )
        else:
            lines.append(
                f"  Dagster run {run_id} ({job}) is {status.lower()}: the next `index` waits for it, or "
                "marks it failed if its process is gone (a killed `dagster dev`); to stop it, terminate it "
                "in the Dagster UI (`make ui`, Runs tab)"
            )
    return lines


def unfinished_runs(layout: HomeLayout) -> tuple[tuple[str, str, str], ...]:
    """(run id, job, status) of runs queued or in progress, read from the home's SQLite run storage
    without Dagster (quick); none when the instance keeps runs elsewhere (Postgres)."""
    path = layout.dagster_home / "history" / "runs.db"
    if not path.exists():
        return ()
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            rows = db.execute(
                "select run_id, pipeline_name, status from runs where status in "
                "('QUEUED', 'NOT_STARTED', 'STARTING', 'STARTED', 'CANCELING') order by create_timestamp"
            ).fetchall()
    except sqlite3.Error:
        return ()
    return tuple((str(a), str(b), str(c)) for a, b, c in rows)


def searchable_documents(layout: HomeLayout, *, checked: bool = False) -> set[str]:
    """The documents readers can find now: those in the published generation's chunk vectors
    (``checked``: see `home_status`)."""
    return _published(layout, checked=checked)[1]


def home_status(
    layout: HomeLayout,
    input_dir: Path,
    *,
    checked: bool = False,
    table_times: Callable[[str], Mapping[str, int]] | None = None,
) -> HomeStatus:
    """``checked``: the caller has just found the published generation whole (`published_damage`)
    or published it, so it is not read again (0.7 s warm, 2 s cold at 12.6K passages: its vector
    indexes are loaded whole). ``table_times``: the per-document tables' file times as the caller
    has just recorded them (`VerifiedFiles.table_times`; default: the folders listed now)."""
    try:
        state, disk = IndexState(layout.index_state), None
    except sqlite3.OperationalError as error:  # a full disk: say so, and read the state without writing
        if (disk := storage_problem(error, layout.home)) is None:
            raise
        state = IndexState(layout.index_state, read_only=True)
    indexed, failures = state.indexed_hashes(), state.failures()
    generation, searchable = _published(layout, checked=checked)
    plan = None
    if input_dir.is_dir():
        scan = scan_input(input_dir, layout.input_scan)
        scanned = {k: d.content_hash for k, d in scan.documents.items()}
        settings = load_settings(layout.home)
        plan = plan_update(
            scanned,
            indexed,
            list(indexed),
            layout=layout,
            downstream_tables=DOWNSTREAM_TABLES,
            chunking=chunking_key(settings.chunking),
            model=configured_model(settings.embedding, os.environ),
            state=state,
            modified=table_times,
        )
    return HomeStatus(
        layout.home,
        searchable,
        set(indexed),
        failures,
        generation,
        layout.refresh_pending.exists(),
        plan,
        input_dir,
        unfinished_runs(layout),
        disk,
    )


def _published(layout: HomeLayout, *, checked: bool) -> tuple[str, set[str]]:
    """The generation readers load and the documents its chunk vectors hold."""
    try:
        generation = current(layout, rebuild_hint=refresh_command(layout.home))
    except StoreError as error:
        return f"nothing: {error}", set()
    if not (layout.lancedb / f"{CHUNK_VECTORS}.lance").exists():
        return "nothing yet: no index was built (run `index`)", set()
    try:
        db = lancedb.connect(str(layout.lancedb))
        version = generation.lance_version(CHUNK_VECTORS)
        table = (
            db.open_table(CHUNK_VECTORS, version=version)
            if version is not None
            else db.open_table(CHUNK_VECTORS)
        )
        # The one column: the whole table is every chunk's text and vector.
        documents = set(table.search().select(["document_id"]).limit(None).to_arrow().column(0).to_pylist())
    except Exception as error:  # lance raises several types for damaged files; `index` repairs them
        return f"a damaged index ({type(error).__name__}: {error}); `index` repairs it", set()
    # What `ask` would fail on (a damaged file, a first refresh killed before its indexes were
    # written): then nothing is searchable, whatever the chunk vectors hold.
    if not checked and (damage := published_damage(layout)) is not None:
        return f"a damaged index ({damage}); `index` repairs it", set()
    if generation.root is None:
        return "the live files (nothing published yet)", documents
    try:
        published_at = json.loads((generation.root / MANIFEST).read_text(encoding="utf-8"))["published_at"]
    except (OSError, ValueError, KeyError):
        published_at = "at an unknown time"
    return f"generation {generation.number}, published {published_at}", documents


def print_status(
    layout: HomeLayout,
    input_dir: Path,
    echo: Callable[[str], None] = print,
    *,
    checked: bool = False,
    table_times: Callable[[str], Mapping[str, int]] | None = None,
) -> None:
    for line in home_status(layout, input_dir, checked=checked, table_times=table_times).lines():
        echo(line)
