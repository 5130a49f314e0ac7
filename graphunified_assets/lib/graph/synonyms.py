"""Synonym edges between entities whose names embed close together (HippoRAG's synonymy).

Only names not seen in the previous run are compared, against every live name: the cost of an
update grows with what changed, not with the corpus (HippoRAG compares all pairs each time).
Edges between two names that were both seen before are carried over unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from graphunified_assets.lib.vectors.neighbours import columns_above, top_columns
from graphunified_query.core.tables import SYNONYMS_SCHEMA

Embed = Callable[[list[str]], np.ndarray]
_BLOCK = 256  # rows of the new-by-all similarity matrix held at once: 76 MB at 74K names


def synonym_edges(
    ids: Sequence[str],
    names: Sequence[str],
    *,
    embed: Embed,
    threshold: float,
    neighbours: int,
    previous: pa.Table | None = None,
    previous_ids: set[str] | None = None,
) -> pa.Table:
    """``previous`` is the last run's table and ``previous_ids`` the entity ids it covered."""
    live = set(ids)
    seen = (previous_ids or set()) & live
    kept: dict[tuple[str, str], float] = {}
    if previous is not None:
        for row in previous.to_pylist():
            if row["source"] in seen and row["target"] in seen:
                kept[(row["source"], row["target"])] = row["similarity"]
    new_rows = [i for i, entity_id in enumerate(ids) if entity_id not in seen]
    if new_rows and len(ids) > 1:
        vectors = np.asarray(embed(list(names)), dtype=np.float32)  # cached: old names cost nothing
        for start in range(0, len(new_rows), _BLOCK):
            block = new_rows[start : start + _BLOCK]
            similarity = vectors[block] @ vectors.T
            similarity[np.arange(len(block)), block] = -1.0  # never one's own synonym
            above = columns_above(similarity, threshold)
            for row, scores, columns in zip(block, similarity, above, strict=True):
                for col in top_columns(scores, columns, neighbours):
                    pair = (min(ids[row], ids[col]), max(ids[row], ids[col]))
                    kept[pair] = max(kept.get(pair, 0.0), float(scores[col]))
    ordered = sorted(kept.items())
    return pa.table(
        {
            "source": [s for (s, _), _ in ordered],
            "target": [t for (_, t), _ in ordered],
            "similarity": [round(v, 6) for _, v in ordered],
        },
        schema=SYNONYMS_SCHEMA,
    )
