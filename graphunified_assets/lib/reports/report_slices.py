"""Which community reports' vectors an update recomputes, keyed by community.

An update re-generates the reports of the communities it touched (342 of 15K when one document
is added to the 12.6K-passage index); every other report keeps its id, text and points. A report
row is compared as (community, id + level + text) and a report's points as (community, id + every
point text in order), so a community whose report or numbering changed is deleted and written
again whole, which keeps a report's points contiguous and in order (the offline map reads them by
community). The comparison is columnar: the stored tables are read without their vectors.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.vectors.lance_slices import SliceChange, plan_change, stored_rows

_FIELD = "\x1f"  # between a row's compared fields
_POINT = "\x1e"  # between a report's point texts


def report_change(db: Any, name: str, reports: pa.Table, texts: pa.Array, model: str) -> SliceChange | None:
    """The reports whose vectors must be recomputed (None: rewrite the table)."""
    stored = stored_rows(db, name, ["id", "community", "level", "text", "model"])
    if stored is None:
        return None
    wanted = _report_value(reports.column("id"), reports.column("level"), texts)
    compared = pa.table(
        {
            "community": stored.column("community"),
            "text": _report_value(stored.column("id"), stored.column("level"), stored.column("text")),
            "model": stored.column("model"),
        }
    )
    return plan_change(reports.column("community"), wanted, compared, key="community", model=model)


def points_change(
    db: Any, name: str, reports: pa.Table, points: list[list[str]], model: str
) -> SliceChange | None:
    """The reports whose point vectors must be recomputed (None: rewrite the table)."""
    stored = stored_rows(db, name, ["id", "community", "point", "text", "model"])
    if stored is None or stored.num_rows == 0:
        return None
    grouped = (
        stored.sort_by([("community", "ascending"), ("point", "ascending")])
        .group_by("community", use_threads=False)
        .aggregate([("id", "first"), ("text", "list"), ("model", "min"), ("model", "max")])
    )
    if not pc.all(pc.equal(grouped.column("model_min"), grouped.column("model_max"))).as_py():
        return None
    compared = pa.table(
        {
            "community": grouped.column("community"),
            "text": _points_value(grouped.column("id_first"), grouped.column("text_list")),
            "model": grouped.column("model_min"),
        }
    )
    # A report without points has no stored rows: compared as absent, it is "computed" (no rows).
    wanted = _points_value(reports.column("id"), pa.array(points, pa.list_(pa.string())))
    return plan_change(reports.column("community"), wanted, compared, key="community", model=model)


def _report_value(ids: Any, levels: Any, texts: Any) -> pa.Array:
    return pc.binary_join_element_wise(ids, pc.cast(levels, pa.string()), texts, _FIELD)


def _points_value(ids: Any, point_lists: Any) -> pa.Array:
    return pc.binary_join_element_wise(ids, pc.binary_join(point_lists, _POINT), _FIELD)
