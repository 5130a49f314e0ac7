"""`export_graphrag`: a data home's tables and embeddings as a Microsoft GraphRAG v3 output folder.

GraphRAG's columns are a prefix of ours, so exporting is mostly dropping our extra columns.
What we leave empty or store typed and GraphRAG fills is derived here: a document's text units,
creation date and record fields, and a text unit's entities and relationships. Ids stay ours
(document ids are input paths, not SHA-512).
The home's vectors go into GraphRAG's LanceDB tables (`vectors.py`), so GraphRAG's local, basic and
DRIFT search find them; every file is mode 0644.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphunified_assets.ops.graphrag_io.schema import graphrag_schema
from graphunified_assets.ops.graphrag_io.vectors import (
    GRAPHRAG_EMBEDDINGS,
    HomeVectors,
    share,
    write_lancedb_tables,
)
from graphunified_query.core.artifacts import (
    CHUNK_VECTORS,
    CHUNKS,
    COMMUNITIES,
    COMMUNITY_REPORTS,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
    VECTOR_TABLES,
)
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.progress import Progress
from graphunified_query.core.stores.parquet import StoreError, read_table, read_tables, write_table_atomic
from graphunified_query.core.tables import CHUNKS_SCHEMA, DOCUMENTS_SCHEMA


@dataclass(frozen=True)
class ExportReport:
    folder: Path
    rows: dict[str, int]
    what: str = "GraphRAG v3 tables"
    vectors: dict[str, int] = field(default_factory=dict)  # GraphRAG's LanceDB tables, rows each

    def summary(self) -> str:
        counts = ", ".join(f"{n} {table}" for table, n in self.rows.items())
        embedded = ", ".join(f"{n} {table}" for table, n in self.vectors.items())
        return f"exported {self.what} to {self.folder}: {counts}" + (
            f"; embeddings: {embedded}" if embedded else ""
        )


def export_graphrag(home: Path, out: Path, progress: Progress | None = None) -> ExportReport:
    """Write ``out/{documents,text_units,entities,...}.parquet``, ``stats.json`` and ``context.json``."""
    layout = HomeLayout.at(home)
    hint = f"python -m graphunified_assets index --home {home}"
    documents = per_document_table(layout, DOCUMENTS, DOCUMENTS_SCHEMA, hint).sort_by("id")
    chunks = per_document_table(layout, CHUNKS, CHUNKS_SCHEMA, hint).sort_by(
        [("document_id", "ascending"), ("chunk_index", "ascending")]
    )
    entities, relationships, communities, reports = (
        read_table(layout.table_path(name), rebuild_hint=hint)
        for name in (ENTITIES, RELATIONSHIPS, COMMUNITIES, COMMUNITY_REPORTS)
    )
    chunk_ids = chunks.column("id").to_pylist()
    by_document = _group(chunks.column("document_id").to_pylist(), chunk_ids)
    documents = _set(documents, "text_unit_ids", [by_document[d] for d in documents.column("id").to_pylist()])
    documents = documents.append_column(
        "creation_date", pa.array([_creation_date(t) for t in documents.column("created_at").to_pylist()])
    ).append_column("raw_data", _raw_data(documents.column("metadata").to_pylist()))
    chunks = _set(chunks, "entity_ids", _mentions(entities, chunk_ids))
    chunks = _set(chunks, "relationship_ids", _mentions(relationships, chunk_ids))
    tables = {
        DOCUMENTS: documents,
        CHUNKS: chunks,
        ENTITIES: entities,
        RELATIONSHIPS: relationships,
        COMMUNITIES: communities,
        COMMUNITY_REPORTS: reports,
    }
    out.mkdir(parents=True, exist_ok=True)
    steps = len(tables) + len(GRAPHRAG_EMBEDDINGS)
    for done, (name, table) in enumerate(tables.items(), 1):
        write_table_atomic(out / f"{name}.parquet", _graphrag_columns(name, table))
        if progress:
            progress(done, steps, name)
    stats = {
        "total_runtime": 0.0,
        "num_documents": documents.num_rows,
        "update_documents": 0,
        "input_load_time": 0.0,
        "workflows": {},
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=4) + "\n", encoding="utf-8")
    (out / "context.json").write_text("{}\n", encoding="utf-8")
    vectors = HomeVectors(layout, hint)
    chunk_matrix = vectors.aligned(CHUNK_VECTORS, chunk_ids)
    embedded = write_lancedb_tables(
        out / "lancedb",
        {
            name: (ids, vectors.aligned(vector_table, ids, chunk_matrix.shape[1]))
            for name, vector_table, ids in (
                ("text_unit_text", CHUNK_VECTORS, chunk_ids),
                ("entity_description", VECTOR_TABLES[ENTITIES], entities.column("id").to_pylist()),
                (
                    "community_full_content",
                    VECTOR_TABLES[COMMUNITY_REPORTS],
                    reports.column("id").to_pylist(),
                ),
            )
        },
    )
    share(out)
    return ExportReport(out, {name: table.num_rows for name, table in tables.items()}, vectors=embedded)


def per_document_table(layout: HomeLayout, table: str, schema: pa.Schema, hint: str) -> pa.Table:
    paths = sorted(layout.partition_dir(table).glob("*.parquet"))
    if not paths:
        raise StoreError(f"{layout.partition_dir(table)} holds no documents; build the index with `{hint}`.")
    return read_tables(paths, schema)


def _graphrag_columns(name: str, table: pa.Table) -> pa.Table:
    schema = graphrag_schema(name)
    if name == DOCUMENTS:  # raw_data is typed by its content, as GraphRAG's pandas writer does
        schema = schema.set(schema.get_field_index("raw_data"), table.schema.field("raw_data"))
    return table.select(schema.names).cast(schema)


def _set(table: pa.Table, column: str, values: pa.Array | list[Any]) -> pa.Table:
    index = table.schema.get_field_index(column)
    array = values if isinstance(values, pa.Array) else pa.array(values, table.schema.field(index).type)
    return table.set_column(index, pa.field(column, array.type), array)


def _group(keys: list[str], values: list[str]) -> defaultdict[str, list[str]]:
    grouped: defaultdict[str, list[str]] = defaultdict(list)
    for key, value in zip(keys, values, strict=True):
        grouped[key].append(value)
    return grouped


def _mentions(table: pa.Table, chunk_ids: list[str]) -> list[list[str]]:
    """Per chunk, the ids of the rows (entities or relationships) that cite it, in table order."""
    cited: defaultdict[str, list[str]] = defaultdict(list)
    for row in table.select(["id", "text_unit_ids"]).to_pylist():
        for chunk_id in row["text_unit_ids"]:
            cited[chunk_id].append(row["id"])
    return [cited[c] for c in chunk_ids]


def _creation_date(created_at: datetime | None) -> str:
    """GraphRAG's creation_date is text; a home indexed before `created_at` existed has none."""
    return created_at.isoformat(timespec="seconds") if created_at is not None else ""


def _raw_data(values: list[list[tuple[str, str]] | None]) -> pa.Array:
    """GraphRAG keeps a record's fields as a struct, or null for plain text files."""
    records = [dict(v) if v else {} for v in values]
    if not any(records):
        return pa.nulls(len(records))
    try:
        array = pa.array([r or None for r in records])
        if _parquet_can_hold(array.type):
            return array
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # fields whose types differ between records
        pass
    return pa.array([json.dumps(r, ensure_ascii=False) if r else None for r in records], pa.string())


def _parquet_can_hold(kind: pa.DataType) -> bool:
    """Parquet has no empty struct, which an empty nested record (``{"tags": {}}``) becomes."""
    if pa.types.is_struct(kind):
        return kind.num_fields > 0 and all(
            _parquet_can_hold(kind.field(i).type) for i in range(kind.num_fields)
        )
    if pa.types.is_list(kind):
        return _parquet_can_hold(kind.value_type)
    return True
