"""The query side at scale: a mapped snapshot, bounded hub walks, PPR with a tolerance, cached
query embeddings."""

from __future__ import annotations

import dataclasses
import mmap
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from graphunified_query.core.indexes.dense import DenseIndex
from graphunified_query.core.settings.model import Settings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.snapshot.arrow_rows import ArrowRows, ArrowStrings
from graphunified_query.snapshot.loader import load_snapshot
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.graphrag_local import GraphRAGLocalRetriever, expand
from graphunified_query.strategies.ppr import pagerank_iterations, transition_matrix
from tests.query.compose_support import WordEmbedder, entity, make_context, relation

QUESTIONS = (
    "Who designed the bridge in the town where the mill stands?",
    "Which river flows past the old mill?",
    "When was the museum founded?",
)


def _owns_no_memory(matrix: np.ndarray) -> bool:
    """A view of a mapped file: nothing between the array and the mapping holds a private copy."""
    base: object = matrix
    while base is not None:
        if isinstance(base, (np.memmap, mmap.mmap)):
            return True
        if isinstance(base, np.ndarray) and base.flags.owndata:
            return False
        base = getattr(base, "base", None)
    return False


def _eager(snapshot: Snapshot) -> Snapshot:
    """The same snapshot as the former loader held it: dict rows, tuples, private float32 copies."""

    def copied(index: DenseIndex) -> DenseIndex:
        return dataclasses.replace(index, matrix=np.array(index.matrix, np.float32))

    return dataclasses.replace(
        snapshot,
        chunks=dataclasses.replace(snapshot.chunks, texts=tuple(snapshot.chunks.texts)),
        chunk_vectors=copied(snapshot.chunk_vectors),
        entities=tuple(dict(r) for r in snapshot.entities),
        entity_vectors=copied(snapshot.entity_vectors),
        relationships=tuple(dict(r) for r in snapshot.relationships),
        relationship_vectors=copied(snapshot.relationship_vectors),
        facts=tuple(dict(r) for r in snapshot.facts),
        fact_vectors=copied(snapshot.fact_vectors),
        reports=tuple(dict(r) for r in snapshot.reports),
        report_vectors=copied(snapshot.report_vectors),
        extras={},
    )


@pytest.fixture
def home(built_home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(built_home, copy, symlinks=True, ignore=shutil.ignore_patterns("snapshot"))
    return copy


def test_a_loaded_snapshot_maps_its_vectors_and_tables(home: Path) -> None:
    first = load_snapshot(home)  # reads LanceDB, writes the cache, then maps it
    again = load_snapshot(home)  # maps what the first load wrote
    for snapshot in (first, again):
        for index in (snapshot.chunk_vectors, snapshot.entity_vectors, snapshot.relationship_vectors):
            assert index.matrix.dtype == np.float32 and index.matrix.flags.c_contiguous
            assert _owns_no_memory(index.matrix), "vectors were copied into process memory"
        assert snapshot.report_points is not None and _owns_no_memory(snapshot.report_points.matrix)
        assert isinstance(snapshot.entities, ArrowRows) and isinstance(snapshot.chunks.texts, ArrowStrings)
    assert list(again.chunks.texts) == list(first.chunks.texts)
    assert [dict(r) for r in again.relationships] == [dict(r) for r in first.relationships]
    cached = sorted(p.suffix for p in (home / "cache" / "snapshot").iterdir())
    assert cached.count(".npy") == 6 and ".arrow" in cached  # five vector tables and the report points


def test_every_strategy_retrieves_the_same_from_the_mapped_snapshot_as_from_copies(home: Path) -> None:
    mapped = QueryEngine.open(home, environ={})
    eager = QueryEngine(_eager(mapped.snapshot), mapped.settings, mapped.embedder)
    for name in mapped.strategies:
        for question in QUESTIONS:
            got = mapped.retriever(name).retrieve(question, 5)
            expected = eager.retriever(name).retrieve(question, 5)
            assert [(r.text, r.score, r.chunk_id) for r in got.results] == [
                (r.text, r.score, r.chunk_id) for r in expected.results
            ], name


def _star(neighbours: int) -> Snapshot:
    hub = entity("hub", "Hub", "the hub")
    leaves = [entity(f"e{i:04d}", f"Leaf {i}", "a leaf") for i in range(neighbours)]
    relationships = [relation(i, hub, leaf, weight=1.0 + i % 7) for i, leaf in enumerate(leaves)]
    return make_context([("c1", "d1", "hub text")], [hub, *leaves], relationships).snapshot


def test_a_hub_walk_follows_at_most_the_cap_heaviest_neighbours() -> None:
    snap = _star(1000)
    scores, hops = expand(snap, {"hub": 1.0}, max_hops=2, decay=0.7, limit=5000, per_hop=25)
    reached = [e for e in scores if e != "hub"]
    assert len(reached) == 25 and set(hops.values()) == {0, 1}
    weight = {r["target_id"]: r["weight"] for r in snap.relationships}
    assert min(weight[e] for e in reached) == 7.0  # the heaviest ones
    unbounded, _ = expand(snap, {"hub": 1.0}, max_hops=2, decay=0.7, limit=5000)
    assert len(unbounded) == 1001


def test_a_cap_at_least_the_neighbourhood_keeps_the_unbounded_result() -> None:
    snap = _star(300)
    bounded = expand(snap, {"hub": 1.0}, max_hops=2, decay=0.7, limit=40, per_hop=40)
    assert bounded == expand(snap, {"hub": 1.0}, max_hops=2, decay=0.7, limit=40)


def test_ppr_with_a_tolerance_stops_early_within_it_of_the_full_iteration() -> None:
    rng = np.random.default_rng(7)
    n = 400
    dense = (rng.random((n, n)) < 0.02) * rng.random((n, n))
    adjacency = sp.csr_matrix(np.triu(dense, 1) + np.triu(dense, 1).T, dtype=np.float32)
    transition = transition_matrix(adjacency)
    reset = np.zeros(n, np.float32)
    reset[[3, 50, 120]] = 1.0
    full, full_steps = pagerank_iterations(transition, reset, damping=0.5, max_iterations=200, tolerance=0)
    tolerance = 1e-4
    early, steps = pagerank_iterations(
        transition, reset, damping=0.5, max_iterations=200, tolerance=tolerance
    )
    assert full_steps == 200 and steps < 20
    assert np.abs(early - full).sum() <= tolerance  # damping 0.5: within tolerance x 0.5 / 0.5


def test_a_repeated_query_is_embedded_once_per_engine() -> None:
    context = make_context(
        [("c1", "d1", "the mill on the river"), ("c2", "d1", "the bridge in town")],
        [entity("e1", "Mill", "the mill on the river", ["c1"])],
    )
    embedder = context.embedder
    assert isinstance(embedder, WordEmbedder)
    engine = QueryEngine(context.snapshot, Settings(), embedder)
    for _ in range(3):
        engine.retriever("naive").retrieve("where is the mill", 2)
        engine.retriever("graphrag_local").retrieve("where is the mill", 2)
    queries = [texts for kind, texts in embedder.calls if kind == "query"]
    assert queries == [("where is the mill",)]
    engine.retriever("naive").retrieve("the bridge", 2)
    assert [texts for kind, texts in embedder.calls if kind == "query"][-1] == ("the bridge",)
    assert engine.context.query_vectors.hits >= 5


def test_the_local_walk_cap_is_a_documented_parameter() -> None:
    from graphunified_query.strategies.registry import STRATEGIES

    local = STRATEGIES["graphrag_local"].params.model_fields["max_neighbours_per_hop"]
    assert local.default == 50 and local.description
    light = STRATEGIES["lightrag"].params.model_fields["max_neighbours"]
    assert light.default == 20 and light.description
    assert GraphRAGLocalRetriever.name == "graphrag_local"
