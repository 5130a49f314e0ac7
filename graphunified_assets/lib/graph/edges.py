"""The graph's edges in node-id space: relationships, entity–chunk mentions and synonyms."""

from __future__ import annotations

import math

import pyarrow as pa

from graphunified_query.tables import GRAPH_EDGES_SCHEMA


def graph_edges(entities: pa.Table, relationships: pa.Table, synonyms: pa.Table) -> pa.Table:
    """Weights are on one scale (about 1) so no edge kind drowns the others in a random walk:
    a mention is 1, a relationship grows slowly with the chunks that state it, a synonym edge
    is its name similarity."""
    sources: list[str] = []
    targets: list[str] = []
    kinds: list[str] = []
    weights: list[float] = []

    def add(source: str, target: str, kind: str, weight: float) -> None:
        sources.append(source)
        targets.append(target)
        kinds.append(kind)
        weights.append(weight)

    for row in relationships.select(["source_id", "target_id", "text_unit_ids"]).to_pylist():
        add(
            row["source_id"],
            row["target_id"],
            "relationship",
            1.0 + math.log(max(len(row["text_unit_ids"]), 1)),
        )
    for row in entities.select(["id", "text_unit_ids"]).to_pylist():
        for chunk_id in row["text_unit_ids"]:
            add(row["id"], chunk_id, "mention", 1.0)
    for row in synonyms.to_pylist():
        add(row["source"], row["target"], "synonym", row["similarity"])
    return pa.table(
        {"source": sources, "target": targets, "kind": kinds, "weight": weights}, schema=GRAPH_EDGES_SCHEMA
    )
