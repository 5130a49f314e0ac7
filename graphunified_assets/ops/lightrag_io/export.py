"""`export_lightrag`: a data home as a LightRAG working folder its own storage classes load.

Documents, chunks, the graph and their vectors become LightRAG's kv stores, graphml and
nano-vectordb files (`folder.py`). LightRAG's graph is undirected and keyed by entity name, so
entities sharing a title become one node and relationships between the same two entities one
edge (descriptions and keywords joined, weights added); its vectors are ours, so a LightRAG
instance reading the folder must embed queries with the home's model (``embedding_dim`` says
which size).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from graphunified_assets.ops.graphrag_io.export import ExportReport, per_document_table
from graphunified_assets.ops.graphrag_io.vectors import HomeVectors
from graphunified_assets.ops.lightrag_io.folder import (
    GRAPH_FILE,
    SEP,
    json_text,
    kv_path,
    mdhash_id,
    relation_key,
    vdb_path,
    vector_store,
    write_file,
)
from graphunified_assets.ops.lightrag_io.folder import graphml as graphml_text
from graphunified_query.core.artifacts import (
    CHUNK_VECTORS,
    CHUNKS,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
    VECTOR_TABLES,
)
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.progress import Progress
from graphunified_query.core.stores.parquet import read_table
from graphunified_query.core.tables import CHUNKS_SCHEMA, DOCUMENTS_SCHEMA


def export_lightrag(home: Path, out: Path, progress: Progress | None = None) -> ExportReport:
    """Write LightRAG's kv stores, graph and vector stores for the home into ``out``."""
    layout = HomeLayout.at(home)
    hint = f"python -m graphunified_assets index --home {home}"
    documents = per_document_table(layout, DOCUMENTS, DOCUMENTS_SCHEMA, hint).sort_by("id").to_pylist()
    chunks = (
        per_document_table(layout, CHUNKS, CHUNKS_SCHEMA, hint)
        .sort_by([("document_id", "ascending"), ("chunk_index", "ascending")])
        .to_pylist()
    )
    entities, relationships = (
        read_table(layout.table_path(name), rebuild_hint=hint).to_pylist()
        for name in (ENTITIES, RELATIONSHIPS)
    )
    vectors = HomeVectors(layout, hint)
    folder = _Folder(documents, chunks)
    nodes = folder.nodes(entities)
    edges = folder.edges(relationships, nodes)
    chunk_matrix = vectors.aligned(CHUNK_VECTORS, [c["id"] for c in chunks])
    dimension = chunk_matrix.shape[1]
    # Each file and how to make its text, made one at a time: a progress line per file written.
    files: list[tuple[Path, Callable[[], str]]] = [
        (kv_path(out, namespace), partial(json_text, store))
        for namespace, store in folder.kv_stores(nodes, edges).items()
    ]
    graph = {n: node.attributes for n, node in nodes.items()}
    files.append((out / GRAPH_FILE, partial(graphml_text, graph, folder.graph_edges(edges))))
    chunk_store = partial(_store, folder.chunk_records, lambda: chunk_matrix, dimension)
    files.append((vdb_path(out, "chunks"), chunk_store))
    graph_stores: dict[str, tuple[list[_Node | _Edge], str]] = {
        "entities": (list(nodes.values()), VECTOR_TABLES[ENTITIES]),
        "relationships": (list(edges.values()), VECTOR_TABLES[RELATIONSHIPS]),
    }
    for namespace, (cited, vector_table) in graph_stores.items():
        records = partial(lambda cited: [c.record() for c in cited], cited)
        matrix = partial(vectors.aligned, vector_table, [c.first_id for c in cited], dimension)
        files.append((vdb_path(out, namespace), partial(_store, records, matrix, dimension)))
    out.mkdir(parents=True, exist_ok=True)
    for done, (path, text) in enumerate(files, 1):
        write_file(path, text())
        if progress:
            progress(done, len(files), path.name)
    rows = {
        "documents": len(documents),
        "chunks": len(chunks),
        "entities": len(nodes),
        "relations": len(edges),
    }
    return ExportReport(out, rows, "a LightRAG working folder")


def _store(
    records: Callable[[], list[dict[str, Any]]], matrix: Callable[[], np.ndarray], dimension: int
) -> str:
    return json_text(vector_store(records(), matrix(), dimension))


@dataclass
class _Cited:
    """What a node or edge gathers from our rows: descriptions, LightRAG chunk keys, file paths."""

    first_id: str  # our row whose vector LightRAG gets
    descriptions: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@dataclass
class _Node(_Cited):
    name: str = ""
    type: str = "UNKNOWN"

    def record(self) -> dict[str, Any]:
        return {
            "__id__": mdhash_id(self.name, "ent-"),
            "__created_at__": _NOW,
            "entity_name": self.name,
            "entity_type": self.type,
            "content": f"{self.name}\n{self.description}",
            "description": self.description,
            "source_id": SEP.join(self.chunk_ids),
            "file_path": SEP.join(self.paths),
        }

    @property
    def description(self) -> str:
        return "\n".join(self.descriptions)

    @property
    def attributes(self) -> dict[str, Any]:
        return {
            "entity_id": self.name,
            "entity_type": self.type,
            "description": self.description,
            "source_id": SEP.join(self.chunk_ids),
            "file_path": SEP.join(self.paths),
            "created_at": _NOW,
            "truncate": "",
        }


@dataclass
class _Edge(_Cited):
    source: str = ""
    target: str = ""
    weight: float = 0.0
    keywords: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        keywords, description = ", ".join(self.keywords), "\n".join(self.descriptions)
        return {
            "__id__": mdhash_id(self.source + self.target, "rel-"),
            "__created_at__": _NOW,
            "src_id": self.source,
            "tgt_id": self.target,
            "content": f"{keywords}\t{self.source}\n{self.target}\n{description}",
            "keywords": keywords,
            "description": description,
            "weight": self.weight,
            "source_id": SEP.join(self.chunk_ids),
            "file_path": SEP.join(self.paths),
        }


_NOW = int(time.time())  # LightRAG's created_at: seconds since the epoch


class _Folder:
    """Our rows under LightRAG's keys: ``doc-``/``chunk-`` + md5 of the text (a repeated text gets
    ``-2``, ``-3``, … so no row is lost), file paths being our document ids (input paths)."""

    def __init__(self, documents: list[dict[str, Any]], chunks: list[dict[str, Any]]) -> None:
        self.documents, self.chunks = documents, chunks
        self.doc_key = _keys(((d["id"], d["text"]) for d in documents), "doc-")
        self.chunk_key = _keys(((c["id"], c["text"]) for c in chunks), "chunk-")
        self.chunk_document = {c["id"]: c["document_id"] for c in chunks}

    def _cite(self, into: _Cited, chunk_ids: Iterable[str]) -> None:
        for chunk_id in chunk_ids:
            key, path = self.chunk_key.get(chunk_id), self.chunk_document.get(chunk_id)
            if key is not None and key not in into.chunk_ids:
                into.chunk_ids.append(key)
            if path is not None and path not in into.paths:
                into.paths.append(path)

    def nodes(self, entities: list[dict[str, Any]]) -> dict[str, _Node]:
        nodes: dict[str, _Node] = {}
        for entity in entities:
            node = nodes.setdefault(
                entity["title"], _Node(entity["id"], name=entity["title"], type=entity["type"] or "UNKNOWN")
            )
            if entity["description"] and entity["description"] not in node.descriptions:
                node.descriptions.append(entity["description"])
            self._cite(node, entity["text_unit_ids"])
        return nodes

    def edges(self, relationships: list[dict[str, Any]], nodes: dict[str, _Node]) -> dict[str, _Edge]:
        edges: dict[str, _Edge] = {}
        for relationship in relationships:
            source, target = relationship["source"], relationship["target"]
            if source not in nodes or target not in nodes:
                continue
            edge = edges.setdefault(
                relation_key(source, target), _Edge(relationship["id"], source=source, target=target)
            )
            edge.weight += relationship["weight"] or 0.0
            if relationship["description"] and relationship["description"] not in edge.descriptions:
                edge.descriptions.append(relationship["description"])
            edge.keywords += [k for k in relationship.get("keywords") or [] if k not in edge.keywords]
            self._cite(edge, relationship["text_unit_ids"])
        return edges

    def graph_edges(self, edges: dict[str, _Edge]) -> list[tuple[str, str, dict[str, Any]]]:
        out = []
        for edge in edges.values():
            record = edge.record()
            attributes = {
                k: record[k] for k in ("weight", "description", "keywords", "source_id", "file_path")
            }
            out.append((edge.source, edge.target, {**attributes, "created_at": _NOW, "truncate": ""}))
        return out

    def chunk_records(self) -> list[dict[str, Any]]:
        return [
            {
                "__id__": self.chunk_key[c["id"]],
                "__created_at__": _NOW,
                "full_doc_id": self.doc_key[c["document_id"]],
                "content": c["text"],
                "file_path": c["document_id"],
            }
            for c in self.chunks
        ]

    def kv_stores(self, nodes: dict[str, _Node], edges: dict[str, _Edge]) -> dict[str, dict[str, Any]]:
        stamp = datetime.now(UTC).isoformat()
        by_document: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for chunk in self.chunks:
            by_document[chunk["document_id"]].append(chunk)
        documents = {d["id"]: d for d in self.documents}
        doc_of_chunk = {self.chunk_key[c["id"]]: self.doc_key[c["document_id"]] for c in self.chunks}
        names: defaultdict[str, list[str]] = defaultdict(list)
        pairs: defaultdict[str, list[list[str]]] = defaultdict(list)
        for node in nodes.values():
            for doc in dict.fromkeys(doc_of_chunk[k] for k in node.chunk_ids):
                names[doc].append(node.name)
        for edge in edges.values():
            for doc in dict.fromkeys(doc_of_chunk[k] for k in edge.chunk_ids):
                pairs[doc].append([edge.source, edge.target])
        return {
            "full_docs": {
                self.doc_key[i]: {
                    "content": d["text"],
                    "file_path": i,
                    "create_time": _NOW,
                    "update_time": _NOW,
                }
                for i, d in documents.items()
            },
            "text_chunks": {
                self.chunk_key[c["id"]]: {
                    "tokens": c["n_tokens"],
                    "content": c["text"],
                    "full_doc_id": self.doc_key[c["document_id"]],
                    "chunk_order_index": c["chunk_index"],
                    "file_path": c["document_id"],
                    "llm_cache_list": [],
                    "create_time": _NOW,
                    "update_time": _NOW,
                }
                for c in self.chunks
            },
            "doc_status": {
                self.doc_key[i]: {
                    "status": "processed",
                    "content_summary": d["text"][:100],
                    "content_length": len(d["text"]),
                    "content_hash": mdhash_id(d["text"], ""),
                    "file_path": i,
                    "created_at": stamp,
                    "updated_at": stamp,
                    "track_id": "graphunified-export",
                    "chunks_count": len(by_document[i]),
                    "chunks_list": [self.chunk_key[c["id"]] for c in by_document[i]],
                    "metadata": {},
                }
                for i, d in documents.items()
            },
            "full_entities": {doc: {"entity_names": n, "count": len(n)} for doc, n in names.items()},
            "full_relations": {doc: {"relation_pairs": p, "count": len(p)} for doc, p in pairs.items()},
            "entity_chunks": {
                n.name: {"chunk_ids": n.chunk_ids, "count": len(n.chunk_ids)} for n in nodes.values()
            },
            "relation_chunks": {
                key: {"chunk_ids": e.chunk_ids, "count": len(e.chunk_ids)} for key, e in edges.items()
            },
            "llm_response_cache": {},
        }


def _keys(rows: Iterable[tuple[str, str]], prefix: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    taken: set[str] = set()
    for row_id, text in rows:
        key = base = mdhash_id(text, prefix)
        n = 1
        while key in taken:
            n += 1
            key = f"{base}-{n}"
        taken.add(key)
        keys[row_id] = key
    return keys
