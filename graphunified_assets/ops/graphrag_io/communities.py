"""GraphRAG's communities and community reports as our tables.

Each community gets the content hash our pipeline would give it (members, their descriptions,
inner edges), and its report shares that hash with generator "graphrag", so the two stay
paired. v1 folders lack the hierarchy columns; parents are recovered from member containment.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

import pyarrow as pa

from graphunified_assets.lib.graph.communities import community_hash
from graphunified_assets.ops.graphrag_io.convert import integer
from graphunified_query.core.providers import count_tokens
from graphunified_query.core.tables import COMMUNITIES_SCHEMA, COMMUNITY_REPORTS_SCHEMA, text_hash

GENERATOR = "graphrag"


def communities_table(communities: pa.Table, entities: pa.Table, relationships: pa.Table) -> pa.Table:
    """``entities`` and ``relationships`` are our (already converted) tables."""
    rows = communities.to_pylist()
    for row in rows:
        row["community"] = integer(row["community"], -1)
        row["level"] = integer(row["level"], 0)
    parents = _parents(rows)
    children: defaultdict[int, list[int]] = defaultdict(list)
    for number, parent in parents.items():
        if parent != -1:
            children[parent].append(number)
    descriptions = dict(zip(*(entities.column(c).to_pylist() for c in ("id", "description")), strict=True))
    units = dict(zip(*(entities.column(c).to_pylist() for c in ("id", "text_unit_ids")), strict=True))
    edges = {
        e["id"]: e for e in relationships.select(["id", "description", "source_id", "target_id"]).to_pylist()
    }
    out = []
    for row in rows:
        number, members = row["community"], list(row["entity_ids"] or [])
        inside = set(members)
        edge_ids = row.get("relationship_ids")
        if edge_ids is None:  # edges with both ends inside, as GraphRAG lists them
            edge_ids = [k for k, e in edges.items() if e["source_id"] in inside and e["target_id"] in inside]
        internal = [edges[k] for k in edge_ids if k in edges]
        unit_ids = row.get("text_unit_ids")
        out.append(
            {
                "id": str(row["id"]),
                "human_readable_id": integer(row.get("human_readable_id"), number),
                "community": number,
                "level": row["level"],
                "parent": parents[number],
                "children": [integer(c, -1) for c in row.get("children") or children[number]],
                "title": row.get("title") or f"Community {number}",
                "entity_ids": members,
                "relationship_ids": list(edge_ids),
                "text_unit_ids": list(unit_ids) if unit_ids is not None else _units(members, units),
                "period": str(row.get("period") or ""),
                "size": integer(row.get("size"), len(members)),
                "content_hash": community_hash(members, descriptions, internal),
            }
        )
    return pa.Table.from_pylist(out, schema=COMMUNITIES_SCHEMA)


def reports_table(reports: pa.Table, communities: pa.Table) -> pa.Table:
    """``communities`` is our converted table; it supplies what older reports lack."""
    by_number = {c["community"]: c for c in communities.to_pylist()}
    out = []
    for row in reports.to_pylist():
        number = integer(row["community"], -1)
        community = by_number.get(number, {})
        content = row["full_content"] or ""

        out.append(
            {
                "id": str(_or(row.get("id"), hashlib.sha512(content.encode("utf-8")).hexdigest())),
                "human_readable_id": integer(row.get("human_readable_id"), number),
                "community": number,
                "level": integer(row.get("level"), community.get("level", 0)),
                "parent": integer(row.get("parent"), community.get("parent", -1)),
                "children": [integer(c, -1) for c in _or(row.get("children"), community.get("children", []))],
                "title": row["title"] or "",
                "summary": row["summary"] or "",
                "full_content": content,
                "rank": float(_or(row.get("rank"), 0.0)),
                "rating_explanation": _or(row.get("rating_explanation"), ""),
                "findings": _findings(row.get("findings")),
                "full_content_json": _or(row.get("full_content_json"), ""),
                "period": str(_or(row.get("period"), community.get("period", ""))),
                "size": integer(row.get("size"), community.get("size", 0)),
                "content_hash": community.get("content_hash") or text_hash(content),
                "generator": GENERATOR,
                "token_count": count_tokens(content),
            }
        )
    return pa.Table.from_pylist(out, schema=COMMUNITY_REPORTS_SCHEMA)


def _parents(rows: list[dict[str, Any]]) -> dict[int, int]:
    """community -> parent; without a `parent` column, the next level up holding its members."""
    if all(row.get("parent") is not None for row in rows):
        return {row["community"]: integer(row["parent"], -1) for row in rows}
    holder = {(row["level"], e): row["community"] for row in rows for e in row["entity_ids"] or []}
    parents = {}
    for row in rows:
        first = next(iter(row["entity_ids"] or []), None)
        parents[row["community"]] = holder.get((row["level"] - 1, first), -1)
    return parents


def _or(value: Any, fallback: Any) -> Any:
    return fallback if value is None else value


def _units(members: list[str], units: dict[str, list[str]]) -> list[str]:
    return sorted({u for e in members for u in units.get(e) or []})


def _findings(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str):  # some writers keep the findings as JSON text
        value = json.loads(value) if value.strip() else []
    return [
        {"explanation": str(f.get("explanation") or ""), "summary": str(f.get("summary") or "")}
        for f in value or []
    ]
