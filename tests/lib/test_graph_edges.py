"""The graph's edges, built with Arrow kernels: relationships, then mentions, then synonyms."""

from __future__ import annotations

import math

import pyarrow as pa

from graphunified_assets.lib.graph.edges import graph_edges
from graphunified_query.core.tables import GRAPH_EDGES_SCHEMA, SYNONYMS_SCHEMA

ENTITIES = pa.table({"id": ["e1", "e2", "e3"], "text_unit_ids": [["c1", "c2"], [], ["c3"]]})
RELATIONSHIPS = pa.table(
    {"source_id": ["e1", "e2"], "target_id": ["e2", "e3"], "text_unit_ids": [["c1", "c2", "c4"], []]}
)


def test_edges_of_every_kind_with_their_weights_in_order() -> None:
    synonyms = pa.table({"source": ["e1"], "target": ["e3"], "similarity": [0.93]}, schema=SYNONYMS_SCHEMA)
    edges = graph_edges(ENTITIES, RELATIONSHIPS, synonyms)
    assert edges.schema == GRAPH_EDGES_SCHEMA
    assert edges.to_pylist() == [
        {"source": "e1", "target": "e2", "kind": "relationship", "weight": 1.0 + math.log(3)},
        {"source": "e2", "target": "e3", "kind": "relationship", "weight": 1.0},  # no chunk: as one
        {"source": "e1", "target": "c1", "kind": "mention", "weight": 1.0},
        {"source": "e1", "target": "c2", "kind": "mention", "weight": 1.0},
        {"source": "e3", "target": "c3", "kind": "mention", "weight": 1.0},
        {"source": "e1", "target": "e3", "kind": "synonym", "weight": 0.93},
    ]


def test_a_graph_without_relationships_or_synonyms_has_its_mentions() -> None:
    edges = graph_edges(ENTITIES, RELATIONSHIPS.slice(0, 0), SYNONYMS_SCHEMA.empty_table())
    assert edges.column("kind").to_pylist() == ["mention"] * 3
