"""Per-document Parquet storage: one file per document partition, written atomically.

Assets return one Arrow table covering every partition of the run (a single-run backfill can
hold thousands); this IO manager splits it by document id on write and concatenates the
requested partitions on read, so the same asset code serves 1 document or 10,000.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import PrivateAttr

from graphunified_assets.defs.resources import layout_for_run
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.partition_reads import consolidated_copy, document_files, read_documents
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import write_table_atomic
from graphunified_query.core.tables import stamp_indexed_at

# Schema metadata naming partitions an asset could not produce this run: no file is written for
# them (a stale one is removed), so they stay "incomplete" and the next `index` retries them.
# Without it, a partition key with no rows gets an empty table (a document with nothing in it).
FAILED_PARTITIONS = b"graphunified.failed_partitions"
WRITE_STAGE = "write"  # failures to store one document's file (recorded; the rest of the batch goes on)


def no_rows_failure(table_name: str, layout: HomeLayout) -> dg.Failure:
    """A global step found no document's rows: usually every document failed upstream (a
    provider outage). Says so, and how to find and fix the failures."""
    return dg.Failure(
        f"No document of this run has '{table_name}' data: each failed at an earlier step or was "
        f"not processed. `python -m graphunified_assets status --home {layout.home}` lists the "
        "failures; fix their cause (provider, key, input) and re-run `index`."
    )


def without_partitions(table: pa.Table, keys: Iterable[str]) -> pa.Table:
    """``table`` marked so the IO manager writes nothing for ``keys`` (their rows must be absent)."""
    metadata = dict(table.schema.metadata or {})
    metadata[FAILED_PARTITIONS] = json.dumps(sorted(keys)).encode()
    return table.replace_schema_metadata(metadata)


def _pop_failed(table: pa.Table) -> tuple[pa.Table, set[str]]:
    metadata = dict(table.schema.metadata or {})
    failed = metadata.pop(FAILED_PARTITIONS, None)
    if failed is None:
        return table, set()
    return table.replace_schema_metadata(metadata or None), set(json.loads(failed))


def _split_by(table: pa.Table, column: str) -> dict[str, pa.Table]:
    """One zero-copy slice per value of ``column``: sort once, then cut at each change.

    Filtering the whole table once per document is quadratic: 12.6K documents took ten minutes.
    """
    ordered = table.take(pc.sort_indices(table.column(column)))
    values = ordered.column(column).to_pylist()
    parts: dict[str, pa.Table] = {}
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or values[end] != values[start]:
            parts[values[start]] = ordered.slice(start, end - start)
            start = end
    return parts


class DocumentTablesIOManager(dg.ConfigurableIOManager):
    """Stores per-document tables under ``<home>/tables/<table>/<document>.parquet``."""

    home: str  # the code location's; a step uses its run's (graphunified_assets/ops/run_home.py)

    _layout: HomeLayout | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._layout = layout_for_run(context, self.home)

    @property
    def layout(self) -> HomeLayout:
        return self._layout or HomeLayout.at(self.home)

    def _table(self, context: dg.OutputContext | dg.InputContext) -> tuple[str, str]:
        metadata = context.definition_metadata or {}
        if isinstance(context, dg.InputContext) and context.upstream_output is not None:
            metadata = context.upstream_output.definition_metadata or {}
        return metadata["table"], metadata.get("document_column", "document_id")

    def handle_output(self, context: dg.OutputContext, obj: pa.Table) -> None:
        table_name, column = self._table(context)
        layout = self.layout
        obj, failed = _pop_failed(obj)
        obj = stamp_indexed_at(obj)
        keys = context.asset_partition_keys
        ids = obj.column(column)
        parts = _split_by(obj, column) if len(keys) > 1 else {keys[0]: obj} if keys else {}
        unwritten: dict[str, str] = {}
        for key in keys:
            path = layout.partition_path(table_name, key)
            if key in failed:
                path.unlink(missing_ok=True)  # an older version's rows must not stand in for it
                continue
            try:
                write_table_atomic(path, parts.get(key, obj.schema.empty_table()), durable=False)
            except OSError as error:  # one document's file must not fail the whole batch
                unwritten[key] = f"could not write {path}: {error.strerror or error}"
                path.unlink(missing_ok=True)
        if unwritten and len(unwritten) == len(set(keys) - failed):
            # Nothing could be written (a full disk, a read-only home): the run fails and says why.
            raise dg.Failure(f"{table_name}: {next(iter(unwritten.values()))}; free space or fix the home")
        failed |= set(unwritten)
        state = IndexState(layout.index_state)
        state.clear_failures(WRITE_STAGE, [k for k in keys if k not in failed])
        state.record_failures(WRITE_STAGE, unwritten.items())
        if "content_hash" in obj.column_names:
            # Only after the files are safely on disk does a document count as indexed.
            hashes = dict(zip(ids.to_pylist(), obj.column("content_hash").to_pylist(), strict=True))
            state.mark_indexed({d: h for d, h in hashes.items() if d not in unwritten})
        context.add_output_metadata(
            {
                "rows": dg.MetadataValue.int(obj.num_rows),
                "documents": dg.MetadataValue.int(len(keys) - len(failed & set(keys))),
                "failed_documents": dg.MetadataValue.int(len(failed & set(keys))),
            }
        )

    def load_input(self, context: dg.InputContext) -> pa.Table:
        table_name, column = self._table(context)
        layout = self.layout
        keys = context.asset_partition_keys
        present = document_files(layout, table_name, keys)
        missing = len(keys) - len(present)
        if missing:
            context.log.warning(f"{missing} partition(s) of {table_name} are not materialized; skipping them")
        if not present:
            raise no_rows_failure(table_name, layout)
        # Unchanged documents' rows come from the last whole read's consolidated copy.
        return read_documents(present, column, consolidated_copy(layout.cache, table_name))
