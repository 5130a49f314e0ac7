"""Hierarchical Leiden: deterministic, a consistent hierarchy, and stable under a local change."""

from __future__ import annotations

import pyarrow as pa

from graphunified_assets.lib.graph.communities import (
    LeidenParameters,
    communities_table,
    detect_communities,
    top_level_assignment,
)
from graphunified_query.tables import COMMUNITIES_SCHEMA, RELATIONSHIPS_SCHEMA

PARAMS = LeidenParameters(max_cluster_size=6, max_level=3, resolution=1.0, seed=7)


def _clique(prefix: str, size: int) -> list[tuple[str, str, float]]:
    nodes = [f"{prefix}{i}" for i in range(size)]
    return [(a, b, 1.0) for i, a in enumerate(nodes) for b in nodes[i + 1 :]]


def _graph() -> list[tuple[str, str, float]]:
    # Three groups of ten (two 5-cliques tied by heavy edges each), chained by weak edges: clear
    # top-level communities that exceed max_cluster_size and split into their cliques one level down.
    edges: list[tuple[str, str, float]] = []
    for group in "abc":
        edges += _clique(f"{group}x", 5) + _clique(f"{group}y", 5)
        edges += [(f"{group}x{i}", f"{group}y{j}", 2.0) for i in range(2) for j in range(2)]
    return [*edges, ("ax0", "bx0", 0.1), ("bx1", "cx1", 0.1)]


def _relationships(edges: list[tuple[str, str, float]]) -> pa.Table:
    rows = [
        {
            "id": f"{s}-{t}",
            "human_readable_id": i,
            "source": s,
            "target": t,
            "description": f"{s} knows {t}",
            "weight": w,
            "combined_degree": 2,
            "text_unit_ids": [f"chunk-{s}"],
            "source_id": s,
            "target_id": t,
            "type": "RELATED",
        }
        for i, (s, t, w) in enumerate(edges)
    ]
    return pa.Table.from_pylist(rows, schema=RELATIONSHIPS_SCHEMA)


def _table(edges: list[tuple[str, str, float]], previous: pa.Table | None = None) -> pa.Table:
    found = detect_communities(edges, PARAMS, previous_top_level=top_level_assignment(previous))
    nodes = sorted({n for s, t, _ in edges for n in (s, t)})
    return communities_table(
        found,
        relationships=_relationships(edges),
        entity_text_units={n: [f"chunk-{n}"] for n in nodes},
        entity_descriptions={n: f"entity {n}" for n in nodes},
    )


def test_same_graph_and_seed_give_the_same_communities() -> None:
    first, second = _table(_graph()), _table(list(reversed(_graph())))
    assert first.equals(second)
    assert first.schema == COMMUNITIES_SCHEMA


def test_dense_groups_are_found_and_oversized_ones_split_into_a_consistent_hierarchy() -> None:
    rows = {r["community"]: r for r in _table(_graph()).to_pylist()}
    top = [r for r in rows.values() if r["level"] == 0]
    assert sorted(sorted(r["entity_ids"])[0][0] for r in top) == ["a", "b", "c"]
    assert all(len({e[0] for e in r["entity_ids"]}) == 1 for r in top)  # no group is mixed
    assert sorted(r["size"] for r in top) == [10, 10, 10]
    deeper = [r for r in rows.values() if r["level"] == 1]
    assert sorted(r["size"] for r in deeper) == [5] * 6  # each above max_cluster_size splits in two
    for row in rows.values():
        assert row["size"] == len(row["entity_ids"])
        assert (
            row["human_readable_id"] == row["community"] and row["title"] == f"Community {row['community']}"
        )
        for child in row["children"]:
            assert rows[child]["parent"] == row["community"]
            assert set(rows[child]["entity_ids"]) <= set(row["entity_ids"])
            assert rows[child]["level"] == row["level"] + 1
        if row["parent"] != -1:
            assert row["community"] in rows[row["parent"]]["children"]
        inside = set(row["entity_ids"])
        assert all(r.split("-")[0] in inside and r.split("-")[1] in inside for r in row["relationship_ids"])


def test_a_local_change_keeps_untouched_communities_and_their_hashes() -> None:
    before = _table(_graph())
    grown = [*_graph(), *_clique("d", 3), ("cy2", "d0", 0.1)]
    after = _table(grown, previous=before)
    old = {r["content_hash"] for r in before.to_pylist() if r["entity_ids"][0][0] in "ab"}
    new = {r["content_hash"] for r in after.to_pylist()}
    assert old <= new  # the a- and b- communities, at every level, are byte-for-byte the same
    assert any(r["entity_ids"] == ["d0", "d1", "d2"] for r in after.to_pylist())


def test_a_changed_description_changes_only_its_communities_hash() -> None:
    edges = _graph()
    found = detect_communities(edges, PARAMS)
    nodes = sorted({n for s, t, _ in edges for n in (s, t)})
    common = {"relationships": _relationships(edges), "entity_text_units": {n: [] for n in nodes}}
    before = communities_table(found, entity_descriptions={n: "x" for n in nodes}, **common)
    after = communities_table(found, entity_descriptions={n: "x" for n in nodes} | {"ax3": "y"}, **common)
    changed = [
        b["entity_ids"]
        for b, a in zip(before.to_pylist(), after.to_pylist(), strict=True)
        if b["content_hash"] != a["content_hash"]
    ]
    assert len(changed) == 2 and all("ax3" in members for members in changed)  # its level-0 and level-1


def test_no_relationships_means_no_communities() -> None:
    assert detect_communities([], PARAMS) == []
    assert detect_communities([("a", "a", 1.0)], PARAMS) == []
