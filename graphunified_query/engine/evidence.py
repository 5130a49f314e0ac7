"""The evidence subgraph of an answer: the entities and relationships behind each numbered context.

Computed only when the request asks for it (``QueryRequest.evidence``): it cost 9-16 ms of CPU per
`/ask` when every answer carried it, and only the web page's graph view draws it.

Derived from what the strategies already return (each context's ``entities``, the entity titles
it is about or mentions) and the snapshot's graph: a context's nodes are its entities and
its edges the relationships between them, so a relationship context is its own edge and a
passage shows how the entities it mentions are related. Numbers are the answer's ``[n]``: the
contexts, then the expanded contexts.

A relationship's description was extracted from all of its supporting chunks, so one over the
request's risk ceiling taints it (as `context.facts` rules for contexts): such an edge is left out
unless the request may see risky content (``show_risky``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from graphunified_query.core.risk import RiskLevel, highest, within
from graphunified_query.snapshot.model import Snapshot


class EvidenceNode(BaseModel):
    id: str = Field(description="the entity's title")
    type: str
    contexts: list[int] = Field(description="numbers (the answer's [n]) of the contexts it is behind")


class EvidenceEdge(BaseModel):
    source: str = Field(description="the source entity's title (a node id)")
    target: str = Field(description="the target entity's title (a node id)")
    type: str
    description: str
    contexts: list[int] = Field(description="numbers (the answer's [n]) of the contexts it is behind")


class Evidence(BaseModel):
    """The entities and relationships behind the contexts (`engine.evidence`)."""

    nodes: list[EvidenceNode] = Field(default_factory=list)
    edges: list[EvidenceEdge] = Field(default_factory=list)


def evidence(
    snapshot: Snapshot,
    contexts: Sequence[Sequence[str]],
    *,
    max_risk_level: RiskLevel,
    show_risky: bool = False,
) -> Evidence:
    """The union over ``contexts`` (each context's entity titles, in citation order) of each
    one's subgraph."""
    nodes: dict[str, EvidenceNode] = {}
    edges: dict[int, EvidenceEdge | None] = {}  # None: over the risk ceiling
    adjacency = snapshot.adjacency
    # Entity rows are the adjacency's first nodes; a mask of a context's own, set and cleared per
    # context, finds the relationships between them by indexing (np.isin per entity took 1 ms).
    own = np.zeros(len(adjacency.starts) - 1, dtype=bool)
    for number, titles in enumerate(contexts, start=1):
        rows = {
            snapshot.entity_by_title[title]: title for title in titles if title in snapshot.entity_by_title
        }
        for row, title in rows.items():
            node = nodes.get(title) or nodes.setdefault(
                title, EvidenceNode(id=title, type=str(snapshot.entities[row]["type"]), contexts=[])
            )
            _add(node.contexts, number)
        marked = list(rows)
        own[marked] = True
        for row in marked:
            span = slice(int(adjacency.starts[row]), int(adjacency.starts[row + 1]))
            for rel_row in adjacency.relationship[span][own[adjacency.neighbour[span]]].tolist():
                if rel_row not in edges:
                    edges[rel_row] = _edge(snapshot, rel_row, None if show_risky else max_risk_level)
                if (edge := edges[rel_row]) is not None:
                    _add(edge.contexts, number)
        own[marked] = False
    return Evidence(nodes=list(nodes.values()), edges=[e for e in edges.values() if e is not None])


def _edge(snapshot: Snapshot, row: int, ceiling: RiskLevel | None) -> EvidenceEdge | None:
    rel = snapshot.relationships[row]
    rows = snapshot.chunk_rows(tuple(rel["text_unit_ids"]))
    if ceiling is not None and not within(highest(snapshot.chunks.risk_level(r) for r in rows), ceiling):
        return None
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
