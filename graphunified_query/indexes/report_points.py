"""Precomputed vectors of the points global search's offline map ranks (a report's summary and
findings), so a query embeds only itself.

Embedding a few selected reports' points per query cost seconds on a loaded machine; the points
only change when their report does, so the index embeds them once (`report_point_vectors`, one
row per point, a report's points contiguous in their order) and the snapshot maps them as one
float32 matrix. A report whose stored points differ from its current ones (or a home built before
the table) is embedded at query time, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

REPORT_POINT_VECTORS = "report_point_vectors"
MAX_POINT_CHARS = 1200


def report_points(report: Mapping[str, Any]) -> list[str]:
    """The texts the offline map ranks: the summary, then each finding as "headline: explanation"
    (whitespace collapsed, capped at ``MAX_POINT_CHARS``)."""
    points = [report["summary"]] if report["summary"] else []
    points += [f"{f['summary']}: {f['explanation']}" for f in report["findings"] or []]
    return [" ".join(p.split())[:MAX_POINT_CHARS] for p in points]


class ReportPoints:
    """The point vectors of every report: ``matrix`` rows, with ``report_ids`` and ``texts`` per row."""

    def __init__(self, report_ids: Sequence[str], texts: Sequence[str], matrix: np.ndarray) -> None:
        if len(report_ids) != len(texts) or len(texts) != matrix.shape[0]:
            raise ValueError(
                f"{REPORT_POINT_VECTORS}: {len(report_ids)} ids, {len(texts)} texts, "
                f"{matrix.shape[0]} vectors"
            )
        self.report_ids = report_ids
        self.texts = texts
        self.matrix = matrix

    @cached_property
    def ranges(self) -> dict[str, tuple[int, int]]:
        """report id → its rows [start, end): built on the first lookup, not at load."""
        found: dict[str, tuple[int, int]] = {}
        for row, report_id in enumerate(self.report_ids):
            start, _ = found.get(report_id, (row, row))
            found[report_id] = (start, row + 1)
        return found

    def vectors(self, report_id: str, texts: Sequence[str]) -> np.ndarray | None:
        """The stored vectors of ``texts`` (the report's current points), or None when the stored
        points are not exactly these (the report changed since, or was never stored)."""
        start, end = self.ranges.get(report_id, (0, 0))
        if end - start != len(texts) or not texts:
            return None
        if list(self.texts[start:end]) != list(texts):
            return None
        return self.matrix[start:end]
