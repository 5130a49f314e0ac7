"""GraphRAG's documents, text units, entities and relationships as our tables.

Our extra columns are filled the way our pipeline would where the data allows (content
hashes, chunk order, endpoint ids) and with "unknown" markers where it does not (-1 offsets).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from graphunified_assets.lib.risk.detector import assess_chunk_texts
from graphunified_query.core.providers import count_tokens
from graphunified_query.core.settings.model import RiskSettings
from graphunified_query.core.tables import (
    CHUNKS_SCHEMA,
    DOCUMENTS_SCHEMA,
    ENTITIES_SCHEMA,
    RELATIONSHIPS_SCHEMA,
    metadata_entries,
    text_hash,
)

FORMAT = "graphrag"
RELATIONSHIP_TYPE = "RELATED"  # GraphRAG relationships are untyped


def integer(value: Any, fill: int) -> int:
    """pandas writes nullable ints as floats with NaN; both mean "absent" here."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return fill
    return int(value)


_GRAPHRAG_ID = re.compile(r"[0-9a-f]{128}")  # GraphRAG names a document by the SHA-512 of its text


def readable_document_ids(documents: pa.Table, chunks: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Answers cite a document by its id: a document GraphRAG named by a hash takes its title
    (a file name) instead, when no other document has that title or id; its chunks follow."""
    ids = [str(i) for i in documents.column("id").to_pylist()]
    titles = documents.column("title").to_pylist()
    taken, counts = set(ids), Counter(titles)
    renamed = {
        i: t
        for i, t in zip(ids, titles, strict=True)
        if _GRAPHRAG_ID.fullmatch(i) and t and counts[t] == 1 and t not in taken
    }
    if not renamed:
        return documents, chunks
    documents = _replace(documents, "id", [renamed.get(i, i) for i in ids])
    owners = [renamed.get(d, d) if d is not None else None for d in chunks.column("document_id").to_pylist()]
    return documents, _replace(chunks, "document_id", owners)


def _replace(table: pa.Table, column: str, values: list[Any]) -> pa.Table:
    index = table.schema.get_field_index(column)
    return table.set_column(index, pa.field(column, pa.string()), pa.array(values, pa.string()))


def documents_table(documents: pa.Table, chunk_ids: Mapping[str, list[str]]) -> pa.Table:
    rows = []
    for i, d in enumerate(documents.to_pylist()):
        text = d["text"] or ""
        document_id = str(d["id"])
        rows.append(
            {
                "id": document_id,
                "human_readable_id": integer(d.get("human_readable_id"), i),
                "title": d["title"] or document_id,
                "text": text,
                "text_unit_ids": list(chunk_ids.get(document_id, [])),
                "created_at": _timestamp(d.get("creation_date")),
                "metadata": metadata_entries(_fields(d.get("raw_data"))),
                "filename": d["title"] or document_id,  # GraphRAG titles a document by its file name
                "source_path": d["title"] or document_id,
                "format": FORMAT,
                "content_hash": text_hash(text),
                "sections": "[]",
            }
        )
    return pa.Table.from_pylist(rows, schema=DOCUMENTS_SCHEMA)


def chunks_table(chunks: pa.Table, document_ids: set[str]) -> tuple[pa.Table, int]:
    """Our text units, numbered in file order within each document; also the count of chunks
    whose document is not in the documents table (they are left out)."""
    rows = []
    seen: Counter[str] = Counter()
    for i, c in enumerate(chunks.to_pylist()):
        document_id = c["document_id"]
        if document_id not in document_ids:
            continue
        text = c["text"] or ""
        tokens = integer(c.get("n_tokens"), -1)
        rows.append(
            {
                "id": str(c["id"]),
                "human_readable_id": integer(c.get("human_readable_id"), i),
                "text": text,
                "n_tokens": tokens if tokens >= 0 else count_tokens(text),
                "document_id": document_id,
                "entity_ids": list(c.get("entity_ids") or []),
                "relationship_ids": list(c.get("relationship_ids") or []),
                "covariate_ids": list(c.get("covariate_ids") or []),
                "chunk_index": seen[document_id],
                "start_char": -1,
                "end_char": -1,
                "section": "",
                "text_hash": text_hash(text),
            }
        )
        seen[document_id] += 1
    _flag_risks(rows)
    return pa.Table.from_pylist(rows, schema=CHUNKS_SCHEMA), chunks.num_rows - len(rows)


def _flag_risks(rows: list[dict[str, Any]]) -> None:
    """The risk flags our chunks asset sets, judged per chunk (imports have no offsets) with the
    default risk settings: an imported corpus is filtered like an indexed one."""
    by_document: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_document[row["document_id"]].append(row)
    for document_id, chunk_rows in by_document.items():
        risks = assess_chunk_texts(document_id, [r["text"] for r in chunk_rows], RiskSettings())
        for row, risk in zip(chunk_rows, risks, strict=True):
            row["risk_flags"], row["risk_level"] = list(risk.flags), risk.level


def title_degrees(relationships: pa.Table) -> Counter[str]:
    """Node degree by entity title, as GraphRAG computes `degree` (v1 entities lack it)."""
    degrees: Counter[str] = Counter()
    for row in relationships.select(["source", "target"]).to_pylist():
        degrees[row["source"]] += 1
        degrees[row["target"]] += 1
    return degrees


def entities_table(entities: pa.Table, degrees: Counter[str]) -> pa.Table:
    rows = []
    for i, e in enumerate(entities.to_pylist()):
        units = list(e["text_unit_ids"] or [])
        rows.append(
            {
                "id": str(e["id"]),
                "human_readable_id": integer(e.get("human_readable_id"), i),
                "title": e["title"],
                "type": e.get("type") or "",
                "description": e["description"] or "",
                "text_unit_ids": units,
                "frequency": integer(e.get("frequency"), len(units)),
                "degree": integer(e.get("degree"), degrees[e["title"]]),
                "merged_from": [],
            }
        )
    return pa.Table.from_pylist(rows, schema=ENTITIES_SCHEMA)


def relationships_table(
    relationships: pa.Table, entities: pa.Table, degrees: Counter[str]
) -> tuple[pa.Table, int]:
    """Endpoints looked up by title; also the count of relationships naming an unknown title."""
    by_title: dict[str, str] = {}
    for entity in entities.select(["id", "title"]).to_pylist():
        by_title.setdefault(entity["title"], entity["id"])  # v1 may repeat a title with two types
    rows = []
    for i, r in enumerate(relationships.to_pylist()):
        source, target = by_title.get(r["source"]), by_title.get(r["target"])
        if source is None or target is None:
            continue
        rows.append(
            {
                "id": str(r["id"]),
                "human_readable_id": integer(r.get("human_readable_id"), i),
                "source": r["source"],
                "target": r["target"],
                "description": r["description"] or "",
                "weight": _number(r.get("weight"), 1.0),
                "combined_degree": integer(
                    r.get("combined_degree"), degrees[r["source"]] + degrees[r["target"]]
                ),
                "text_unit_ids": list(r["text_unit_ids"] or []),
                "source_id": source,
                "target_id": target,
                "type": RELATIONSHIP_TYPE,
                "keywords": list(r.get("keywords") or []),  # GraphRAG has none; LightRAG's edges do
            }
        )
    return pa.Table.from_pylist(rows, schema=RELATIONSHIPS_SCHEMA), relationships.num_rows - len(rows)


def chunk_ids_by_document(chunks: pa.Table) -> dict[str, list[str]]:
    grouped: defaultdict[str, list[str]] = defaultdict(list)
    for row in chunks.select(["id", "document_id"]).to_pylist():
        grouped[row["document_id"]].append(row["id"])
    return grouped


def _number(value: Any, fill: float) -> float:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return fill
    return float(value)


def _fields(value: Any) -> dict[str, Any]:
    """A record's fields from GraphRAG's raw_data: a struct, a map, a JSON string or null."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"raw_data": value}
    if isinstance(value, list) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        value = dict(value)  # an Arrow map column reads as (key, value) pairs
    return dict(value) if isinstance(value, dict) else {"raw_data": value}


def _timestamp(value: Any) -> datetime | None:
    """GraphRAG's creation_date: a datetime, ISO text or its storage's "%Y-%m-%d %H:%M:%S %z";
    None when absent or unreadable. A time without a zone is taken as UTC."""
    if isinstance(value, str):
        for parse in (datetime.fromisoformat, lambda s: datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f %z")):
            try:
                value = parse(value.strip())
                break
            except ValueError:
                continue
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
