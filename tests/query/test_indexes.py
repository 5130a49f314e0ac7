"""The strategy index formats: BM25 and the PPR matrix survive a save/load and score correctly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_query.core.indexes.bm25 import TOKENS, BM25Index, tokenize
from graphunified_query.core.indexes.manifest import file_fingerprint, read_manifest, write_manifest
from graphunified_query.core.indexes.ppr_graph import PPRGraph


def test_bm25_ranks_stemmed_matches_and_round_trips(tmp_path: Path) -> None:
    texts = [
        "The river flooded the valley in 1894.",
        "A mill wove wool cloth.",
        "Floods of the river Harrow.",
    ]
    index = BM25Index.build(["a", "b", "c"], pa.array(tokenize(texts), TOKENS), k1=1.5, b=0.75)
    scores = index.scores("flooding river")
    assert scores[1] == 0 and scores[0] > 0 and scores[2] > 0  # "flooding" ~ "flooded" ~ "floods"
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded.ids == ("a", "b", "c")
    np.testing.assert_allclose(loaded.scores("flooding river"), scores)
    assert loaded.scores("zebra").tolist() == [0.0, 0.0, 0.0]
    assert tokenize(["The Mills"]) == [["mill"]]
    index.save(tmp_path / "bm25")  # overwriting an index leaves no staging folders behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]


def test_empty_bm25_index(tmp_path: Path) -> None:
    index = BM25Index.build([], pa.array([], TOKENS), k1=1.5, b=0.75)
    index.save(tmp_path / "bm25")
    assert BM25Index.load(tmp_path / "bm25").scores("anything").shape == (0,)


def test_ppr_graph_is_symmetric_sums_parallel_edges_and_round_trips(tmp_path: Path) -> None:
    graph = PPRGraph.from_edges(
        _ids(["e1", "e2"]),
        _ids(["c1", "c2"]),
        _edges(
            [("e1", "c1", 1.0), ("e1", "c1", 0.5), ("e1", "e2", 2.0), ("e2", "c2", 1.0), ("e1", "ghost", 1.0)]
        ),
    )
    dense = graph.adjacency.toarray()
    assert graph.node_ids == ("e1", "e2", "c1", "c2") and graph.n_entities == 2
    np.testing.assert_allclose(dense, dense.T)
    assert dense[0, 2] == 1.5 and dense[0, 1] == 2.0 and graph.n_edges == 3
    graph.save(tmp_path / "ppr.npz")
    loaded = PPRGraph.load(tmp_path / "ppr.npz")
    assert loaded.node_ids == graph.node_ids and loaded.index["c2"] == 3
    np.testing.assert_allclose(loaded.adjacency.toarray(), dense)


@pytest.mark.parametrize("nodes", [0, 3])
def test_a_ppr_graph_saved_with_unicode_ids_before_reads_as_it_did(tmp_path: Path, nodes: int) -> None:
    # Homes not refreshed since the ids became UTF-8 bytes still answer; an empty graph round-trips.
    ids = ["ent-é", "Bücher.txt#0", "c2"][:nodes]
    graph = PPRGraph.from_edges(
        _ids(ids[:1]), _ids(ids[1:]), _edges([(ids[0], ids[1], 2.0)] if nodes else [])
    )
    matrix = graph.adjacency
    np.savez_compressed(
        tmp_path / "old.npz",
        node_ids=np.asarray(graph.node_ids, dtype=np.str_),
        n_entities=np.int64(graph.n_entities),
        data=matrix.data,
        indices=matrix.indices,
        indptr=matrix.indptr,
    )
    graph.save(tmp_path / "new.npz")
    for name in ("old.npz", "new.npz"):
        loaded = PPRGraph.load(tmp_path / name)
        assert loaded.node_ids == graph.node_ids and loaded.n_entities == graph.n_entities
        np.testing.assert_allclose(loaded.adjacency.toarray(), matrix.toarray())


def _ids(ids: list[str]) -> pa.ChunkedArray:
    return pa.chunked_array([ids], pa.string())


def _edges(edges: list[tuple[str, str, float]]) -> pa.Table:
    sources, targets, weights = zip(*edges, strict=True) if edges else ((), (), ())
    return pa.table(
        {
            "source": _ids(list(sources)),
            "target": _ids(list(targets)),
            "weight": pa.array(weights, pa.float64()),
        }
    )


_NAMES = st.sampled_from(["a", "b", "c", "d", "é"])  # few, so ids repeat and edges hit parallel


@settings(max_examples=300, deadline=None)
@given(
    entity_ids=st.lists(_NAMES, max_size=4),
    chunk_ids=st.lists(_NAMES, max_size=4),
    edges=st.lists(
        st.tuples(
            st.one_of(_NAMES, st.just("ghost")),
            st.one_of(_NAMES, st.just("ghost")),
            # exact in float32 however summed, so the comparison can be exact
            st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.0, 3.0]),
        ),
        max_size=12,
    ),
)
def test_ppr_graph_equals_an_edge_by_edge_reference(
    entity_ids: list[str], chunk_ids: list[str], edges: list[tuple[str, str, float]]
) -> None:
    nodes = entity_ids + chunk_ids
    index = {node: i for i, node in enumerate(nodes)}  # a repeated id: its last position
    expected = np.zeros((len(nodes), len(nodes)), np.float32)
    for source, target, weight in edges:
        i, j = index.get(source), index.get(target)
        if i is not None and j is not None and i != j and weight > 0:
            expected[i, j] += weight
            expected[j, i] += weight
    graph = PPRGraph.from_edges(_ids(entity_ids), _ids(chunk_ids), _edges(edges))
    assert graph.node_ids == tuple(nodes) and graph.n_entities == len(entity_ids)
    matrix = graph.adjacency
    assert (
        matrix.has_canonical_format
        and matrix.dtype == np.float32
        and matrix.nnz == np.count_nonzero(expected)
    )
    np.testing.assert_array_equal(matrix.toarray(), expected)


def test_manifest_records_upstream_fingerprints(tmp_path: Path) -> None:
    table = tmp_path / "entities.parquet"
    table.write_bytes(b"v1")
    before = file_fingerprint(table)
    write_manifest(tmp_path / "index", {"entities": before}, model="m")
    manifest = read_manifest(tmp_path / "index")
    assert (
        manifest is not None and manifest["built_from"] == {"entities": before} and manifest["model"] == "m"
    )
    table.write_bytes(b"version 2")
    assert file_fingerprint(table) != before
    assert file_fingerprint(tmp_path / "absent") == "missing"
