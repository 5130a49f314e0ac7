"""The report piece memory: what it keeps across updates, what it serves, and what it ignores."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.vectors.piece_memory import PIECE_TABLES, PieceLookup, PieceMemory

REPORTS, POINTS = PIECE_TABLES


def vector(text: str) -> np.ndarray:
    """A fixed vector per text, as a model gives."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).standard_normal(4).astype(np.float32)


class Counting:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.asked += texts
        return np.stack([vector(t) for t in texts]) if texts else np.empty((0, 4), np.float32)


def computed(memory: PieceMemory, table: str, pieces: dict[int, list[str]]) -> tuple[PieceLookup, Counting]:
    """A shard computing ``pieces`` (community → its pieces) of ``table`` against ``memory``."""
    embed = Counting()
    lookup = PieceLookup(memory, embed)
    for found in pieces.values():
        if found:
            assert np.array_equal(lookup(found), np.stack([vector(t) for t in found]))
    return lookup, embed


def test_an_update_reads_a_communitys_previous_pieces_from_the_memory_not_the_embedder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pieces.npz"
    first = {1: ["Title A.", "Shared sentence."], 2: ["Title B.", "Shared sentence.", "Only B."]}
    lookup, embed = computed(PieceMemory(), REPORTS, first)
    staged = lookup.staged(REPORTS, list(first), list(first.values()))
    PieceMemory().updated({REPORTS: None}, staged).save(path, "model-a")

    memory = PieceMemory.load(path, "model-a")
    assert sorted(memory.texts) == ["Only B.", "Shared sentence.", "Title A.", "Title B."]
    rewritten = {2: ["Title B.", "Shared sentence.", "New finding."]}
    lookup, embed = computed(memory, REPORTS, rewritten)
    assert embed.asked == ["New finding."] and lookup.remembered == 2

    after = memory.updated({REPORTS: {2}}, lookup.staged(REPORTS, [2], list(rewritten.values())))
    # "Only B." no community names any more; "Shared sentence." community 1 still does.
    assert sorted(after.texts) == ["New finding.", "Shared sentence.", "Title A.", "Title B."]
    for text, row in zip(after.texts, after.matrix, strict=True):
        assert np.array_equal(row, vector(text))
    refs = sorted((int(c), after.texts[p]) for c, p in zip(after.communities, after.pieces, strict=True))
    assert refs == sorted([(1, "Title A."), (1, "Shared sentence."), *((2, t) for t in rewritten[2])])


def test_a_removed_community_takes_only_its_tables_references() -> None:
    report, _ = computed(PieceMemory(), REPORTS, {5: ["Five."]})
    point, _ = computed(PieceMemory(), POINTS, {5: ["Five point."]})
    memory = PieceMemory().updated({}, report.staged(REPORTS, [5], [["Five."]]))
    memory = memory.updated({}, point.staged(POINTS, [5], [["Five point."]]))
    assert sorted(memory.texts) == ["Five point.", "Five."]
    assert memory.updated({POINTS: {5}}, None).texts == ["Five."]
    assert memory.updated({REPORTS: None, POINTS: None}, None).texts == []


@pytest.mark.parametrize("damage", ["missing", "other model", "torn", "not a zip"])
def test_a_memory_it_cannot_trust_reads_as_empty(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "pieces.npz"
    lookup, _ = computed(PieceMemory(), REPORTS, {1: ["A."]})
    PieceMemory().updated({}, lookup.staged(REPORTS, [1], [["A."]])).save(path, "model-a")
    key = "model-a"
    if damage == "missing":
        path.unlink()
    elif damage == "other model":
        key = "model-b"
    elif damage == "torn":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.write_text("vectors")
    assert PieceMemory.load(path, key).texts == []
    assert PieceMemory.load(tmp_path / "pieces.npz", key).matrix.shape[0] == 0


def test_only_pieces_the_lookup_returned_are_staged() -> None:
    lookup, _ = computed(PieceMemory(), REPORTS, {1: ["Seen."]})
    staged = lookup.staged(REPORTS, [1, 2], [["Seen.", "Seen."], ["Never asked."]])
    assert staged.column("text").to_pylist() == ["Seen."]
    assert staged.column("community").to_pylist() == [1]


communities = st.integers(0, 6)
texts = st.lists(st.sampled_from([f"Sentence {i}." for i in range(12)]), max_size=4)
updates = st.lists(
    st.tuples(
        st.sampled_from(PIECE_TABLES), st.dictionaries(communities, texts, max_size=4), st.sets(communities)
    ),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(updates)
def test_after_any_updates_the_memory_holds_exactly_the_live_references_pieces(
    steps: list[tuple[str, dict[int, list[str]], set[int]]],
) -> None:
    """Each step recomputes some communities of one table and removes others; the memory must name
    exactly each live (table, community)'s last pieces, each with its own vector, once."""
    memory, live = PieceMemory(), {}
    for table, recomputed, removed in steps:
        lookup, embed = computed(memory, table, recomputed)
        assert not set(embed.asked) & set(memory.texts)  # a remembered piece is never embedded again
        staged = lookup.staged(table, list(recomputed), list(recomputed.values()))
        memory = memory.updated({table: set(recomputed) | removed}, staged)
        for community in removed:
            live.pop((table, community), None)
        live.update(((table, c), set(found)) for c, found in recomputed.items())
    refs: dict[tuple[str, int], set[str]] = {}
    for table, community, piece in zip(memory.tables, memory.communities, memory.pieces, strict=True):
        refs.setdefault((PIECE_TABLES[table], int(community)), set()).add(memory.texts[piece])
    assert refs == {key: found for key, found in live.items() if found}
    assert len(set(memory.texts)) == len(memory.texts) == len(set().union(*refs.values()))
    for text, row in zip(memory.texts, memory.matrix, strict=True):
        assert np.array_equal(row, vector(text))
