"""The data contract shared by the pipeline and the query side: table names and Arrow schemas.

Column names follow Microsoft GraphRAG's v3 output (``documents``, ``text_units``) so its users
can read our tables; our extra columns come after GraphRAG's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TypeVar

import pyarrow as pa

_strings = pa.list_(pa.string())
_Rows = TypeVar("_Rows", pa.Table, pa.RecordBatch)  # stamped alike: a whole table or one batch
TIMESTAMP = pa.timestamp("us", tz="UTC")
# A document's own fields (a JSONL record's besides id/title/text), the architecture's
# `struct<key: string, value: string>`: text values as they are, others as JSON.
METADATA = pa.map_(pa.string(), pa.string())
# When the asset that owns a table wrote the row (UTC); every table the architecture lists has it.
INDEXED_AT = pa.field("indexed_at", TIMESTAMP)

DOCUMENTS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("human_readable_id", pa.int64()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("text_unit_ids", _strings),
        # ours; GraphRAG's creation_date (text) and raw_data are derived from these on export
        ("created_at", TIMESTAMP),  # the source file's modification time
        ("metadata", METADATA),
        ("filename", pa.string()),  # the source file's name ("notes.jsonl" for each of its records)
        ("source_path", pa.string()),
        ("format", pa.string()),
        ("content_hash", pa.string()),
        ("sections", pa.string()),  # JSON list of {"path": [...], "start": int, "end": int}
        INDEXED_AT,
    ]
)

CHUNKS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("human_readable_id", pa.int64()),
        ("text", pa.string()),
        ("n_tokens", pa.int64()),
        ("document_id", pa.string()),
        ("entity_ids", _strings),
        ("relationship_ids", _strings),
        ("covariate_ids", _strings),
        # ours
        ("chunk_index", pa.int64()),
        ("start_char", pa.int64()),
        ("end_char", pa.int64()),
        ("section", pa.string()),  # heading path "Guide > Install > Linux", "" when none
        ("text_hash", pa.string()),
        ("risk_flags", _strings),  # "name:level", e.g. "prompt_injection:high" (graphunified_query.core.risk)
        ("risk_level", pa.string()),  # the highest flag's level, "low" without flags
        INDEXED_AT,
    ]
)
RISK_COLUMNS = ("risk_flags", "risk_level")


def with_chunk_risk(chunks: pa.Table) -> pa.Table:
    """Chunks with both risk columns filled: rows written before risk flags existed (the columns
    missing, or null where newer files were read together with older ones) read as unflagged."""
    n = chunks.num_rows
    flags = chunks.column("risk_flags").to_pylist() if "risk_flags" in chunks.column_names else [None] * n
    levels = chunks.column("risk_level").to_pylist() if "risk_level" in chunks.column_names else [None] * n
    filled = {
        "risk_flags": pa.array([f or [] for f in flags], _strings),
        "risk_level": pa.array([level or "low" for level in levels], pa.string()),
    }
    for name, column in filled.items():
        if name in chunks.column_names:
            chunks = chunks.set_column(chunks.column_names.index(name), name, column)
        else:
            chunks = chunks.append_column(name, column)
    return chunks


def chunk_embeddings_schema(dimension: int) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("document_id", pa.string()),
            ("vector", pa.list_(pa.float32(), dimension)),
            ("model", pa.string()),
        ]
    )


FAILURES_SCHEMA = pa.schema(
    [
        ("source", pa.string()),  # file (and line) or document id
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("recorded_at", pa.string()),
    ]
)


def text_hash(text: str) -> str:
    """Content address of a text: the key of every cache and the basis of chunk ids."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable_int_id(key: str) -> int:
    """A deterministic non-negative int64 for GraphRAG's human_readable_id column."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:6], "big")


_entity_record = pa.struct([("name", pa.string()), ("type", pa.string()), ("description", pa.string())])
_relationship_record = pa.struct(
    [
        ("source", pa.string()),
        ("target", pa.string()),
        ("type", pa.string()),
        ("description", pa.string()),
        ("strength", pa.float64()),
        ("keywords", pa.list_(pa.string())),  # high-level (thematic) keywords; older rows lack it
    ]
)
_fact_record = pa.struct([("subject", pa.string()), ("predicate", pa.string()), ("object", pa.string())])

# One row per chunk: what the extraction pass found in it, before corpus-wide resolution.
EXTRACTIONS_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("document_id", pa.string()),
        ("extractor", pa.string()),
        ("entities", pa.list_(_entity_record)),
        ("relationships", pa.list_(_relationship_record)),
        ("facts", pa.list_(_fact_record)),
        ("dropped_records", pa.int64()),
    ]
)

ENTITIES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("human_readable_id", pa.int64()),
        ("title", pa.string()),
        ("type", pa.string()),
        ("description", pa.string()),
        ("text_unit_ids", _strings),
        ("frequency", pa.int64()),
        ("degree", pa.int64()),
        # ours
        ("merged_from", _strings),
        INDEXED_AT,
    ]
)

RELATIONSHIPS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("human_readable_id", pa.int64()),
        ("source", pa.string()),  # entity titles, as GraphRAG stores them
        ("target", pa.string()),
        ("description", pa.string()),
        ("weight", pa.float64()),
        ("combined_degree", pa.int64()),
        ("text_unit_ids", _strings),
        # ours
        ("source_id", pa.string()),
        ("target_id", pa.string()),
        ("type", pa.string()),
        # LightRAG's high-level keywords of the relationship, most frequent over its mentions first
        ("keywords", _strings),
        INDEXED_AT,
    ]
)

FACTS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("text", pa.string()),
        ("subject", pa.string()),
        ("predicate", pa.string()),
        ("object", pa.string()),
        ("chunk_ids", _strings),
        ("subject_id", pa.string()),  # resolved entity id, null when the subject is not an entity
        ("object_id", pa.string()),
        INDEXED_AT,
    ]
)


# Every edge the graph retrievers walk, in node-id space: entity ids and chunk ids.
GRAPH_EDGES_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("target", pa.string()),
        ("kind", pa.string()),  # relationship | mention (entity–chunk) | synonym
        ("weight", pa.float64()),
    ]
)

# Entity-name nearest neighbours; kept between runs so only new names are compared.
SYNONYMS_SCHEMA = pa.schema(
    [
        ("source", pa.string()),  # entity ids, source < target
        ("target", pa.string()),
        ("similarity", pa.float64()),
    ]
)

_ints = pa.list_(pa.int64())

COMMUNITIES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("human_readable_id", pa.int64()),
        ("community", pa.int64()),
        ("level", pa.int64()),
        ("parent", pa.int64()),
        ("children", _ints),
        ("title", pa.string()),
        ("entity_ids", _strings),
        ("relationship_ids", _strings),
        ("text_unit_ids", _strings),
        ("period", pa.string()),
        ("size", pa.int64()),
        # ours: hash of the members and their descriptions; a report is rewritten only when it changes
        ("content_hash", pa.string()),
        INDEXED_AT,
    ]
)

_finding = pa.struct([("explanation", pa.string()), ("summary", pa.string())])

COMMUNITY_REPORTS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("human_readable_id", pa.int64()),
        ("community", pa.int64()),
        ("level", pa.int64()),
        ("parent", pa.int64()),
        ("children", _ints),
        ("title", pa.string()),
        ("summary", pa.string()),
        ("full_content", pa.string()),
        ("rank", pa.float64()),
        ("rating_explanation", pa.string()),
        ("findings", pa.list_(_finding)),
        ("full_content_json", pa.string()),
        ("period", pa.string()),
        ("size", pa.int64()),
        # ours
        ("content_hash", pa.string()),
        ("generator", pa.string()),  # "extractive" or "claude:<model>"
        ("token_count", pa.int64()),  # of full_content: what a global search's map step reads
        INDEXED_AT,
    ]
)


def stamp_indexed_at(table: _Rows, at: datetime | None = None) -> _Rows:
    """``table`` with ``indexed_at`` set to ``at`` (now) on the rows that have none: rows an asset
    carries over unchanged (a reused community report) keep the time they were written."""
    if INDEXED_AT.name not in table.column_names:
        return table
    index = table.column_names.index(INDEXED_AT.name)
    now = pa.scalar(at or datetime.now(UTC), TIMESTAMP)
    column = table.column(index)
    filled = column.fill_null(now) if column.null_count else column
    return table.set_column(index, INDEXED_AT, filled.cast(TIMESTAMP))


def metadata_entries(fields: Mapping[str, object]) -> list[tuple[str, str]]:
    """A record's fields as METADATA entries: text as it is, anything else as its JSON."""
    return [
        (str(key), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
        for key, value in fields.items()
    ]


def contextual_text(section: str, text: str) -> str:
    """What a chunk is embedded, keyword-indexed and extracted as: its heading path, then its text.

    A passage's title names what its sentences are about ("She was born in Carrowby" is about the
    title's person); without it those sentences are unanchored for search and extraction alike.
    A chunk that already opens with its (only) heading is left as it is.
    """
    if not section:
        return text
    if " > " not in section and text.lstrip("# \t\n").startswith(section):
        return text
    return f"{section}\n\n{text}"
