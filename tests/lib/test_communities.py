"""Hierarchical Leiden: deterministic, a consistent hierarchy, and stable under a local change."""

from __future__ import annotations

import dataclasses
import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.graph.communities import CommunityTable, communities_table, community_hash
from graphunified_assets.lib.graph.graph_seen import GraphChanges
from graphunified_assets.lib.graph.leiden import (
    Clustering,
    Community,
    LeidenParameters,
    clustering_table,
    detect_communities,
    parameters_metadata,
    previous_clustering,
    read_clustering,
)
from graphunified_query.core.tables import COMMUNITIES_SCHEMA, RELATIONSHIPS_SCHEMA
from tests.lib.test_weighted_graph import edge_table

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


def _table(
    edges: list[tuple[str, str, float]], previous: Clustering | None = None, before: pa.Table | None = None
) -> pa.Table:
    found, _ = detect_communities(edge_table(edges), PARAMS, previous=previous)
    nodes = sorted({n for s, t, _ in edges for n in (s, t)})
    return communities_table(
        found,
        relationships=_relationships(edges),
        entities=_entities({n: f"entity {n}" for n in nodes}, {n: [f"chunk-{n}"] for n in nodes}),
        previous=before,
    ).table


def _entities(descriptions: dict[str, str | None], units: dict[str, list[str]]) -> pa.Table:
    ids = sorted(descriptions)
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "description": pa.array([descriptions[i] for i in ids], pa.string()),
            "text_unit_ids": pa.array([units.get(i, []) for i in ids], pa.list_(pa.string())),
        }
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
    after = _table(grown, previous=detect_communities(edge_table(_graph()), PARAMS)[1])
    old = {r["content_hash"] for r in before.to_pylist() if r["entity_ids"][0][0] in "ab"}
    new = {r["content_hash"] for r in after.to_pylist()}
    assert old <= new  # the a- and b- communities, at every level, are byte-for-byte the same
    assert any(r["entity_ids"] == ["d0", "d1", "d2"] for r in after.to_pylist())


def _numbers(table: pa.Table) -> dict[tuple[int, tuple[str, ...]], int]:
    return {(r["level"], tuple(r["entity_ids"])): r["community"] for r in table.to_pylist()}


def test_an_update_keeps_the_numbers_of_unchanged_communities_and_numbers_new_ones_after_them() -> None:
    before = _table(_graph())
    grown = [*_graph(), *_clique("0x", 3)]  # a new group whose first member sorts before every other
    after = _table(grown, previous=detect_communities(edge_table(_graph()), PARAMS)[1], before=before)
    old, new = _numbers(before), _numbers(after)
    assert old.keys() < new.keys()  # the old groups are untouched, so their numbers can stay
    assert {key: new[key] for key in old} == old
    assert sorted(n for key, n in new.items() if key not in old) == [len(old)]
    # Numbered afresh (a cold build), the new group comes first and every other number moves.
    assert all(_numbers(_table(grown))[key] == n + 1 for key, n in old.items())
    rows = {r["community"]: r for r in after.to_pylist()}
    for number, row in rows.items():
        assert row["human_readable_id"] == number and row["title"] == f"Community {number}"
        assert all(rows[child]["parent"] == number for child in row["children"])


def test_a_removed_communitys_number_goes_to_the_next_new_one() -> None:
    before = _table(_graph())
    without_c = [e for e in _graph() if not e[0].startswith("c") and not e[1].startswith("c")]
    shrunk = _table(without_c, previous=detect_communities(edge_table(_graph()), PARAMS)[1], before=before)
    freed = sorted(set(_numbers(before).values()) - set(_numbers(shrunk).values()))
    assert freed  # the c group's communities
    regrown = [*without_c, *_clique("0x", 3)]
    after = _table(regrown, previous=detect_communities(edge_table(without_c), PARAMS)[1], before=shrunk)
    new = [n for key, n in _numbers(after).items() if key not in _numbers(shrunk)]
    assert new == freed[: len(new)]


def test_a_changed_description_changes_only_its_communities_hash() -> None:
    edges = _graph()
    found, _ = detect_communities(edge_table(edges), PARAMS)
    nodes = sorted({n for s, t, _ in edges for n in (s, t)})
    relationships = _relationships(edges)
    descriptions: dict[str, str | None] = {n: "x" for n in nodes}
    before = communities_table(found, relationships=relationships, entities=_entities(descriptions, {})).table
    descriptions["ax3"] = "y"
    after = communities_table(found, relationships=relationships, entities=_entities(descriptions, {})).table
    changed = [
        b["entity_ids"]
        for b, a in zip(before.to_pylist(), after.to_pylist(), strict=True)
        if b["content_hash"] != a["content_hash"]
    ]
    assert len(changed) == 2 and all("ax3" in members for members in changed)  # its level-0 and level-1


def test_each_hash_is_community_hash_of_its_members_and_inner_edges() -> None:
    # The GraphRAG importer hashes with `community_hash`: a table hashed another way would make
    # every imported report look stale.
    edges = _graph()
    table = _table(edges)
    relationships = _relationships(edges).to_pylist()
    nodes = sorted({n for s, t, _ in edges for n in (s, t)})
    for row in table.to_pylist():
        inside = set(row["entity_ids"])
        internal = [r for r in relationships if r["source_id"] in inside and r["target_id"] in inside]
        assert row["relationship_ids"] == sorted(r["id"] for r in internal)
        descriptions = {n: f"entity {n}" for n in nodes}
        assert row["content_hash"] == community_hash(row["entity_ids"], descriptions, internal)


def test_no_relationships_means_no_communities() -> None:
    assert detect_communities(edge_table([]), PARAMS)[0] == []
    assert detect_communities(edge_table([("a", "a", 1.0)]), PARAMS)[0] == []


def _planted(groups: int = 40, seed: int = 3) -> list[tuple[str, str, float]]:
    """Groups of 6-30 nodes, dense inside and sparsely tied to each other: a three-level hierarchy."""
    rng = random.Random(seed)
    edges: list[tuple[str, str, float]] = []
    for g in range(groups):
        nodes = [f"g{g}n{i}" for i in range(rng.randint(6, 30))]
        edges += [(a, b, 1.0) for i, a in enumerate(nodes) for b in nodes[i + 1 :] if rng.random() < 0.3]
        edges += [(nodes[0], f"g{rng.randrange(groups)}n0", 0.5) for _ in range(2)]
    return edges


def _member_sets(edges: list[tuple[str, str, float]], previous: Clustering | None = None) -> set[tuple]:
    found, _ = detect_communities(edge_table(edges), PARAMS, previous=previous)
    return {(c.level, c.entity_ids) for c in found}


def test_an_update_re_clusters_only_the_communities_on_the_changes_path() -> None:
    edges = _planted()
    first, clustering = detect_communities(edge_table(edges), PARAMS)
    assert max(c.level for c in first) >= 2 and len(first) > 100
    added = [("new0", "new1", 1.0), ("new1", "new2", 1.0), ("new0", "g5n3", 1.0), ("new2", "g17n2", 1.0)]
    before, after = {(c.level, c.entity_ids) for c in first}, _member_sets([*edges, *added], clustering)
    # hierarchical_leiden (one random stream) or a warm-started Leiden re-split most of them.
    assert len(after - before) <= 8
    assert _member_sets(edges, clustering) == before  # an unchanged graph changes nothing


def test_local_re_clustering_keeps_the_granularity_of_a_cold_build() -> None:
    edges = _planted()
    _, clustering = detect_communities(edge_table(edges), PARAMS)
    grown = [*edges, *_clique("h", 4), ("h0", "g9n1", 1.0), ("h1", "g9n2", 1.0)]
    incremental = sum(level == 0 for level, _ in _member_sets(grown, clustering))
    cold = sum(level == 0 for level, _ in _member_sets(grown))
    assert abs(incremental - cold) <= 2  # the region is not cut finer than the whole graph would be


def test_the_clustering_state_round_trips_and_an_old_schema_means_a_cold_build() -> None:
    _, clustering = detect_communities(edge_table(_planted()), PARAMS)
    assert read_clustering(clustering_table(clustering)) == clustering
    assert read_clustering(pa.table({"entity_id": ["a"]})) is None


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 14), st.integers(0, 14), st.sampled_from([0.5, 1.0, 3.0])), max_size=40
    ),
    st.dictionaries(st.integers(0, 16), st.one_of(st.none(), st.sampled_from(["", "a|b", "é\nx"]))),
    st.dictionaries(st.integers(0, 16), st.lists(st.sampled_from(["c2", "c10", "c1", "ç"]), max_size=3)),
)
def test_each_row_holds_its_members_inner_edges_and_chunks_as_defined(
    pairs: list[tuple[int, int, float]],
    described: dict[int, str | None],
    units: dict[int, list[str]],
) -> None:
    """Whole-column arithmetic gives each community what its definition says: the edges with both
    ends inside sorted by id, the sorted union of its members' chunks, and `community_hash` of
    those (entities missing from the table, null descriptions and self-loops included)."""
    edges = [(f"n{a}", f"n{b}", w) for a, b, w in pairs]
    found, _ = detect_communities(edge_table([e for e in edges if e[0] != e[1]]), PARAMS)
    rows = [
        {"id": f"r{i:02d}", "source_id": s, "target_id": t, "description": f"{s} {t}" if i % 3 else None}
        for i, (s, t, _) in enumerate(edges)
    ]
    relationships = pa.Table.from_pylist(
        rows, schema=pa.schema({c: pa.string() for c in ("id", "source_id", "target_id", "description")})
    )
    descriptions = {f"n{k}": v for k, v in described.items()}
    table = communities_table(
        found,
        relationships=relationships,
        entities=_entities(descriptions, {f"n{k}": v for k, v in units.items()}),
    ).table
    assert table.num_rows == len(found)
    for community, row in zip(found, table.to_pylist(), strict=True):
        inside = set(community.entity_ids)
        internal = sorted(
            (r for r in rows if r["source_id"] in inside and r["target_id"] in inside), key=lambda r: r["id"]
        )
        assert row["entity_ids"] == list(community.entity_ids)
        assert row["relationship_ids"] == [r["id"] for r in internal]
        expected_units = {u for e in inside if e in descriptions for u in units.get(int(e[1:]), [])}
        assert row["text_unit_ids"] == sorted(expected_units)
        known = {e: "" for e in inside} | {e: descriptions[e] for e in inside if e in descriptions}
        assert row["content_hash"] == community_hash(row["entity_ids"], known, internal)


def _edge_rows(edges: dict[tuple[str, str], str]) -> pa.Table:
    ids = sorted(edges)
    return pa.table(
        {
            "id": [f"{s}>{t}" for s, t in ids],
            "source_id": [s for s, _ in ids],
            "target_id": [t for _, t in ids],
            "weight": [1.0] * len(ids),
            "description": [edges[pair] for pair in ids],
        },
        schema=pa.schema(
            {**{c: pa.string() for c in ("id", "source_id", "target_id")}, "weight": pa.float64()}
        ).append(pa.field("description", pa.string())),
    )


@settings(max_examples=40, deadline=None)
@given(
    st.sets(st.tuples(st.integers(0, 19), st.integers(0, 19)).filter(lambda p: p[0] < p[1]), max_size=60),
    st.sets(st.integers(0, 19), max_size=4),  # entities re-described
    st.sets(st.tuples(st.integers(0, 19), st.integers(0, 19)).filter(lambda p: p[0] < p[1]), max_size=5),
    st.sets(st.tuples(st.integers(0, 19), st.integers(0, 19)).filter(lambda p: p[0] < p[1]), max_size=5),
)
def test_rows_reused_where_no_changed_row_touches_equal_rows_made_again(
    pairs: set[tuple[int, int]],
    described: set[int],
    added: set[tuple[int, int]],
    redescribed_edges: set[tuple[int, int]],
) -> None:
    """An update given the rows made since the last table (`GraphChanges`) takes the other
    communities' rows from that table: the table equals one made whole. As `graph_elements`
    patches, a relationship goes only with a remade row of one of its ends."""
    name = "n{:02d}".format
    edges = {(name(a), name(b)): f"{a} meets {b}" for a, b in sorted(pairs)}
    nodes = sorted({n for pair in edges for n in pair} | {name(i) for i in range(20)})
    descriptions = {n: f"entity {n}" for n in nodes}
    units = {n: [f"chunk-{n}"] for n in nodes}

    def table(
        found: list[Community], previous: pa.Table | None, changed: GraphChanges | None
    ) -> CommunityTable:
        return communities_table(
            found,
            relationships=_edge_rows(edges),
            entities=_entities(descriptions, units),  # type: ignore[arg-type]
            previous=previous,
            changed=changed,
        )

    found, clustering = detect_communities(_edge_rows(edges), PARAMS)
    before = table(found, None, None).table
    removed = set(list(edges)[::7])  # a relationship goes with a remade row of one end
    remade = {name(i) for i in described} | {s for s, _ in removed}
    for pair in removed:
        del edges[pair]
    for a, b in sorted(added | redescribed_edges):
        edges[(name(a), name(b))] = f"{a} meets {b} again"
    for n in remade:
        descriptions[n] = f"entity {n}, described again"
    changed = GraphChanges(
        frozenset(remade), frozenset((name(a), name(b)) for a, b in added | redescribed_edges)
    )
    found, _ = detect_communities(_edge_rows(edges), PARAMS, previous=clustering)
    whole = table(found, before, None)
    assert whole.reused == 0
    assert table(found, before, changed).table == whole.table
    again = table(found, whole.table, GraphChanges(frozenset(), frozenset()))  # nothing made since
    assert again == (whole.table, len(found))


def _hubbed() -> list[tuple[str, str, float]]:
    """The planted groups with a hub tied to every group's first three nodes."""
    edges = _planted()
    firsts = sorted({n for s, t, _ in edges for n in (s, t) if n.endswith(("n0", "n1", "n2"))})
    return [*edges, *(("hub", n, 1.0) for n in firsts)]


def test_a_hub_gaining_an_edge_keeps_its_communities_and_the_new_node_joins_one() -> None:
    edges = _hubbed()
    first, clustering = detect_communities(edge_table(edges), PARAMS)
    grown = [*edges, ("hub", "new", 1.0)]
    found, after = detect_communities(edge_table(grown), PARAMS, previous=clustering)
    before = {(c.level, c.entity_ids) for c in first}
    remade = {(c.level, c.entity_ids) for c in found} - before
    # The hub's weight moved by under a tenth: it stays, and only the communities the new node
    # joined (one per level it reaches) are new member sets.
    assert remade and all("new" in ids for _, ids in remade)
    assert len(remade) <= PARAMS.max_level + 1
    assert after.paths["hub"] == clustering.paths["hub"]
    assert after.placed_weights["hub"] == clustering.placed_weights["hub"]  # carried, not re-placed


def test_a_nodes_drift_counts_from_its_last_placement_and_re_places_it_past_a_tenth() -> None:
    edges = _hubbed()
    _, clustering = detect_communities(edge_table(edges), PARAMS)
    placed = clustering.placed_weights["hub"]
    # Two updates, each moving the hub's weight by 6 %: the second is 12 % from its placement.
    step = [("hub", f"new{i}", 0.06 * placed / 3) for i in range(3)]
    _, once = detect_communities(edge_table([*edges, *step]), PARAMS, previous=clustering)
    assert once.placed_weights["hub"] == placed
    more = [("hub", f"more{i}", 0.06 * placed / 3) for i in range(3)]
    _, twice = detect_communities(edge_table([*edges, *step, *more]), PARAMS, previous=once)
    assert twice.placed_weights["hub"] == pytest.approx(1.12 * placed)  # re-placed at its weight now


def test_a_state_from_before_placed_weights_re_places_every_changed_node_once() -> None:
    edges = _hubbed()
    _, clustering = detect_communities(edge_table(edges), PARAMS)
    old = clustering_table(clustering).drop_columns(["placed_weight"])
    unweighted = read_clustering(old)
    assert unweighted is not None and unweighted.placed_weights == {}
    grown = [*edges, ("hub", "new", 1.0)]
    _, after = detect_communities(edge_table(grown), PARAMS, previous=unweighted)
    assert after.placed_weights["hub"] == pytest.approx(clustering.placed_weights["hub"] + 1.0)


def test_a_state_made_with_other_settings_is_not_updated_but_clustered_again() -> None:
    """Changing graph.resolution, seed or sizes and refreshing kept every community as it was
    (nothing in the graph had changed): the state records what it was made with."""
    _, clustering = detect_communities(edge_table(_planted()), PARAMS)
    state = clustering_table(clustering).replace_schema_metadata(parameters_metadata(PARAMS))
    assert previous_clustering(state, PARAMS) == clustering
    other = dataclasses.replace(PARAMS, resolution=2.0)
    assert previous_clustering(state, other) is None
    assert previous_clustering(clustering_table(clustering), other) == clustering  # from before the record
    assert previous_clustering(None, PARAMS) is None
