"""Precomputed vectors of the points global search's offline map ranks (a report's summary and
findings), so a query embeds only itself.

Embedding a few selected reports' points per query cost seconds on a loaded machine; the points
only change when their report does, so the index embeds them once (`report_point_vectors`, one
row per point, a report's points contiguous in their order) and the snapshot maps them as one
float32 matrix, looked up by community number (a report's id is a digest of its content, which
communities at two levels can share). A report whose stored points differ from its current ones
(or a home built before the table) is embedded at query time, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_query.core.artifacts import REPORT_POINT_VECTORS

MAX_POINT_CHARS = 1200


def report_points(report: Mapping[str, Any]) -> list[str]:
    """The texts the offline map ranks: the summary, then each finding as "headline: explanation"
    (whitespace collapsed, capped at ``MAX_POINT_CHARS``)."""
    points = [report["summary"]] if report["summary"] else []
    points += [f"{f['summary']}: {f['explanation']}" for f in report["findings"] or []]
    return [" ".join(p.split())[:MAX_POINT_CHARS] for p in points]


def point_count(reports: pa.Table) -> int:
    """How many points ``reports`` (their ``summary`` and ``findings`` columns) have, as
    `report_points` makes them: a non-empty summary, then one per finding."""
    summaries = reports.column("summary")
    with_summary = pc.sum(pc.fill_null(pc.greater(pc.utf8_length(summaries), 0), False)).as_py() or 0
    findings = pc.sum(pc.list_value_length(reports.column("findings"))).as_py() or 0
    return with_summary + findings


class ReportPoints:
    """The point vectors of every report: ``matrix`` rows, with the report's ``communities`` and
    the point ``texts`` per row."""

    def __init__(self, communities: Sequence[int], texts: Sequence[str], matrix: np.ndarray) -> None:
        if len(communities) != len(texts) or len(texts) != matrix.shape[0]:
            raise ValueError(
                f"{REPORT_POINT_VECTORS}: {len(communities)} communities, {len(texts)} texts, "
                f"{matrix.shape[0]} vectors"
            )
        self.communities = communities
        self.texts = texts
        self.matrix = matrix

    @cached_property
    def ranges(self) -> dict[int, tuple[int, int]]:
        """community → its report's rows [start, end): built on the first lookup, not at load."""
        found: dict[int, tuple[int, int]] = {}
        for row, community in enumerate(self.communities):
            start, _ = found.get(community, (row, row))
            found[community] = (start, row + 1)
        return found

    def vectors(self, community: int, texts: Sequence[str]) -> np.ndarray | None:
        """The stored vectors of ``texts`` (the report's current points), or None when the stored
        points are not exactly these (the report changed since, or was never stored)."""
        start, end = self.ranges.get(community, (0, 0))
        if end - start != len(texts) or not texts:
            return None
        if list(self.texts[start:end]) != list(texts):
            return None
        return self.matrix[start:end]
