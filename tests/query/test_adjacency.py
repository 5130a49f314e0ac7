"""The entity adjacency as CSR arrays: the heaviest-first order of a hub with ties, and equality
with the dict of lists it replaced (stored order, heaviest order, weighted degree to the bit)."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pyarrow as pa

from graphunified_query.snapshot.adjacency import Adjacency, build_adjacency
from graphunified_query.snapshot.arrow_rows import ArrowRows


def _entity(identifier: str) -> dict[str, Any]:
    return {"id": identifier, "title": identifier.upper()}


def _rel(source: str, target: str, weight: float) -> dict[str, Any]:
    return {"source_id": source, "target_id": target, "weight": weight}


def _build(entities: list[dict[str, Any]], relationships: list[dict[str, Any]]) -> Adjacency:
    return build_adjacency(entities, relationships, {e["id"]: i for i, e in enumerate(entities)})


def _dict_adjacency(relationships: list[dict[str, Any]]) -> dict[str, list[tuple[str, int]]]:
    """The adjacency as `Snapshot.neighbours` held it before the arrays."""
    adjacency: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for i, r in enumerate(relationships):
        adjacency[r["source_id"]].append((r["target_id"], i))
        adjacency[r["target_id"]].append((r["source_id"], i))
    return dict(adjacency)


def test_a_hub_with_ties_lists_heaviest_first_then_by_neighbour_id_then_row() -> None:
    entities = [_entity(e) for e in ("hub", "d", "b", "a", "c")]
    relationships = [
        _rel("hub", "d", 2.0),  # 0
        _rel("b", "hub", 5.0),  # 1: the hub as target
        _rel("hub", "c", 2.0),  # 2
        _rel("hub", "a", 2.0),  # 3
        _rel("hub", "b", 5.0),  # 4: b again, same weight: row order
        _rel("hub", "ghost", 2.0),  # 5: an endpoint with no entity row
        _rel("hub", "hub", 1.0),  # 6: a self-loop, listed twice as the dict did
    ]
    adjacency = _build(entities, relationships)
    span = adjacency.span("hub")
    pairs = [
        (adjacency.ids[n], r)
        for n, r in zip(adjacency.neighbour[span], adjacency.relationship[span], strict=True)
    ]
    assert pairs == [("b", 1), ("b", 4), ("a", 3), ("c", 2), ("d", 0), ("ghost", 5), ("hub", 6), ("hub", 6)]
    assert adjacency.heaviest_relationships("hub", 3) == [1, 4, 3]
    assert adjacency.pairs("hub") == _dict_adjacency(relationships)["hub"]
    assert adjacency.total_weight("hub") == 2.0 + 5.0 + 2.0 + 2.0 + 5.0 + 2.0 + 1.0 + 1.0
    assert adjacency.node("ghost") == len(entities) and adjacency.pairs("ghost") == [("hub", 5)]
    assert adjacency.span("nobody") == slice(0, 0) and adjacency.total_weight("nobody") == 0.0
    assert adjacency.endpoints(1) == ("b", "hub") and adjacency.endpoint_rows(5) == (0, None)


def test_the_arrays_equal_the_dict_of_lists_on_a_random_graph() -> None:
    rng = random.Random(19)
    names = [f"e{rng.randrange(10**6):06d}" for _ in range(60)]
    entities = [_entity(e) for e in names]
    ends = [*names, "dangling-1", "dangling-2"]
    relationships = [
        _rel(rng.choice(ends), rng.choice(ends), rng.choice([0.1, 0.2, 0.3, 1.0, 2.5]) * rng.choice([1, 3]))
        for _ in range(400)
    ]
    expected = _dict_adjacency(relationships)
    weights = [float(r["weight"]) for r in relationships]
    table = pa.Table.from_pylist(relationships)
    for rows in (relationships, ArrowRows(table)):
        adjacency = build_adjacency(entities, rows, {e["id"]: i for i, e in enumerate(entities)})
        for entity, around in expected.items():
            assert adjacency.pairs(entity) == around
            heaviest = sorted(around, key=lambda n: (-weights[n[1]], n[0]))
            assert adjacency.heaviest_relationships(entity, len(around)) == [r for _, r in heaviest]
            # The same float additions in the same order: equal to the bit, not approximately.
            assert adjacency.total_weight(entity) == sum(weights[r] for _, r in around)
        assert [adjacency.endpoints(i) for i in range(len(relationships))] == [
            (r["source_id"], r["target_id"]) for r in relationships
        ]


def test_a_repeated_entity_id_is_its_last_row_as_in_entity_row() -> None:
    entities = [_entity("a"), _entity("b"), _entity("a")]
    adjacency = _build(entities, [_rel("a", "b", 1.0)])
    assert adjacency.node("a") == 2 and adjacency.endpoint_rows(0) == (2, 1)
    assert adjacency.pairs("b") == [("a", 0)] and adjacency.pairs("a") == [("b", 0)]
