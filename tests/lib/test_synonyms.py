"""Synonym edges: nearest names above a threshold, and only new names are compared on update."""

from __future__ import annotations

import numpy as np

from graphunified_assets.lib.graph.synonyms import synonym_edges


def _embedder(vectors: dict[str, list[float]]):
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        rows = np.asarray([vectors[t] for t in texts], np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    return embed, calls


def test_close_names_are_linked_and_far_ones_are_not() -> None:
    embed, _ = _embedder({"Hale Mill": [1, 0.1, 0], "the Hale mills": [1, 0.15, 0], "Eastfold": [0, 0, 1]})
    table = synonym_edges(
        ["e1", "e2", "e3"],
        ["Hale Mill", "the Hale mills", "Eastfold"],
        embed=embed,
        threshold=0.9,
        neighbours=5,
    )
    rows = table.to_pylist()
    assert [(r["source"], r["target"]) for r in rows] == [("e1", "e2")]
    assert 0.99 < rows[0]["similarity"] <= 1.0


def test_neighbours_cap_keeps_the_closest() -> None:
    names = ["x", "a", "b", "c"]
    embed, _ = _embedder({"x": [1, 0], "a": [1, 0.05], "b": [1, 0.1], "c": [1, 0.2]})
    table = synonym_edges(names, names, embed=embed, threshold=0.5, neighbours=1)
    assert ("a", "x") in {(r["source"], r["target"]) for r in table.to_pylist()}
    assert len([r for r in table.to_pylist() if "x" in (r["source"], r["target"])]) <= 3


def test_an_update_compares_only_new_names_and_carries_old_edges() -> None:
    embed, _ = _embedder({"A": [1, 0, 0], "B": [1, 0.05, 0], "C": [0, 1, 0]})
    first = synonym_edges(["a", "b", "c"], ["A", "B", "C"], embed=embed, threshold=0.9, neighbours=5)
    assert [(r["source"], r["target"]) for r in first.to_pylist()] == [("a", "b")]
    # Pretend the model changed so A and B look unrelated and D sits next to C: the old pair is
    # carried over (not recomputed), the new name is compared with everything, "b" is gone.
    embed2, _ = _embedder({"A": [1, 0, 0], "C": [0, 1, 0], "D": [0, 1, 0.05]})
    second = synonym_edges(
        ["a", "c", "d"],
        ["A", "C", "D"],
        embed=embed2,
        threshold=0.9,
        neighbours=5,
        previous=first,
        previous_ids={"a", "b", "c"},
    )
    assert [(r["source"], r["target"]) for r in second.to_pylist()] == [("c", "d")]
    third = synonym_edges(
        ["a", "b", "c"],
        ["A", "B", "C"],
        embed=embed,
        threshold=0.9,
        neighbours=5,
        previous=first,
        previous_ids={"a", "b", "c"},
    )
    assert third.equals(first)


def test_nothing_new_means_no_embedding_call() -> None:
    embed, calls = _embedder({"A": [1, 0], "B": [1, 0.05]})
    first = synonym_edges(["a", "b"], ["A", "B"], embed=embed, threshold=0.9, neighbours=5)
    calls.clear()
    again = synonym_edges(
        ["a", "b"],
        ["A", "B"],
        embed=embed,
        threshold=0.9,
        neighbours=5,
        previous=first,
        previous_ids={"a", "b"},
    )
    assert again.equals(first) and calls == []
