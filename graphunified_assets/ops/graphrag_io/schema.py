"""Microsoft GraphRAG's output tables: v3 column order, and the older names v1/v2 used.

Our tables begin with GraphRAG's v3 columns in GraphRAG's order and types (`tables.py`), so a
GraphRAG table is a prefix of ours, except two document columns we store typed and derive
GraphRAG's from: `creation_date` (text) from `created_at`, `raw_data` from `metadata`.
"""

from __future__ import annotations

import pyarrow as pa

from graphunified_query.core.artifacts import (
    CHUNKS,
    COMMUNITIES,
    COMMUNITY_REPORTS,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
)
from graphunified_query.core.tables import (
    CHUNKS_SCHEMA,
    COMMUNITIES_SCHEMA,
    COMMUNITY_REPORTS_SCHEMA,
    DOCUMENTS_SCHEMA,
    ENTITIES_SCHEMA,
    RELATIONSHIPS_SCHEMA,
)

# GraphRAG table name -> (our schema, number of leading columns that are GraphRAG's).
_PREFIXES: dict[str, tuple[pa.Schema, int]] = {
    DOCUMENTS: (DOCUMENTS_SCHEMA, 5),
    CHUNKS: (CHUNKS_SCHEMA, 8),
    ENTITIES: (ENTITIES_SCHEMA, 8),
    RELATIONSHIPS: (RELATIONSHIPS_SCHEMA, 8),
    COMMUNITIES: (COMMUNITIES_SCHEMA, 12),
    COMMUNITY_REPORTS: (COMMUNITY_REPORTS_SCHEMA, 15),
}
GRAPHRAG_TABLES = tuple(_PREFIXES)
# GraphRAG's columns after the prefix that the export derives from ours (`export.py`).
DERIVED: dict[str, tuple[pa.Field, ...]] = {
    DOCUMENTS: (pa.field("creation_date", pa.string()), pa.field("raw_data", pa.string())),
}


def graphrag_schema(table: str) -> pa.Schema:
    """GraphRAG v3's columns of ``table`` with their Arrow types (``raw_data`` typed per export)."""
    schema, width = _PREFIXES[table]
    return pa.schema([*(schema.field(i) for i in range(width)), *DERIVED.get(table, ())])


def file_names(table: str) -> tuple[str, ...]:
    """Where a table may be: v2/v3 name it plainly, v1 prefixed ``create_final_``."""
    return f"{table}.parquet", f"create_final_{table}.parquet"


# Older spellings of a v3 column, tried in order when the v3 name is absent.
ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    DOCUMENTS: {"raw_data": ("metadata", "attributes")},
    CHUNKS: {"document_id": ("document_ids",), "relationship_ids": ("relationships_ids",)},
    COMMUNITY_REPORTS: {"rating_explanation": ("rank_explanation",)},
}

# What an import cannot do without; every other column is derived or defaulted when missing.
REQUIRED: dict[str, tuple[str, ...]] = {
    DOCUMENTS: ("id", "title", "text"),
    CHUNKS: ("id", "text", "document_id"),
    ENTITIES: ("id", "title", "description", "text_unit_ids"),
    RELATIONSHIPS: ("id", "source", "target", "description", "text_unit_ids"),
    COMMUNITIES: ("id", "community", "level", "entity_ids"),
    COMMUNITY_REPORTS: ("community", "title", "summary", "full_content"),
}
