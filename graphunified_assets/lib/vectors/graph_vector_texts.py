"""What each graph row's vector stands for: its text, per row and per column.

The text is stored beside the vector (a reader shows it) and is what an update compares with the
stored table to find changed rows, so the per-row and the column-wise forms must agree exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.vectors.relationship_vectors import relationship_text
from graphunified_query.core.artifacts import ENTITIES, FACTS, RELATIONSHIPS

# What each row is embedded as: the name carries the match, the description the context.
ROW_TEXTS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    ENTITIES: lambda row: f"{row['title']}: {row['description']}",
    RELATIONSHIPS: relationship_text,
    FACTS: lambda row: row["text"],
}

# The columns each table's text is composed from (`column_texts` reads no others).
TEXT_COLUMNS = {
    ENTITIES: ["title", "description"],
    RELATIONSHIPS: ["source", "type", "target", "description", "keywords"],
    FACTS: ["text"],
}


def column_texts(table: pa.Table, source: str, keyword_weight: float) -> pa.Array:
    """Every row's text, as ``ROW_TEXTS`` and ``relationship_text`` give it per row, composed
    column by column (per row in Python, 316K relationships took 10 s)."""
    if source == FACTS:
        return _shown(table.column("text"))
    if source == ENTITIES:
        return pc.binary_join_element_wise(
            _shown(table.column("title")), _shown(table.column("description")), ": "
        )
    ends = [_shown(table.column(name)) for name in ("source", "type", "target")]
    text = pc.binary_join_element_wise(
        pc.binary_join_element_wise(*ends, " "), _shown(table.column("description")), ": "
    )
    if keyword_weight <= 0:
        return text
    keywords = pc.fill_null(pc.binary_join(table.column("keywords"), ", "), "")
    prefixed = pc.binary_join_element_wise("[", keywords, "] ", text, "")
    return pc.if_else(pc.greater(pc.utf8_length(keywords), 0), prefixed, text)


def _shown(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as an f-string shows it: a missing value reads "None"."""
    return pc.fill_null(column, "None")
