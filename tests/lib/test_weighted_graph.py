"""The relationships' graph in arrays gives each node what the definitions say."""

from __future__ import annotations

import hashlib
from collections import defaultdict

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.graph.weighted_graph import Edge, WeightedGraph

_EDGES = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d|x", "é", "ent-9"]),
        st.sampled_from(["a", "b", "c", "d|x", "é", "ent-9"]),
        st.sampled_from([-1.0, 0.0, 0.1, 0.2, 1.0, 3.0]),
    ),
    max_size=30,
)


def edge_table(edges: list[Edge]) -> pa.Table:
    """Edges as the relationships' columns a graph is made of."""
    columns = list(zip(*edges, strict=True)) or [(), (), ()]
    return pa.table(
        {
            "source_id": pa.array(columns[0], pa.string()),
            "target_id": pa.array(columns[1], pa.string()),
            "weight": pa.array(columns[2], pa.float64()),
        }
    )


def _defined(edges: list[Edge]) -> dict[str, list[tuple[str, float]]]:
    """Each node's neighbours in name order with their summed weights (self-loops and weights
    not above zero dropped), summed in input order."""
    summed: dict[tuple[str, str], float] = defaultdict(float)
    for source, target, weight in edges:
        if source != target and weight > 0:
            summed[(min(source, target), max(source, target))] += weight
    out: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (low, high), weight in summed.items():
        out[low].append((high, weight))
        out[high].append((low, weight))
    return {node: sorted(pairs) for node, pairs in sorted(out.items())}


@settings(max_examples=60, deadline=None)
@given(edges=_EDGES, among=st.sets(st.sampled_from(["a", "b", "c", "d|x", "é", "ent-9"])))
def test_neighbours_signatures_and_weights_are_the_definitions(edges: list[Edge], among: set[str]) -> None:
    graph, defined = WeightedGraph(edge_table(edges)), _defined(edges)
    assert graph.names == list(defined) and bool(graph) == bool(defined)
    for node, pairs in defined.items():
        assert graph.edges_of(node) == [(node, m, w) for m, w in pairs]
    assert graph.signatures() == {
        node: hashlib.sha1("\n".join(f"{m}|{w!r}" for m, w in pairs).encode()).hexdigest()
        for node, pairs in defined.items()
    }
    assert graph.strengths() == pytest.approx({n: sum(w for _, w in pairs) for n, pairs in defined.items()})
    nodes = among & set(defined)
    within = {n: sum(w for m, w in defined[n] if m in nodes) for n in nodes}
    assert graph.strengths(nodes) == pytest.approx(within)
