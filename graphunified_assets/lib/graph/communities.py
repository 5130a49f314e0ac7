"""Hierarchical Leiden communities over the entity graph, as GraphRAG's `communities` table.

graspologic-native's hierarchical Leiden (the core of graspologic, without its dependencies)
clusters the graph, then splits every community larger than ``max_cluster_size`` into a deeper
level. An update warm-starts from the previous top-level assignment, so communities the change
did not touch come out with the same members, the same content hash, and keep their reports.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import graspologic_native as gn
import pyarrow as pa

from graphunified_query.tables import COMMUNITIES_SCHEMA


@dataclass(frozen=True)
class LeidenParameters:
    max_cluster_size: int
    max_level: int
    resolution: float
    seed: int


@dataclass(frozen=True)
class Community:
    key: tuple[int, int]  # (level, Leiden cluster id) before renumbering
    level: int
    parent_key: tuple[int, int] | None
    entity_ids: tuple[str, ...]


def detect_communities(
    edges: Sequence[tuple[str, str, float]],
    parameters: LeidenParameters,
    *,
    previous_top_level: Mapping[str, int] | None = None,
) -> list[Community]:
    """Communities up to ``max_level``; entities without any relationship belong to none."""
    merged: dict[tuple[str, str], float] = defaultdict(float)
    for source, target, weight in edges:
        if source != target and weight > 0:
            merged[(min(source, target), max(source, target))] += weight
    if not merged:
        return []
    edge_list = [(s, t, w) for (s, t), w in sorted(merged.items())]
    nodes = sorted({n for s, t, _ in edge_list for n in (s, t)})
    clusters = gn.hierarchical_leiden(
        edge_list,
        starting_communities=_warm_start(nodes, previous_top_level),
        resolution=parameters.resolution,
        max_cluster_size=parameters.max_cluster_size,
        seed=parameters.seed,
    )
    members: dict[tuple[int, int], list[str]] = defaultdict(list)
    parents: dict[tuple[int, int], tuple[int, int] | None] = {}
    for entry in clusters:
        if entry.level > parameters.max_level:
            continue
        key = (entry.level, entry.cluster)
        members[key].append(entry.node)
        parent = entry.parent_cluster
        parents[key] = None if parent is None else (entry.level - 1, parent)
    return [
        Community(key, key[0], parents[key], tuple(sorted(ids)))
        for key, ids in sorted(members.items(), key=lambda item: (item[0][0], sorted(item[1])[0]))
    ]


def _warm_start(nodes: list[str], previous: Mapping[str, int] | None) -> dict[str, int] | None:
    """The previous top-level community of each node; new nodes start alone."""
    if not previous:
        return None
    start = {node: previous[node] for node in nodes if node in previous}
    if not start:
        return None
    fresh = max(start.values()) + 1
    for node in nodes:
        if node not in start:
            start[node] = fresh
            fresh += 1
    return start


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
    edges = relationships.select(["id", "source_id", "target_id", "description"]).to_pylist()
    today = date.today().isoformat()
    rows = []
    for c in communities:
        inside = set(c.entity_ids)
        internal = [e for e in edges if e["source_id"] in inside and e["target_id"] in inside]
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


def top_level_assignment(previous: pa.Table | None) -> dict[str, int]:
    """entity id → top-level community number of a previous `communities` table."""
    if previous is None:
        return {}
    assignment: dict[str, int] = {}
    for row in previous.select(["level", "community", "entity_ids"]).to_pylist():
        if row["level"] == 0:
            for entity_id in row["entity_ids"]:
                assignment[entity_id] = row["community"]
    return assignment
