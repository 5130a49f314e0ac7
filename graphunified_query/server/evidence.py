"""The evidence subgraph of an answer: the entities and relationships behind each numbered context.

Derived from what the strategies already return (each context's ``metadata.entities``, the entity
titles it is about or mentions) and the snapshot's graph: a context's nodes are its entities and
its edges the relationships between them, so a relationship context is its own edge and a
passage shows how the entities it mentions are related. Numbers are the answer's ``[n]``: the
contexts, then the expanded contexts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphunified_query.server.models import Evidence, EvidenceEdge, EvidenceNode
from graphunified_query.snapshot.model import Snapshot


def evidence(snapshot: Snapshot, contexts: Sequence[Mapping[str, Any]]) -> Evidence:
    """The union over ``contexts`` (answer dicts, in citation order) of each one's subgraph."""
    nodes: dict[str, EvidenceNode] = {}
    edges: dict[int, EvidenceEdge] = {}
    adjacency = snapshot.adjacency
    for number, context in enumerate(contexts, start=1):
        rows = {
            snapshot.entity_by_title[title]: title
            for title in context.get("metadata", {}).get("entities", ())
            if title in snapshot.entity_by_title
        }
        for row, title in rows.items():
            node = nodes.get(title) or nodes.setdefault(
                title, EvidenceNode(id=title, type=str(snapshot.entities[row]["type"]), contexts=[])
            )
            _add(node.contexts, number)
        ids = {snapshot.entities[row]["id"] for row in rows}
        for row in rows:
            span = adjacency.span(snapshot.entities[row]["id"])
            for neighbour, rel_row in zip(
                adjacency.neighbour[span], adjacency.relationship[span], strict=True
            ):
                if int(neighbour) >= adjacency.entity_count or adjacency.ids[neighbour] not in ids:
                    continue
                edge = edges.get(int(rel_row)) or edges.setdefault(
                    int(rel_row), _edge(snapshot, int(rel_row))
                )
                _add(edge.contexts, number)
    return Evidence(nodes=list(nodes.values()), edges=list(edges.values()))


def _edge(snapshot: Snapshot, row: int) -> EvidenceEdge:
    rel = snapshot.relationships[row]
    return EvidenceEdge(
        source=str(rel["source"]),
        target=str(rel["target"]),
        type=str(rel["type"]),
        description=str(rel["description"]),
        contexts=[],
    )


def _add(numbers: list[int], number: int) -> None:
    if not numbers or numbers[-1] != number:  # contexts are visited in order: no duplicates
        numbers.append(number)
