"""The communities found by `leiden`, as GraphRAG's `communities` table with a content hash each.

The hash covers exactly a report's inputs (members, their descriptions, the edges inside), so a
report is regenerated exactly when it would say something different.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import date

import pyarrow as pa

from graphunified_assets.lib.graph.leiden import Community
from graphunified_query.core.tables import COMMUNITIES_SCHEMA


def communities_table(
    communities: Sequence[Community],
    *,
    relationships: pa.Table,
    entity_text_units: Mapping[str, Sequence[str]],
    entity_descriptions: Mapping[str, str],
    previous_periods: Mapping[str, str] | None = None,
) -> pa.Table:
    """GraphRAG's columns; communities are numbered 0..n-1 by (level, first member)."""
    number = {c.key: i for i, c in enumerate(communities)}
    children: dict[tuple[int, int], list[int]] = defaultdict(list)
    for c in communities:
        if c.parent_key is not None and c.parent_key in number:
            children[c.parent_key].append(number[c.key])
    edges_by_source: dict[str, list[dict[str, str]]] = defaultdict(list)
    for edge in relationships.select(["id", "source_id", "target_id", "description"]).to_pylist():
        edges_by_source[edge["source_id"]].append(edge)
    today = date.today().isoformat()
    rows = []
    for c in communities:
        inside = set(c.entity_ids)
        internal = [e for m in c.entity_ids for e in edges_by_source.get(m, ()) if e["target_id"] in inside]
        content_hash = community_hash(c.entity_ids, entity_descriptions, internal)
        rows.append(
            {
                "id": hashlib.sha256(f"{c.level}|{content_hash}".encode()).hexdigest()[:32],
                "human_readable_id": number[c.key],
                "community": number[c.key],
                "level": c.level,
                "parent": number.get(c.parent_key, -1) if c.parent_key is not None else -1,
                "children": sorted(children[c.key]),
                "title": f"Community {number[c.key]}",
                "entity_ids": list(c.entity_ids),
                "relationship_ids": sorted(e["id"] for e in internal),
                "text_unit_ids": sorted({u for e in c.entity_ids for u in entity_text_units.get(e, ())}),
                "period": (previous_periods or {}).get(content_hash, today),
                "size": len(c.entity_ids),
                "content_hash": content_hash,
            }
        )
    return pa.Table.from_pylist(rows, schema=COMMUNITIES_SCHEMA)


def community_hash(
    entity_ids: Sequence[str], descriptions: Mapping[str, str], internal_edges: Sequence[Mapping[str, str]]
) -> str:
    """Changes exactly when a report's inputs change: members, their descriptions, inner edges."""
    digest = hashlib.sha256()
    for entity_id in sorted(entity_ids):
        digest.update(f"E|{entity_id}|{descriptions.get(entity_id, '')}\n".encode())
    for edge in sorted(internal_edges, key=lambda e: e["id"]):
        digest.update(f"R|{edge['id']}|{edge['description']}\n".encode())
    return digest.hexdigest()
