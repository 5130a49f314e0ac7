"""The documents (or other sources) a materialization could not process: its Dagster metadata,
and for per-document stages their rows in the failures table."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

from graphunified_assets.lib.ingest.index_state import IndexState

MAX_ROWS = 50  # the failures table (`status`) has them all; the UI shows the first ones


def failure_metadata(failed: Mapping[str, str], *, label: str = "document") -> dict[str, dg.MetadataValue]:
    """``failed_<label>s``: the count, and ``failures``: a Markdown table of source and reason."""
    metadata: dict[str, dg.MetadataValue] = {f"failed_{label}s": dg.MetadataValue.int(len(failed))}
    if failed:
        rows = [
            f"| {_cell(source)} | {_cell(reason)} |" for source, reason in sorted(failed.items())[:MAX_ROWS]
        ]
        more = (
            [f"\n{len(failed) - MAX_ROWS} more: `python -m graphunified_assets status`"]
            if len(failed) > MAX_ROWS
            else []
        )
        table = "\n".join([f"| {label} | reason |", "|---|---|", *rows, *more])
        metadata["failures"] = dg.MetadataValue.md(table)
    return metadata


def record_failures(
    context: dg.AssetExecutionContext, state: IndexState, stage: str, failed: Mapping[str, str], *, what: str
) -> None:
    """Failed documents into the failures table under ``stage`` (retried by the next `index`), the
    run's other partitions cleared of it, and one warning per failure naming ``what`` failed."""
    state.clear_failures(stage, [k for k in context.partition_keys if k not in failed])
    state.record_failures(stage, failed.items())
    for document_id, reason in failed.items():
        context.log.warning(f"{what} failed for {document_id}, retried by the next index run: {reason}")


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")
