"""An update of the SIMILAR_TO choices equals computing every row again, through added, removed and
re-embedded chunks and reordered rows; a missing or damaged memory means a full computation."""

from __future__ import annotations

import itertools
from pathlib import Path
from unittest.mock import patch

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.defs.assets.chunk_similarity import chunk_similarity
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors import similarity_update
from graphunified_assets.lib.vectors.similarity_memory import (
    SIMILARITY_MEMORY,
    SimilarityMemory,
    vector_digests,
)
from graphunified_assets.lib.vectors.similarity_update import updated_choices
from graphunified_query.core.indexes.chunk_similarity import edges_table, similarity_edges
from graphunified_query.core.indexes.neighbour_choices import ChunkSpace, choose

DIMENSION = 3
# Small integer components: duplicate vectors and exactly equal cosines are common, so the ties
# must fall the same way in both computations.
_VECTOR = st.lists(st.integers(-2, 2), min_size=DIMENSION, max_size=DIMENSION)
Corpus = dict[str, list[int]]


@st.composite
def _histories(draw: st.DrawFn) -> tuple[list[tuple[list[str], np.ndarray]], float, int]:
    """Versions of a corpus (ids and vectors, rows in a new order each time), each from the last
    by removals, changed vectors and additions; with a threshold and k."""
    names = (f"c{n:03d}" for n in itertools.count())
    corpus: Corpus = {next(names): v for v in draw(st.lists(_VECTOR, max_size=20))}
    versions = [_version(draw, corpus)]
    for _ in range(draw(st.integers(1, 4))):
        ids = list(corpus)
        actions = draw(st.lists(st.sampled_from("kkkrc"), min_size=len(ids), max_size=len(ids)))
        corpus = {
            i: draw(_VECTOR) if a == "c" else corpus[i] for i, a in zip(ids, actions, strict=True) if a != "r"
        }
        corpus |= {next(names): v for v in draw(st.lists(_VECTOR, max_size=3))}
        versions.append(_version(draw, corpus))
    return versions, draw(st.sampled_from([0.3, 0.6, 0.9, 1.0])), draw(st.integers(1, 4))


def _version(draw: st.DrawFn, corpus: Corpus) -> tuple[list[str], np.ndarray]:
    ids = draw(st.permutations(list(corpus)))
    return ids, np.array([corpus[i] for i in ids], np.float32).reshape(len(ids), DIMENSION)


def _pairs(edges: pa.Table) -> list[tuple[str, str]]:
    return list(
        zip(edges.column("source_chunk").to_pylist(), edges.column("target_chunk").to_pylist(), strict=True)
    )


def _assert_same_edges(edges: pa.Table, expected: pa.Table) -> None:
    assert _pairs(edges) == _pairs(expected)
    np.testing.assert_allclose(
        edges.column("similarity").to_numpy(), expected.column("similarity").to_numpy(), atol=1e-5
    )


@settings(max_examples=300, deadline=None)
@given(_histories())
def test_each_update_equals_a_full_computation(
    history: tuple[list[tuple[list[str], np.ndarray]], float, int],
) -> None:
    versions, threshold, k = history
    memory: SimilarityMemory | None = None
    with patch.object(similarity_update, "FULL_SHARE", 1.0):  # the update path, however much changed
        for ids, vectors in versions:
            space = ChunkSpace.of(ids, vectors)
            digests = vector_digests(vectors)
            full = choose(space, np.arange(len(space)), threshold=threshold, neighbours=k)
            choices = full
            if memory is not None:
                update = updated_choices(space, digests, memory, threshold=threshold, neighbours=k)
                assert update is not None
                choices = update[0]
                for got, want in zip(
                    (choices.chooser, choices.chosen, choices.similarity),
                    (full.chooser, full.chosen, full.similarity),
                    strict=True,
                ):
                    np.testing.assert_array_equal(got, want)
            edges = edges_table(space, choices, threshold=threshold, neighbours=k)
            _assert_same_edges(edges, similarity_edges(ids, vectors, threshold=threshold, neighbours=k))
            memory = SimilarityMemory(space.ids, digests, choices)  # the next update starts from it


def _clustered(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 16))
    return (centres[rng.integers(0, 4, n)] + 0.5 * rng.normal(size=(n, 16))).astype(np.float32)


def test_an_update_computes_only_the_rows_that_can_change() -> None:
    vectors = _clustered(200, seed=1)
    ids = [f"c{i:03d}" for i in range(200)]
    space = ChunkSpace.of(ids[:199], vectors[:199])
    before = choose(space, np.arange(199), threshold=0.6, neighbours=3)
    memory = SimilarityMemory(space.ids, vector_digests(vectors[:199]), before)
    now = ChunkSpace.of(ids, vectors)
    update = updated_choices(now, vector_digests(vectors), memory, threshold=0.6, neighbours=3)
    assert update is not None and update[1] == 1  # the added chunk's row alone
    _assert_same_edges(
        edges_table(now, update[0], threshold=0.6, neighbours=3),
        similarity_edges(ids, vectors, threshold=0.6, neighbours=3),
    )
    changed = vectors.copy()
    changed[:120] = changed[:120][::-1]  # 120 of 200 chunks re-embedded: past FULL_SHARE
    assert updated_choices(now, vector_digests(changed), memory, threshold=0.6, neighbours=3) is None


def test_a_saved_memory_loads_under_its_key_only_and_damage_loads_none(tmp_path: Path) -> None:
    vectors = _clustered(30, seed=2)
    space = ChunkSpace.of([f"c{i:02d}" for i in range(30)], vectors)
    memory = SimilarityMemory(
        space.ids, vector_digests(vectors), choose(space, np.arange(30), threshold=0.5, neighbours=2)
    )
    key = {"threshold": "0.5", "neighbours": "2", "model": "m", "dimension": "16"}
    path = tmp_path / SIMILARITY_MEMORY
    memory.save(path, key)
    loaded = SimilarityMemory.load(path, key)
    assert loaded is not None and len(loaded.choices) == len(memory.choices) > 0
    assert loaded.ids.equals(memory.ids) and (loaded.digests == memory.digests).all()
    assert (loaded.choices.chosen == memory.choices.chosen).all()
    assert SimilarityMemory.load(path, key | {"neighbours": "3"}) is None
    assert SimilarityMemory.load(tmp_path / "missing.parquet", key) is None
    table = pq.read_table(path)
    broken = table.set_column(2, "chosen", pa.array([[99]] * 30, pa.list_(pa.int32())))  # no row 99
    pq.write_table(broken, path)
    assert SimilarityMemory.load(path, key) is None
    path.write_bytes(b"PAR1 not a parquet file")
    assert SimilarityMemory.load(path, key) is None


def _write_vectors(home: Path, ids: list[str], vectors: np.ndarray) -> None:
    db = lancedb.connect(str(home / "lancedb"))
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), vectors.shape[1])
    db.create_table("chunk_vectors", data=pa.table({"id": ids, "vector": column}), mode="overwrite")


def _materialize(home: Path) -> tuple[pa.Table, str]:
    result = chunk_similarity(graphunified=GraphUnifiedResource(home=str(home)))
    assert result.metadata is not None
    return pq.read_table(home / "indexes" / "chunk_similarity.parquet"), str(result.metadata["build"])


def test_the_asset_updates_from_its_memory_and_rebuilds_without_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.yaml").write_text(
        "embedding:\n  provider: local\ngraph:\n  chunk_similarity_threshold: 0.6\n"
        "  chunk_similarity_neighbours: 3\n"
    )
    vectors = _clustered(60, seed=3)
    ids = [f"c{i:02d}" for i in range(60)]
    _write_vectors(home, ids[:59], vectors[:59])
    assert _materialize(home)[1] == "full"  # a first build
    _write_vectors(home, ids, vectors)  # one chunk added
    edges, build = _materialize(home)
    expected = similarity_edges(ids, vectors, threshold=0.6, neighbours=3)
    assert build == "update" and edges.num_rows > 0
    _assert_same_edges(edges, expected)
    assert edges.schema.metadata == expected.schema.metadata
    (home / "cache" / SIMILARITY_MEMORY).write_bytes(b"torn")
    _write_vectors(home, ids[1:], vectors[1:])  # one removed, with no usable memory
    edges, build = _materialize(home)
    assert build == "full"
    _assert_same_edges(edges, similarity_edges(ids[1:], vectors[1:], threshold=0.6, neighbours=3))
