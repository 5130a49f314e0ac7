"""The communities found by `leiden`, as GraphRAG's `communities` table with a content hash each.

The hash covers exactly a report's inputs (members, their descriptions, the edges inside), so a
report is regenerated exactly when it would say something different.

Numbers are stable across updates: a community with the same level and members as one in the
previous table keeps its number; new communities take the numbers no kept one holds, smallest
first. Numbering 0..n-1 afresh on every update shifted the numbers of nearly every community
after the first one a change added or removed (14,800 of 14,996 when one document was added to the
12.6K-passage index), and every report and report-point vector, keyed by community, was
rewritten for it.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import date
from itertools import count

import pyarrow as pa

from graphunified_assets.lib.collector import collector_paused
from graphunified_assets.lib.graph.leiden import Community
from graphunified_query.core.tables import COMMUNITIES_SCHEMA


@collector_paused()  # a dict per relationship and per community row, no cycles
def communities_table(
    communities: Sequence[Community],
    *,
    relationships: pa.Table,
    entity_text_units: Mapping[str, Sequence[str]],
    entity_descriptions: Mapping[str, str],
    previous: pa.Table | None = None,
) -> pa.Table:
    """GraphRAG's columns. A cold build numbers communities 0..n-1 by (level, first member); an
    update (``previous``: the last table) keeps the numbers of unchanged memberships. A community
    whose report inputs did not change keeps its ``period`` too."""
    number = _numbers(communities, previous)
    previous_periods = _previous_periods(previous)
    children: dict[tuple[int, int], list[int]] = defaultdict(list)
    for c in communities:
        if c.parent_key is not None and c.parent_key in number:
            children[c.parent_key].append(number[c.key])
    # Tuples from the columns, and each member's and edge's hashed line encoded once: dicts per
    # relationship and a line per membership took 3.3 s at 12.6K passages, on every update.
    ids, sources, targets, texts = (
        relationships.column(c).to_pylist() for c in ("id", "source_id", "target_id", "description")
    )
    edges_by_source: dict[str, list[tuple[str, str]]] = defaultdict(list)
    edge_lines: dict[str, bytes] = {}
    for edge_id, source, target, text in zip(ids, sources, targets, texts, strict=True):
        edges_by_source[source].append((target, edge_id))
        edge_lines[edge_id] = _edge_line(edge_id, text)
    entity_lines = {e: _entity_line(e, text) for e, text in entity_descriptions.items()}
    today = date.today().isoformat()
    rows = []
    for c in communities:
        inside = set(c.entity_ids)
        internal = sorted(
            e for m in c.entity_ids for target, e in edges_by_source.get(m, ()) if target in inside
        )
        members = sorted(c.entity_ids)
        lines = [entity_lines.get(m) or _entity_line(m, "") for m in members]
        content_hash = hashlib.sha256(b"".join([*lines, *(edge_lines[e] for e in internal)])).hexdigest()
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
                "relationship_ids": internal,
                "text_unit_ids": sorted({u for e in c.entity_ids for u in entity_text_units.get(e, ())}),
                "period": previous_periods.get(content_hash, today),
                "size": len(c.entity_ids),
                "content_hash": content_hash,
            }
        )
    return pa.Table.from_pylist(rows, schema=COMMUNITIES_SCHEMA)


def _membership(level: int, entity_ids: Sequence[str]) -> str:
    return hashlib.sha256("\x1f".join([str(level), *sorted(entity_ids)]).encode()).hexdigest()


def _numbers(communities: Sequence[Community], previous: pa.Table | None) -> dict[tuple[int, int], int]:
    """Each community's number: its previous one when the same level and members were numbered
    before, else the smallest number no kept community holds (in (level, first member) order)."""
    before: dict[str, int] = {}
    if previous is not None:
        columns = (previous.column(c).to_pylist() for c in ("level", "entity_ids", "community"))
        before = {_membership(level, members): n for level, members, n in zip(*columns, strict=True)}
    number: dict[tuple[int, int], int] = {}
    for c in communities:
        kept = before.get(_membership(c.level, c.entity_ids))
        if kept is not None:
            number[c.key] = kept
    taken = set(number.values())
    free = (n for n in count() if n not in taken)
    for c in communities:
        if c.key not in number:
            number[c.key] = next(free)
    return number


def _previous_periods(previous: pa.Table | None) -> dict[str, str]:
    if previous is None:
        return {}
    hashes, periods = previous.column("content_hash").to_pylist(), previous.column("period").to_pylist()
    return dict(zip(hashes, periods, strict=True))


def community_hash(
    entity_ids: Sequence[str], descriptions: Mapping[str, str], internal_edges: Sequence[Mapping[str, str]]
) -> str:
    """Changes exactly when a report's inputs change: members, their descriptions, inner edges."""
    lines = [_entity_line(e, descriptions.get(e, "")) for e in sorted(entity_ids)]
    lines += [
        _edge_line(edge["id"], edge["description"]) for edge in sorted(internal_edges, key=lambda e: e["id"])
    ]
    return hashlib.sha256(b"".join(lines)).hexdigest()


def _entity_line(entity_id: str, description: str) -> bytes:
    return f"E|{entity_id}|{description}\n".encode()


def _edge_line(edge_id: str, description: str) -> bytes:
    return f"R|{edge_id}|{description}\n".encode()
