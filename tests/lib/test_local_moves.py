"""`place`: the moving nodes settle where no single move raises modularity; kept nodes stay."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.graph.local_moves import place
from graphunified_assets.lib.graph.weighted_graph import Edge, WeightedGraph
from tests.lib.test_weighted_graph import edge_table

NODES = [f"n{i}" for i in range(12)]


def _modularity(graph: WeightedGraph, communities: list[list[str]], resolution: float) -> float:
    """Newman's modularity of ``communities`` (covering every node) with resolution γ."""
    strength = graph.strengths()
    two_m = sum(strength.values())
    total = 0.0
    for ids in communities:
        members = set(ids)
        inner = sum(w for n in ids for _, m, w in graph.edges_of(n) if m in members)
        volume = sum(strength[n] for n in ids)
        total += inner / two_m - resolution * (volume / two_m) ** 2
    return total


def test_a_node_tied_to_one_community_joins_it_and_a_new_clique_keeps_to_itself() -> None:
    edges: list[Edge] = [(a, b, 1.0) for a in "abcd" for b in "abcd" if a < b]  # a kept 4-clique
    edges += [("x", "a", 1.0), ("x", "b", 1.0)]  # x: only ties to the clique
    edges += [(a, b, 3.0) for a in "pqr" for b in "pqr" if a < b] + [("p", "d", 0.2)]  # a new clique
    graph = WeightedGraph(edge_table(edges))
    joined, fresh = place(graph, graph.names, {7: list("abcd")}, ["p", "q", "r", "x"], resolution=1.0)
    assert joined == {7: ["a", "b", "c", "d", "x"]}
    assert fresh == [["p", "q", "r"]]


def test_a_new_group_tied_to_a_community_joins_it_whole_though_no_member_would_alone() -> None:
    """In a large graph a community's volume is a small share of it: three new nodes, each more
    tied to the other two than to the kept 4-clique, join the clique together (Louvain's second
    phase), as a cold Leiden would cluster them."""
    filler: list[Edge] = [
        (f"{g}{i}", f"{g}{j}", 1.0) for g in "uvw" for i in range(8) for j in range(8) if i < j
    ]
    clique: list[Edge] = [(a, b, 1.0) for a in "abcd" for b in "abcd" if a < b]
    group: list[Edge] = [("p", "q", 1.0), ("q", "r", 1.0), ("p", "r", 1.0)]
    ties: list[Edge] = [("p", "a", 1.0), ("q", "b", 1.0), ("r", "c", 1.0)]
    graph = WeightedGraph(edge_table([*filler, *clique, *group, *ties]))
    kept = {0: list("abcd"), **{1 + i: [f"{g}{j}" for j in range(8)] for i, g in enumerate("uvw")}}
    joined, fresh = place(graph, graph.names, kept, ["p", "q", "r"], resolution=1.0)
    assert joined[0] == ["a", "b", "c", "d", "p", "q", "r"] and fresh == []


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(NODES), st.sampled_from(NODES), st.sampled_from([0.5, 1.0, 2.0])),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.integers(0, 3), min_size=len(NODES), max_size=len(NODES)),
    st.sets(st.sampled_from(NODES), min_size=1),
    st.sampled_from([0.5, 1.0, 2.0]),
)
def test_kept_nodes_stay_and_no_moving_node_gains_by_a_single_move(
    edges: list[Edge], kept_of: list[int], moving: set[str], resolution: float
) -> None:
    graph = WeightedGraph(edge_table(edges))
    nodes = set(graph.names)
    moving &= nodes
    kept: dict[int, list[str]] = defaultdict(list)
    for node, c in zip(NODES, kept_of, strict=True):
        if node in nodes and node not in moving:
            kept[c].append(node)
    joined, fresh = place(graph, nodes, kept, moving, resolution=resolution)
    # Every kept node where it was; every node once.
    assert all(set(ids) <= set(joined[c]) for c, ids in kept.items())
    placed = [n for ids in [*joined.values(), *fresh] for n in ids]
    assert sorted(placed) == sorted(nodes)
    # A local optimum: moving one node elsewhere (or alone) never raises modularity.
    communities = [ids for ids in [*joined.values(), *fresh] if ids]
    best = _modularity(graph, communities, resolution)
    for node in moving:
        home = next(i for i, ids in enumerate(communities) if node in ids)
        for target in [*range(len(communities)), None]:
            if target == home:
                continue
            trial = [[n for n in ids if n != node] for ids in communities]
            if target is None:
                trial.append([node])
            else:
                trial[target].append(node)
            assert _modularity(graph, [t for t in trial if t], resolution) <= best + 1e-9
