"""Where the shards of a sharded global step put their work until one commit applies it.

A sharded step (`defs/assets/sharded.py`) plans, computes shards in parallel (other processes,
other machines) and commits. Nothing large travels between them through Dagster: the plan and
each shard's rows are files in the home's ``shards/<asset>/<run id>/`` folder, which every worker
shares, written atomically (a temporary name, then a rename). The published tables change only
in the commit, so a failed shard leaves them as they were; the next run's plan removes what a
failed run left here and starts afresh.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

SHARD_ROWS = 4_096  # rows a shard computes at most: a few seconds to a minute of the local model
MAX_SHARDS = 64  # per table: more steps cost more bookkeeping than they save


@dataclass(frozen=True)
class Shard:
    """Rows ``start:stop`` of the rows ``table``'s plan computes (positions in its plan)."""

    table: str
    index: int
    start: int
    stop: int

    @property
    def key(self) -> str:
        """Its Dagster mapping key (letters, digits and underscores)."""
        return f"{self.table}_{self.index}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def split(table: str, rows: int) -> list[Shard]:
    """``rows`` to compute as shards of nearly equal size: their count follows from the data
    (none for no rows; at most ``MAX_SHARDS``)."""
    if rows <= 0:
        return []
    count = min(MAX_SHARDS, math.ceil(rows / SHARD_ROWS))
    bounds = [round(i * rows / count) for i in range(count + 1)]
    return [Shard(table, i, bounds[i], bounds[i + 1]) for i in range(count)]


class Staging:
    """One run's folder under ``root`` (the home's ``shards/<asset>``)."""

    def __init__(self, root: Path, run_id: str) -> None:
        self.root = root
        self.folder = root / run_id

    def begin(self) -> None:
        """An empty folder for this run; what earlier runs left (a failed shard) is removed:
        one run at a time writes a home's global tables."""
        if self.root.is_dir():
            for leftover in self.root.iterdir():
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        self.folder.mkdir(parents=True, exist_ok=True)

    def finish(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def write_plan(self, plan: dict[str, Any]) -> None:
        self._atomic(self.folder / "plan.json", json.dumps(plan).encode())

    def read_plan(self) -> dict[str, Any]:
        path = self.folder / "plan.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: this run's plan is missing; run the refresh again")
        plan: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return plan

    def write_rows(self, shard: Shard, rows: pa.Table) -> None:
        """A shard's rows as an Arrow IPC file (what the commit appends, in shard order)."""
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, rows.schema) as writer:
            writer.write_table(rows)
        self._atomic(self._rows_path(shard.table, shard.index), sink.getvalue().to_pybytes())

    def read_rows(self, table: str, shards: int) -> Iterator[pa.RecordBatch]:
        """The rows of ``table``'s shards 0 .. ``shards`` - 1, in order, a batch at a time.

        Each file is memory-mapped, not read: its pages belong to the page cache, so reading all
        of a table's shards (the commit reads them up to four times) holds no copy of them."""
        for index in range(shards):
            path = self._rows_path(table, index)
            if not path.exists():
                raise FileNotFoundError(
                    f"{path}: shard {index} of {table} wrote nothing; run the refresh again"
                )
            with pa.memory_map(str(path)) as source:  # its batches keep the mapping alive
                rows = ipc.open_file(source).read_all()
            yield from rows.to_batches()

    def read_table(self, table: str, shards: int) -> pa.Table | None:
        """The rows of ``table``'s shards as one table; None when they staged none."""
        batches = [batch for batch in self.read_rows(table, shards) if batch.num_rows]
        return pa.Table.from_batches(batches) if batches else None

    def _rows_path(self, table: str, index: int) -> Path:
        return self.folder / f"{table}.{index}.arrow"

    def _atomic(self, path: Path, data: bytes) -> None:
        partial = path.with_name(f".{path.name}.partial")
        partial.write_bytes(data)
        os.replace(partial, path)
