"""The strategy index formats: BM25 and the PPR matrix survive a save/load and score correctly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphunified_query.core.indexes.bm25 import BM25Index, tokenize
from graphunified_query.core.indexes.manifest import file_fingerprint, read_manifest, write_manifest
from graphunified_query.core.indexes.ppr_graph import PPRGraph


def test_bm25_ranks_stemmed_matches_and_round_trips(tmp_path: Path) -> None:
    texts = [
        "The river flooded the valley in 1894.",
        "A mill wove wool cloth.",
        "Floods of the river Harrow.",
    ]
    index = BM25Index.build(["a", "b", "c"], texts, k1=1.5, b=0.75)
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
    index = BM25Index.build([], [], k1=1.5, b=0.75)
    index.save(tmp_path / "bm25")
    assert BM25Index.load(tmp_path / "bm25").scores("anything").shape == (0,)


def test_ppr_graph_is_symmetric_sums_parallel_edges_and_round_trips(tmp_path: Path) -> None:
    graph = PPRGraph.from_edges(
        ["e1", "e2"],
        ["c1", "c2"],
        [("e1", "c1", 1.0), ("e1", "c1", 0.5), ("e1", "e2", 2.0), ("e2", "c2", 1.0), ("e1", "ghost", 1.0)],
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
    graph = PPRGraph.from_edges(ids[:1], ids[1:], [(ids[0], ids[1], 2.0)] if nodes else [])
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
