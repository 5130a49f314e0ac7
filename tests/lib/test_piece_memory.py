"""The report piece memory: what it keeps across updates, what it serves, and what it ignores."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.vectors import row_file
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


def computed(memory: PieceMemory, pieces: dict[int, list[str]]) -> tuple[PieceLookup, Counting]:
    """A shard computing ``pieces`` (community → its pieces) against ``memory``."""
    embed = Counting()
    lookup = PieceLookup(memory, embed)
    for found in pieces.values():
        if found:
            assert np.array_equal(lookup(found), np.stack([vector(t) for t in found]))
    return lookup, embed


def updated(
    memory: PieceMemory, table: str, pieces: dict[int, list[str]], removed: frozenset[int] = frozenset()
) -> PieceMemory:
    lookup, _ = computed(memory, pieces)
    staged = lookup.staged(table, list(pieces), list(pieces.values()))
    return memory.updated({table: set(pieces) | removed}, staged.to_batches)


def assert_vectors(memory: PieceMemory) -> None:
    assert len(set(memory.texts)) == len(memory.texts)  # a row per piece
    for text, row in zip(memory.texts, memory.vectors(range(memory.rows)), strict=True):
        assert np.array_equal(row, vector(text))


def test_an_update_reads_a_communitys_previous_pieces_from_the_memory_not_the_embedder(
    tmp_path: Path,
) -> None:
    first = {1: ["Title A.", "Shared sentence."], 2: ["Title B.", "Shared sentence.", "Only B."]}
    updated(PieceMemory(), REPORTS, first).save(tmp_path, "model-a")

    memory = PieceMemory.load(tmp_path, "model-a")
    assert memory.referenced() == {"Only B.", "Shared sentence.", "Title A.", "Title B."}
    rewritten = {2: ["Title B.", "Shared sentence.", "New finding."]}
    lookup, embed = computed(memory, rewritten)
    assert embed.asked == ["New finding."] and lookup.remembered == 2

    after = memory.updated({REPORTS: {2}}, lookup.staged(REPORTS, [2], list(rewritten.values())).to_batches)
    # "Only B." no community names any more; "Shared sentence." community 1 still does.
    assert after.referenced() == {"New finding.", "Shared sentence.", "Title A.", "Title B."}
    refs = sorted((int(c), after.texts[p]) for c, p in zip(after.communities, after.pieces, strict=True))
    assert refs == sorted([(1, "Title A."), (1, "Shared sentence."), *((2, t) for t in rewritten[2])])
    after.save(tmp_path, "model-a")
    reread = PieceMemory.load(tmp_path, "model-a")
    assert reread.texts == after.texts and reread.referenced() == after.referenced()
    assert_vectors(reread)


def test_a_save_appends_to_the_vectors_file_until_most_rows_are_unused(tmp_path: Path) -> None:
    memory = updated(PieceMemory(), REPORTS, {c: [f"piece {c}"] for c in range(10)})
    memory.save(tmp_path, "m")
    files = list(tmp_path.glob("vectors.*.f32"))
    assert len(files) == 1 and files[0].stat().st_size == 10 * 4 * 4
    memory = updated(PieceMemory.load(tmp_path, "m"), REPORTS, {0: ["piece 0, revised"]})
    memory.save(tmp_path, "m")
    assert list(tmp_path.glob("vectors.*.f32")) == files and files[0].stat().st_size == 11 * 4 * 4
    memory = PieceMemory.load(tmp_path, "m")
    assert memory.rows == 11 and "piece 0" in memory.texts and "piece 0" not in memory.referenced()
    # Six of eleven rows unused: the save writes the five still named to a new file.
    memory = updated(memory, REPORTS, {}, removed=frozenset({1, 2, 3, 4, 5}))
    memory.save(tmp_path, "m")
    (compacted,) = tmp_path.glob("vectors.*.f32")
    assert compacted != files[0] and compacted.stat().st_size == 5 * 4 * 4
    memory = PieceMemory.load(tmp_path, "m")
    assert sorted(memory.texts) == ["piece 0, revised", "piece 6", "piece 7", "piece 8", "piece 9"]
    assert_vectors(memory)


def test_a_removed_community_takes_only_its_tables_references() -> None:
    memory = updated(PieceMemory(), REPORTS, {5: ["Five."]})
    memory = updated(memory, POINTS, {5: ["Five point."]})
    assert memory.referenced() == {"Five point.", "Five."}
    assert memory.updated({POINTS: {5}}, list).referenced() == {"Five."}
    assert memory.updated({REPORTS: None, POINTS: None}, list).referenced() == set()


@pytest.mark.parametrize("damage", ["missing", "other model", "torn index", "not a zip", "short vectors"])
def test_a_memory_it_cannot_trust_reads_as_empty(tmp_path: Path, damage: str) -> None:
    updated(PieceMemory(), REPORTS, {1: ["A."], 2: ["B."]}).save(tmp_path, "model-a")
    index, (vectors,) = tmp_path / "index.npz", tmp_path.glob("vectors.*.f32")
    key = "model-a"
    if damage == "missing":
        index.unlink()
    elif damage == "other model":
        key = "model-b"
    elif damage == "torn index":
        index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    elif damage == "not a zip":
        index.write_text("vectors")
    else:
        vectors.write_bytes(vectors.read_bytes()[:-4])
    assert PieceMemory.load(tmp_path, key).rows == 0


def test_a_crash_after_appending_leaves_the_previous_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    updated(PieceMemory(), REPORTS, {1: ["A."]}).save(tmp_path, "m")
    grown = updated(PieceMemory.load(tmp_path, "m"), REPORTS, {2: ["B."]})

    def crash(*_: object) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(PieceMemory, "_write_index", crash)
    with pytest.raises(OSError):
        grown.save(tmp_path, "m")
    monkeypatch.undo()
    memory = PieceMemory.load(tmp_path, "m")  # the old index: its rows untouched by the append
    assert memory.texts == ["A."] and memory.referenced() == {"A."}
    assert_vectors(memory)
    updated(memory, REPORTS, {3: ["C."]}).save(tmp_path, "m")  # appends over the orphaned row
    memory = PieceMemory.load(tmp_path, "m")
    assert memory.texts == ["A.", "C."]
    assert_vectors(memory)


def test_only_pieces_the_lookup_returned_are_staged() -> None:
    lookup, _ = computed(PieceMemory(), {1: ["Seen."]})
    staged = lookup.staged(REPORTS, [1, 2], [["Seen.", "Seen."], ["Never asked."]])
    assert staged.column("text").to_pylist() == ["Seen."]
    assert staged.column("community").to_pylist() == [1]
    # A piece's vector travels once per lookup: later rows naming it carry none.
    again = lookup.staged(POINTS, [3], [["Seen."]])
    assert again.column("text").to_pylist() == ["Seen."] and again.column("vector").to_pylist() == [[]]
    memory = PieceMemory().updated({}, pa.concat_tables([staged, again]).to_batches)
    assert memory.texts == ["Seen."] and len(memory.pieces) == 2
    assert_vectors(memory)


communities = st.integers(0, 6)
texts = st.lists(st.sampled_from([f"Sentence {i}." for i in range(12)]), max_size=4)
updates = st.lists(
    st.tuples(
        st.sampled_from(PIECE_TABLES), st.dictionaries(communities, texts, max_size=4), st.sets(communities)
    ),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(updates, st.sampled_from([0.0, 0.5, 1.0]))
def test_after_any_updates_and_saves_the_memory_names_exactly_the_live_references_pieces(
    steps: list[tuple[str, dict[int, list[str]], set[int]]], compact_share: float
) -> None:
    """Each step recomputes some communities of one table and removes others, then saves and
    reloads (appending, or compacting at ``compact_share``); the memory must name exactly each live
    (table, community)'s last pieces, each row with its own text's vector."""
    memory, live = PieceMemory(), {}
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(row_file, "COMPACT_SHARE", compact_share)
        for table, recomputed, removed in steps:
            lookup, embed = computed(memory, recomputed)
            assert not set(embed.asked) & set(memory.texts)  # a remembered piece is never embedded again
            staged = lookup.staged(table, list(recomputed), list(recomputed.values()))
            memory.updated({table: set(recomputed) | removed}, staged.to_batches).save(Path(folder), "m")
            memory = PieceMemory.load(Path(folder), "m")
            for community in removed:
                live.pop((table, community), None)
            live.update(((table, c), set(found)) for c, found in recomputed.items())
    refs: dict[tuple[str, int], set[str]] = {}
    for table, community, piece in zip(memory.tables, memory.communities, memory.pieces, strict=True):
        refs.setdefault((PIECE_TABLES[table], int(community)), set()).add(memory.texts[piece])
    assert refs == {key: found for key, found in live.items() if found}
    assert memory.referenced() == set().union(*refs.values())
    assert_vectors(memory)


def test_pieces_the_memory_served_travel_without_vectors_and_a_lost_memory_only_loses_references(
    tmp_path: Path,
) -> None:
    updated(PieceMemory(), REPORTS, {1: ["Old."]}).save(tmp_path, "m")
    lookup, embed = computed(PieceMemory.load(tmp_path, "m"), {1: ["Old.", "New."]})
    assert embed.asked == ["New."]
    staged = lookup.staged(REPORTS, [1], [["Old.", "New."]])
    assert staged.column("vector").to_pylist() == [[], vector("New.").tolist()]
    kept = PieceMemory.load(tmp_path, "m").updated({REPORTS: {1}}, staged.to_batches)
    assert kept.referenced() == {"Old.", "New."}
    assert_vectors(kept)
    # The memory became unreadable between the shard and the commit: "Old." has no vector to keep.
    lost = PieceMemory().updated({REPORTS: {1}}, staged.to_batches)
    assert lost.texts == ["New."] and lost.referenced() == {"New."}
    assert_vectors(lost)
