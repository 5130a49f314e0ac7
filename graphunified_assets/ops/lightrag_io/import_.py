"""`import_lightrag`: a LightRAG working folder as a data home every strategy can query.

The kv stores (documents, chunks) and the graph become GraphRAG-v3-shaped tables, which go
through GraphRAG's import (`graphrag_io.import_tables`): the same conversion, home layout and
index builds. LightRAG's vectors are not read: the home embeds with its own model. A document's
id is its file path when LightRAG knows a unique one (so citations name the file), else LightRAG's
``doc-`` id; LightRAG's undirected edges become relationships from the edge's first node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.graphrag_io.import_ import ImportReport, import_tables
from graphunified_assets.ops.graphrag_io.read import GraphRAGTables
from graphunified_assets.ops.graphrag_io.schema import graphrag_schema
from graphunified_assets.ops.lightrag_io.folder import (
    GRAPH_FILE,
    SEP,
    UNKNOWN_SOURCE,
    LightRAGFormatError,
    kv_path,
    mdhash_id,
    read_graphml,
    read_json,
)
from graphunified_query.core import artifacts

VERSION = "working folder"


def import_lightrag(
    folder: Path, resource: GraphUnifiedResource, *, echo: Callable[[str], None] = print
) -> ImportReport:
    """Import LightRAG's working folder ``folder`` into the fresh home ``resource.home``."""
    return import_tables(read_lightrag(Path(folder)), resource, echo=echo, tool="LightRAG")


def read_lightrag(folder: Path) -> GraphRAGTables:
    if not folder.is_dir():
        raise LightRAGFormatError(f"{folder} is not a folder; pass LightRAG's working_dir")
    full_docs = _object(kv_path(folder, "full_docs"))
    text_chunks = _object(kv_path(folder, "text_chunks"))
    nodes, edges = read_graphml(folder / GRAPH_FILE)
    if not full_docs:
        raise LightRAGFormatError(f"{kv_path(folder, 'full_docs')} holds no documents; nothing to import")
    document_id = _document_ids(full_docs)
    # In document order, each document's chunks in LightRAG's order; a chunk of an unknown
    # document gets no document and is counted as skipped by the conversion.
    ordered = sorted(
        text_chunks.items(),
        key=lambda item: (
            document_id.get(str(item[1].get("full_doc_id")), ""),
            item[1].get("chunk_order_index") or 0,
        ),
    )
    chunks = [
        {
            "id": key,
            "text": c.get("content") or "",
            "n_tokens": c.get("tokens"),
            "document_id": document_id.get(str(c.get("full_doc_id")), ""),
        }
        for key, c in ordered
    ]
    known = set(text_chunks)

    def cited(attributes: dict[str, str]) -> list[str]:
        return [c for c in dict.fromkeys(attributes.get("source_id", "").split(SEP)) if c in known]

    entities = [
        {
            "id": mdhash_id(name, "ent-"),
            "title": name,
            "type": a.get("entity_type") or "",
            "description": _text(a.get("description")),
            "text_unit_ids": cited(a),
        }
        for name, a in nodes.items()
    ]
    relationships = [
        {
            "id": mdhash_id(source + target, "rel-"),
            "source": source,
            "target": target,
            "description": _text(a.get("description")),
            "weight": float(a["weight"]) if a.get("weight") else None,
            "text_unit_ids": cited(a),
            "keywords": [k.strip() for k in a.get("keywords", "").split(",") if k.strip()],
        }
        for source, target, a in edges
    ]
    documents = [
        {"id": document_id[key], "title": document_id[key], "text": d.get("content") or ""}
        for key, d in full_docs.items()
    ]
    tables = {
        artifacts.DOCUMENTS: pa.Table.from_pylist(documents),
        artifacts.CHUNKS: _table(chunks, ("id", "text", "n_tokens", "document_id")),
        artifacts.ENTITIES: _table(entities, ("id", "title", "type", "description", "text_unit_ids")),
        artifacts.RELATIONSHIPS: _table(
            relationships, ("id", "source", "target", "description", "weight", "text_unit_ids", "keywords")
        ),
        # LightRAG builds no communities, so no reports either
        **{
            name: graphrag_schema(name).empty_table()
            for name in (artifacts.COMMUNITIES, artifacts.COMMUNITY_REPORTS)
        },
    }
    return GraphRAGTables(folder, VERSION, tables)


def _object(path: Path) -> dict[str, dict[str, Any]]:
    value = read_json(path)
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise LightRAGFormatError(f"{path}: expected an object of records keyed by id, as LightRAG writes")
    return value


def _document_ids(full_docs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """LightRAG key -> our document id: its file path when that names one document only."""
    paths = Counter(d.get("file_path") for d in full_docs.values())
    ids = {}
    for key, d in full_docs.items():
        path = d.get("file_path")
        usable = isinstance(path, str) and path not in ("", UNKNOWN_SOURCE) and paths[path] == 1
        ids[key] = path if usable and isinstance(path, str) else key
    return ids


def _text(value: str | None) -> str:
    """LightRAG keeps merged descriptions joined by <SEP> in older folders."""
    return (value or "").replace(SEP, "\n")


def _table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pa.Table:
    """Rows with the columns the conversion reads, even when there are none."""
    if rows:
        return pa.Table.from_pylist(rows)
    return pa.table(
        {c: pa.array([], pa.list_(pa.string()) if c.endswith("_ids") else pa.string()) for c in columns}
    )
