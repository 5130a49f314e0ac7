"""LightRAG's working folder (lightrag-hku 1.5.x, default file storages), declared once.

What LightRAG's own classes read (`lightrag/kg/json_kv_impl.py`, `json_doc_status_impl.py`,
`nano_vector_db_impl.py`, `networkx_impl.py`):

* ``kv_store_<namespace>.json``: one JSON object per key-value namespace (`KV_STORES`).
* ``graph_chunk_entity_relation.graphml``: an undirected graph, nodes keyed by entity name, with
  string attributes (``source_id`` holds chunk ids joined by ``<SEP>``) and a double ``weight``.
* ``vdb_<namespace>.json``: nano-vectordb's file, ``{"embedding_dim", "data": [records],
  "matrix": base64 float32 rows}``; each record also carries LightRAG's own ``vector`` (float16,
  zlib, base64), which its ``get_vectors_by_ids`` reads.

Ids follow LightRAG (``compute_mdhash_id``): ``doc-``/``chunk-`` + md5 of the text, ``ent-`` + md5
of the entity name, ``rel-`` + md5 of source + target names.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

SEP = "<SEP>"  # lightrag.constants.GRAPH_FIELD_SEP
UNKNOWN_SOURCE = "unknown_source"  # LightRAG's file_path when it has none
GRAPH_FILE = "graph_chunk_entity_relation.graphml"
KV_STORES = (  # lightrag.namespace.NameSpace: every kv store a working folder holds
    "full_docs",
    "text_chunks",
    "doc_status",
    "full_entities",
    "full_relations",
    "entity_chunks",
    "relation_chunks",
    "llm_response_cache",
)
VECTOR_STORES = ("chunks", "entities", "relationships")
FILE_MODE = 0o644  # readable by the LightRAG server's user, as LightRAG's own files are
_GRAPHML = "http://graphml.graphdrawing.org/xmlns"
_TYPES = {"weight": "double", "created_at": "long"}  # as networkx types LightRAG's float and int


class LightRAGFormatError(ValueError):
    """The folder is not a LightRAG working folder we can read; the message names the file."""


def mdhash_id(text: str, prefix: str) -> str:
    return prefix + hashlib.md5(text.encode("utf-8")).hexdigest()


def kv_path(folder: Path, namespace: str) -> Path:
    return folder / f"kv_store_{namespace}.json"


def vdb_path(folder: Path, namespace: str) -> Path:
    return folder / f"vdb_{namespace}.json"


def relation_key(source: str, target: str) -> str:
    """lightrag.utils.make_relation_chunk_key: the pair in sorted order."""
    return SEP.join(sorted((source, target)))


def write_file(path: Path, text: str) -> None:
    """Atomically, mode 0644 (a temporary file is created 0600)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LightRAGFormatError(f"{path} is missing; is {path.parent} a LightRAG working folder?") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise LightRAGFormatError(f"{path} is not readable JSON ({error})") from None


def vector_store(records: list[dict[str, Any]], matrix: np.ndarray, dimension: int) -> dict[str, Any]:
    """nano-vectordb's file for ``records`` (with ``__id__``), row i of ``matrix`` being record i's."""
    rows = matrix.astype(np.float32).reshape(-1, dimension)
    data = []
    for record, row in zip(records, rows, strict=True):
        packed = base64.b64encode(zlib.compress(row.astype(np.float16).tobytes())).decode("ascii")
        data.append({**record, "vector": packed})
    return {"embedding_dim": dimension, "data": data, "matrix": base64.b64encode(rows.tobytes()).decode()}


def graphml(nodes: dict[str, dict[str, str]], edges: list[tuple[str, str, dict[str, Any]]]) -> str:
    """GraphML as networkx writes it for LightRAG: string attributes, a double ``weight``."""
    ElementTree.register_namespace("", _GRAPHML)
    root = ElementTree.Element(f"{{{_GRAPHML}}}graphml")
    node_keys = sorted({k for attrs in nodes.values() for k in attrs})
    edge_keys = sorted({k for _, _, attrs in edges for k in attrs})
    ids: dict[tuple[str, str], str] = {}
    for domain, names in (("node", node_keys), ("edge", edge_keys)):
        for name in names:
            key_id = f"d{len(ids)}"
            ids[(domain, name)] = key_id
            kind = _TYPES.get(name, "string")
            ElementTree.SubElement(
                root,
                f"{{{_GRAPHML}}}key",
                {"id": key_id, "for": domain, "attr.name": name, "attr.type": kind},
            )
    graph = ElementTree.SubElement(root, f"{{{_GRAPHML}}}graph", {"edgedefault": "undirected"})
    for name, attrs in nodes.items():
        node = ElementTree.SubElement(graph, f"{{{_GRAPHML}}}node", {"id": name})
        _data(node, "node", attrs, ids)
    for source, target, attrs in edges:
        edge = ElementTree.SubElement(graph, f"{{{_GRAPHML}}}edge", {"source": source, "target": target})
        _data(edge, "edge", attrs, ids)
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _data(element: ElementTree.Element, domain: str, attrs: dict[str, Any], ids: dict[Any, str]) -> None:
    for name, value in attrs.items():
        ElementTree.SubElement(element, f"{{{_GRAPHML}}}data", {"key": ids[(domain, name)]}).text = str(value)


def read_graphml(path: Path) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]]]:
    """Nodes (name -> attributes) and edges (source, target, attributes) of LightRAG's graph."""
    try:
        root = ElementTree.parse(path).getroot()
    except FileNotFoundError:
        raise LightRAGFormatError(f"{path} is missing; is {path.parent} a LightRAG working folder?") from None
    except ElementTree.ParseError as error:
        raise LightRAGFormatError(f"{path} is not readable GraphML ({error})") from None
    names = {k.get("id"): k.get("attr.name") for k in root.iter(f"{{{_GRAPHML}}}key")}

    def attributes(element: ElementTree.Element) -> dict[str, str]:
        return {
            str(names.get(d.get("key"), d.get("key"))): d.text or ""
            for d in element.iter(f"{{{_GRAPHML}}}data")
        }

    nodes = {str(n.get("id")): attributes(n) for n in root.iter(f"{{{_GRAPHML}}}node")}
    edges = [
        (str(e.get("source")), str(e.get("target")), attributes(e)) for e in root.iter(f"{{{_GRAPHML}}}edge")
    ]
    return nodes, edges
