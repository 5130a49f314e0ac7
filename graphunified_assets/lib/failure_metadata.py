"""Dagster metadata for the documents (or other sources) a materialization could not process."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

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


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")
